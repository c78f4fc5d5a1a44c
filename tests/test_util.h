// Helpers shared by the tests: package paths, sessions, random data, references.
#ifndef WEFT_TESTS_TEST_UTIL_H_
#define WEFT_TESTS_TEST_UTIL_H_

#include <gtest/gtest.h>

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

inline HostTensor RandomFloat(const Shape& shape, uint32_t seed, float lo = -2.f, float hi = 2.f) {
  HostTensor t(DT_FLOAT, shape);
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = d(g);
  return t;
}

inline ::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\"\n  does not contain \"" << part << "\"";
}

}  // namespace weft::test

#endif  // WEFT_TESTS_TEST_UTIL_H_
