// The random stream of the sampling operators (RandomUniform, RandomNormal, their -Like forms,
// Bernoulli, Multinomial, training-mode Dropout).
//
// Each node draws from its own stream, kept per run context in the node's argument block
// (GetHostArgs, which also keeps the node from being constant-folded): draw i of a stream with
// key k is SplitMix64 at position i from k, so a tensor's draws can be made in parallel and a run
// continues where the last run of that context stopped. The key comes from the node's `seed`
// attribute when it has one (the same seed gives the same values in every new run context, and
// again after reset_state), otherwise from the system's entropy source when the context first
// runs the node.
#ifndef WEFT_OPS_RANDOM_H_
#define WEFT_OPS_RANDOM_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "op_util.h"

namespace weft::ops::rnd {

struct Stream {
  uint64_t started;  // 0 in a new run context (the block starts zeroed)
  uint64_t key;
  uint64_t next;  // index of the next draw
};

// Draw `i` of the stream with key `key`.
inline uint64_t Draw(uint64_t key, uint64_t i) {
  uint64_t z = key + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
// A draw as a double in [0, 1) (53 random bits).
inline double Unit(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }
// A standard normal value from draws i and i + 1 (Box-Muller).
inline double Normal(uint64_t key, uint64_t i) {
  const double u1 = 1.0 - Unit(Draw(key, i)), u2 = Unit(Draw(key, i + 1));  // u1 in (0, 1]
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586476925 * u2);
}

// "No seed": the default of a float `seed` attribute (RandomUniform and the other samplers) and of
// an integer one (Dropout).
inline float NoSeed() { return std::numeric_limits<float>::quiet_NaN(); }
constexpr int64_t kNoIntSeed = INT64_MIN;

// The key of a stream with the node's seed, or from the system's entropy source without one.
inline uint64_t KeyOf(const KernelContextBase* ctx, bool int_seed) {
  const auto* attrs = ctx->GetAttrs();
  const float* fseed = int_seed ? nullptr : attrs->GetFloat("seed");
  const int64_t* iseed = int_seed ? attrs->GetInt("seed") : nullptr;
  if (fseed && !std::isnan(*fseed)) {
    uint32_t bits;
    std::memcpy(&bits, fseed, sizeof bits);
    return Draw(0x5EEDull << 32 | bits, 0);
  }
  if (iseed && *iseed != kNoIntSeed) return Draw(0x5EED0000ull << 32 ^ static_cast<uint64_t>(*iseed), 1);
  std::random_device dev;
  return (uint64_t{dev()} << 32) ^ dev();
}

// The node's stream in this run context, started on first use; `draws` are reserved from it and
// the index of the first is returned in *first. nullptr (with the error set) outside a compiled
// model's run. `int_seed`: the node's seed attribute is an integer (Dropout), not a float.
inline const Stream* Take(EagerOpExecutionContext* ctx, uint64_t draws, uint64_t* first, bool int_seed = false) {
  auto* s = ctx->GetHostArgs<Stream>();
  if (!s) return nullptr;
  if (!s->started) {
    s->key = KeyOf(ctx, int_seed);
    s->next = 0;
    s->started = 1;
  }
  *first = s->next;
  s->next += draws;
  return s;
}

}  // namespace weft::ops::rnd

#endif  // WEFT_OPS_RANDOM_H_
