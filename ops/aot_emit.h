// What the built-in emitters share (EmittableOp, weft aot): the embedded C kernel text split into
// helpers, and C literals that read back as the same values.
#ifndef WEFT_OPS_AOT_EMIT_H_
#define WEFT_OPS_AOT_EMIT_H_

#include <cmath>
#include <cstdio>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "weft/custom_op.h"

namespace weft::ops::aot {

// The helper `name` of `text` (a kernel file with "@helper NAME [needs: A B]" markers): its
// section, after the sections it needs (recursively), each emitted under its own key so that a
// module holds it once.
inline void EmitHelper(const EmitContext* ctx, const char* text, const std::string& name, std::set<std::string>* seen = nullptr) {
  std::set<std::string> local;
  if (!seen) seen = &local;
  if (!seen->insert(name).second) return;
  const std::string all = text;
  const std::string marker = "/* @helper " + name;
  size_t at = all.find(marker);
  while (at != std::string::npos && all[at + marker.size()] != ' ' && all[at + marker.size()] != '*') at = all.find(marker, at + 1);
  if (at == std::string::npos) throw std::runtime_error("no C helper named '" + name + "' in the kernel text");
  size_t line_end = all.find('\n', at);
  std::string header = all.substr(at, line_end - at);
  size_t needs = header.find("needs:");
  if (needs != std::string::npos) {
    std::string rest = header.substr(needs + 6);
    size_t close = rest.find("*/");
    rest = rest.substr(0, close);
    size_t p = 0;
    while (p < rest.size()) {
      while (p < rest.size() && rest[p] == ' ') ++p;
      size_t q = p;
      while (q < rest.size() && rest[q] != ' ') ++q;
      if (q > p) EmitHelper(ctx, text, rest.substr(p, q - p), seen);
      p = q;
    }
  }
  size_t end = all.find("/* @helper ", line_end);
  ctx->Helper(name, all.substr(line_end + 1, end == std::string::npos ? std::string::npos : end - line_end - 1));
}

// A float as a C literal that converts back to the same float (inf and NaN through math.h).
inline std::string FloatLit(float v) {
  if (std::isnan(v)) return "NAN";
  if (std::isinf(v)) return v > 0 ? "HUGE_VALF" : "(-HUGE_VALF)";
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(v));
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s + "f";
}

// An integer as a C literal of at least its width (INT32_MIN and INT64_MIN spelled safely).
inline std::string IntLit(int64_t v) {
  if (v == INT64_MIN) return "INT64_MIN";
  if (v < INT32_MIN || v > INT32_MAX) return "INT64_C(" + std::to_string(v) + ")";
  if (v == INT32_MIN) return "INT32_MIN";
  return std::to_string(v);
}

}  // namespace weft::ops::aot

#endif  // WEFT_OPS_AOT_EMIT_H_
