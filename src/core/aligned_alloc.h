// Allocation of the runtime's large buffers (arenas, scratch).
#ifndef WEFT_CORE_ALIGNED_ALLOC_H_
#define WEFT_CORE_ALIGNED_ALLOC_H_

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>

namespace weft::internal {

// `bytes` (rounded up to 64) aligned to 64 bytes, freed with std::free. A buffer of 2 MiB or more
// is aligned to 2 MiB and asks for transparent huge pages before anything touches it (Linux's
// default "madvise" mode grants them only on request): activations and weights that stream
// through the caches on every run take fewer TLB misses (at most 2 MiB of address space more
// than asked for). Null when out of memory.
inline void* AlignedAllocLarge(size_t bytes) {
  constexpr size_t kHuge = size_t(2) << 20;
  size_t n = bytes < 64 ? 64 : (bytes + 63) / 64 * 64;
  if (n < kHuge) return std::aligned_alloc(64, n);
  if (n > ~size_t(0) - kHuge) return nullptr;
  n = (n + kHuge - 1) / kHuge * kHuge;
  void* p = std::aligned_alloc(kHuge, n);
#ifdef MADV_HUGEPAGE
  if (p) madvise(p, n, MADV_HUGEPAGE);
#endif
  return p;
}

}  // namespace weft::internal

#endif  // WEFT_CORE_ALIGNED_ALLOC_H_
