// Helpers shared by the tests: package paths, sessions, random data, references.
#ifndef WEFT_TESTS_TEST_UTIL_H_
#define WEFT_TESTS_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace weft::test {

inline std::string Pkg(const std::string& name) { return std::string(WEFT_TEST_PKG_DIR) + "/" + name; }
inline std::string PkgLib(const std::string& name) {
  return Pkg(name) + "/" WEFT_TEST_LIBSUB "/lib" + name + ".so";
}

// A session with built-ins and the given packages, ignoring the environment.
inline std::unique_ptr<Session> MakeSession(std::vector<std::string> packages = {}, bool allow_override = false,
                                            int threads = 1) {
  SessionOptions o;
  o.use_env_path = false;
  o.allow_override = allow_override;
  o.intra_op_threads = threads;
  for (auto& p : packages) o.package_paths.push_back(Pkg(p));
  auto s = Session::Create(o);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? std::move(s).value() : nullptr;
}

// Whether this machine's float convolutions take the channel-blocked layout: the built-in Conv
// declares it fast only where oneDNN has a fast nChw16c kernel (AVX-512); elsewhere the layout
// pass keeps tensors plain. Tests of layout decisions expect what the machine supports.
Format BlockedOrPlain();

inline HostTensor RandomFloat(const Shape& shape, uint32_t seed, float lo = -2.f, float hi = 2.f) {
  HostTensor t(DT_FLOAT, shape);
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = d(g);
  return t;
}

inline Format BlockedOrPlain() {
  static const Format f = [] {
    auto s = MakeSession();
    if (!s) return FORMAT_ND;
    Graph g("probe");
    std::map<std::string, AttrValue> pads{{"pads", AttrValue::ListInt({1, 1, 1, 1})}};
    g.AddInput("x", DT_FLOAT, {1, 16, 8, 8}).AddConstant("w", RandomFloat({16, 16, 3, 3}, 1)).AddConstant("v", RandomFloat({16, 16, 3, 3}, 2));
    g.AddNode("Conv", "c1", {"x", "w"}, {"a"}, pads).AddNode("Conv", "c2", {"a", "v"}, {"y"}, pads).AddOutput("y");
    auto m = s->Compile(g);
    return m.ok() && m.value()->DescribeSteps()[0].outputs[0].format == FORMAT_NC1HWC0 ? FORMAT_NC1HWC0 : FORMAT_ND;
  }();
  return f;
}

// A shell command's exit status (-1 when it did not exit) and its output, stderr included.
struct Sh {
  int code;
  std::string out;
};
inline Sh Shell(const std::string& cmd) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  while (size_t k = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), k);
  int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

inline ::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\"\n  does not contain \"" << part << "\"";
}

}  // namespace weft::test

#endif  // WEFT_TESTS_TEST_UTIL_H_
