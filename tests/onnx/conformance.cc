// Runs the ONNX backend node tests (model.onnx + test_data_set_*/{input,output}_*.pb) through
// Weft and compares with the expected outputs (rtol 1e-3, atol 1e-7, as upstream). The op
// conformance cases (tests/ops/conformance_cases.py) use the same layout, plus must-fail cases.
//
//   weft_onnx_conformance [--data DIR] [--expected FILE] [--write-expected FILE] [--filter SUBSTR]
//                         [--strict] [-v]
//
// --strict: every test must pass; an unsupported op or type is a failure, not a skip.
//
// Each test runs in a forked child with a time limit, so a crash or hang is a failure of that
// test, not of the run. A test is "skipped" when the model uses an op or type Weft does not
// support, "failed" when it is supported but errors or mismatches. With --expected, every test
// listed there must pass (exit 1 otherwise).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include "weft/onnx.h"
#include "weft/weft.h"

namespace fs = std::filesystem;
using namespace weft;  // NOLINT

namespace {

double Get(const HostTensor& t, int64_t i) {
  switch (t.dtype()) {
    case DT_FLOAT: return t.data_as<float>()[i];
    case DT_DOUBLE: return t.data_as<double>()[i];
    case DT_FLOAT16: return static_cast<float>(t.data_as<float16>()[i]);
    case DT_BF16: return static_cast<float>(t.data_as<bfloat16>()[i]);
    case DT_INT8: return t.data_as<int8_t>()[i];
    case DT_UINT8: return t.data_as<uint8_t>()[i];
    case DT_INT16: return t.data_as<int16_t>()[i];
    case DT_UINT16: return t.data_as<uint16_t>()[i];
    case DT_INT32: return t.data_as<int32_t>()[i];
    case DT_UINT32: return t.data_as<uint32_t>()[i];
    case DT_INT64: return static_cast<double>(t.data_as<int64_t>()[i]);
    case DT_UINT64: return static_cast<double>(t.data_as<uint64_t>()[i]);
    case DT_BOOL: return t.data_as<uint8_t>()[i];
    default: return NAN;
  }
}

std::string Compare(const HostTensor& got, const HostTensor& want, const std::string& name) {
  if (got.dtype() != want.dtype())
    return name + ": dtype " + DataTypeName(got.dtype()) + ", expected " + DataTypeName(want.dtype());
  if (IsSequenceType(got.dtype()) || IsOptionalType(got.dtype())) {  // item by item
    auto g = ValueItems(got), w = ValueItems(want);
    if (!g.ok()) return name + ": " + g.status().message();
    if (!w.ok()) return name + ": expected value: " + w.status().message();
    if (g.value().size() != w.value().size())
      return name + ": " + std::to_string(g.value().size()) + " item(s), expected " + std::to_string(w.value().size());
    for (size_t k = 0; k < g.value().size(); ++k) {
      std::string diff = Compare(g.value()[k], w.value()[k], name + "[" + std::to_string(k) + "]");
      if (!diff.empty()) return diff;
    }
    return "";
  }
  if (got.shape() != want.shape()) return name + ": shape " + got.shape().ToString() + ", expected " + want.shape().ToString();
  bool exact = got.dtype() != DT_FLOAT && got.dtype() != DT_DOUBLE && got.dtype() != DT_FLOAT16 && got.dtype() != DT_BF16;
  if (exact && got.dtype() == DT_INT64) {
    for (int64_t i = 0; i < got.numel(); ++i)
      if (got.data_as<int64_t>()[i] != want.data_as<int64_t>()[i])
        return name + ": element " + std::to_string(i) + " is " + std::to_string(got.data_as<int64_t>()[i]) + ", expected " +
               std::to_string(want.data_as<int64_t>()[i]);
    return "";
  }
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = Get(got, i), w = Get(want, i);
    if (std::isnan(w) && std::isnan(g)) continue;
    if (std::isinf(w) && g == w) continue;
    if (exact ? g != w : !(std::fabs(g - w) <= 1e-7 + 1e-3 * std::fabs(w)))
      return name + ": element " + std::to_string(i) + " is " + std::to_string(g) + ", expected " + std::to_string(w);
  }
  return "";
}

// The suite's bfloat16 data predates the type in TensorProto: stored as uint16 bits. Read as the
// model declares it.
HostTensor AsDeclared(HostTensor t, DataType declared) {
  if (declared != DT_BF16 || t.dtype() != DT_UINT16) return t;
  return HostTensor::FromBytes(DT_BF16, t.shape(), t.data(), t.bytes()).value();
}

// A must-fail case (tests/ops/conformance_cases.py writes expected_error.txt): every step may
// refuse it, but one must, with a message containing the expected text.
std::string RunMustFail(const fs::path& dir, const std::string& want) {
  auto check = [&](const Status& s) {
    return s.message().find(want) != std::string::npos ? std::string("pass")
                                                       : "fail: the error does not mention \"" + want + "\": " + s.message();
  };
  std::vector<HostTensor> inputs;
  for (int k = 0;; ++k) {
    fs::path p = dir / "test_data_set_0" / ("input_" + std::to_string(k) + ".pb");
    if (!fs::exists(p)) break;
    auto t = ReadOnnxTensor(p.string());
    if (!t.ok()) return "fail: " + t.status().message();
    inputs.push_back(std::move(t).value());
  }
  SessionOptions so;
  so.use_env_path = false;
  auto session = Session::Create(so);
  if (!session.ok()) return "fail: " + session.status().message();
  auto graph = ImportOnnx((dir / "model.onnx").string());
  if (!graph.ok()) return check(graph.status());
  auto model = session.value()->Compile(graph.value());
  if (!model.ok()) return check(model.status());
  auto out = model.value()->Run(inputs);
  if (!out.ok()) return check(out.status());
  return "fail: accepted (expected an error mentioning \"" + want + "\")";
}

// "pass", "skip: why" or "fail: why".
std::string RunTest(const fs::path& dir) {
  if (fs::exists(dir / "expected_error.txt")) {
    std::ifstream f(dir / "expected_error.txt");
    std::string want;
    std::getline(f, want);
    return RunMustFail(dir, want);
  }
  std::vector<fs::path> sets;
  for (auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return "skip: no test data";
  SessionOptions so;
  so.use_env_path = false;
  auto session = Session::Create(so);
  if (!session.ok()) return "fail: " + session.status().message();
  for (auto& set : sets) {
    std::vector<HostTensor> inputs, expected;
    // Import once to learn the input names and types, then again with the test's concrete shapes.
    auto probe = ImportOnnx((dir / "model.onnx").string());
    if (!probe.ok()) return "skip: " + probe.status().message();
    for (int k = 0;; ++k) {
      fs::path p = set / ("input_" + std::to_string(k) + ".pb");
      if (!fs::exists(p)) break;
      DataType type = static_cast<size_t>(k) < probe.value().inputs().size() ? probe.value().inputs()[k].dtype : DT_FLOAT;
      auto t = ReadOnnxValue(p.string(), type);
      if (!t.ok()) return "skip: " + t.status().message();
      inputs.push_back(AsDeclared(std::move(t).value(), type));
    }
    OnnxImportOptions opts;
    if (probe.value().inputs().size() != inputs.size()) return "skip: model inputs and test data differ in count";
    for (size_t k = 0; k < inputs.size(); ++k) opts.input_shapes[probe.value().inputs()[k].name] = inputs[k].shape();
    auto graph = ImportOnnx((dir / "model.onnx").string(), opts);
    if (!graph.ok()) return "skip: " + graph.status().message();
    auto model = session.value()->Compile(graph.value());
    if (!model.ok())
      return (model.status().code() == Status::Code::kNotFound ? "skip: " : "fail: ") + model.status().message();
    for (int k = 0;; ++k) {
      fs::path p = set / ("output_" + std::to_string(k) + ".pb");
      if (!fs::exists(p)) break;
      const auto& outs = model.value()->outputs();
      DataType type = static_cast<size_t>(k) < outs.size() ? outs[k].dtype : DT_FLOAT;
      auto t = ReadOnnxValue(p.string(), type);
      if (!t.ok()) return "skip: " + t.status().message();
      expected.push_back(AsDeclared(std::move(t).value(), type));
    }
    auto out = model.value()->Run(inputs);
    if (!out.ok()) return "fail: " + out.status().message();
    if (out.value().size() != expected.size()) return "fail: output count differs";
    for (size_t k = 0; k < expected.size(); ++k) {
      std::string diff = Compare(out.value()[k], expected[k], graph.value().outputs()[k]);
      if (!diff.empty()) return "fail: " + set.filename().string() + ": " + diff;
    }
  }
  return "pass";
}

// Runs one test in a child process with a time limit.
std::string RunIsolated(const fs::path& dir, int seconds) {
  int fds[2];
  if (pipe(fds) != 0) return "fail: pipe";
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    alarm(static_cast<unsigned>(seconds));
    std::string r = RunTest(dir);
    for (char& c : r)
      if (c == '\n') c = ' ';
    ssize_t w = write(fds[1], r.data(), r.size());
    (void)w;
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string r;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) r.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  if (WIFSIGNALED(st))
    return WTERMSIG(st) == SIGALRM ? "fail: timed out after " + std::to_string(seconds) + " s"
                                   : "fail: crashed with signal " + std::to_string(WTERMSIG(st));
  return r.empty() ? "fail: no result" : r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data = "/usr/share/libonnx-testdata/data/node", expected_file, write_file, filter;
  bool verbose = false, strict = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "weft_onnx_conformance: " << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--data") data = next();
    else if (a == "--expected") expected_file = next();
    else if (a == "--write-expected") write_file = next();
    else if (a == "--filter") filter = next();
    else if (a == "-v") verbose = true;
    else if (a == "--strict") strict = true;
    else {
      std::cerr << "usage: weft_onnx_conformance [--data DIR] [--expected FILE] [--write-expected FILE] [--filter SUBSTR] [--strict] [-v]\n";
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  if (!fs::is_directory(data)) {
    std::cerr << "weft_onnx_conformance: no test data at " << data << " (apt-get install libonnx-testdata)\n";
    return 1;
  }
  std::vector<fs::path> tests;
  for (auto& e : fs::directory_iterator(data))
    if (e.is_directory() && fs::exists(e.path() / "model.onnx") &&
        (filter.empty() || e.path().filename().string().find(filter) != std::string::npos))
      tests.push_back(e.path());
  std::sort(tests.begin(), tests.end());
  std::set<std::string> want;
  if (!expected_file.empty()) {
    std::ifstream f(expected_file);
    if (!f) {
      std::cerr << "weft_onnx_conformance: cannot read " << expected_file << "\n";
      return 1;
    }
    for (std::string line; std::getline(f, line);)
      if (!line.empty() && line[0] != '#') want.insert(line);
  }
  int passed = 0, failed = 0, skipped = 0;
  std::vector<std::string> pass_names, regressions, fresh;
  for (auto& t : tests) {
    std::string name = t.filename().string();
    std::string r = RunIsolated(t, 60);
    if (r == "pass") {
      ++passed;
      pass_names.push_back(name);
      if (!want.empty() && !want.count(name)) fresh.push_back(name);
    } else if (r.rfind("skip", 0) == 0 && !strict) {
      ++skipped;
    } else {
      ++failed;
    }
    if (r != "pass" && want.count(name)) regressions.push_back(name + ": " + r);
    if (r != "pass" && strict) regressions.push_back(name + ": " + r);
    if (verbose || (r != "pass" && (strict || r.rfind("skip", 0) != 0))) std::cout << name << ": " << r << "\n";
  }
  std::cout << "ONNX node tests: " << passed << " passed, " << failed << " failed, " << skipped << " skipped (of "
            << tests.size() << ")\n";
  if (!write_file.empty()) {
    std::ofstream f(write_file);
    f << "# ONNX backend node tests expected to pass (weft_onnx_conformance --write-expected)\n";
    for (auto& n : pass_names) f << n << "\n";
  }
  if (!fresh.empty()) std::cout << fresh.size() << " test(s) pass that the expected list does not name yet\n";
  if (!regressions.empty()) {
    std::cout << regressions.size() << (strict ? " failure(s):\n" : " regression(s) against " + expected_file + ":\n");
    for (auto& r : regressions) std::cout << "  " << r << "\n";
    return 1;
  }
  for (auto& w : want)
    if (std::find_if(tests.begin(), tests.end(), [&](const fs::path& p) { return p.filename() == w; }) == tests.end() && filter.empty()) {
      std::cout << "expected test " << w << " is missing from " << data << "\n";
      return 1;
    }
  return 0;
}
