// Static arena planning for generated C modules: every buffer (a tensor or an op's scratch) has
// a size and a live range of steps; buffers whose ranges overlap must not share bytes. Several
// greedy placements are tried and the smallest arena kept.
#ifndef WEFT_SRC_AOT_ARENA_PLAN_H_
#define WEFT_SRC_AOT_ARENA_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

namespace weft::internal {

struct ArenaBuffer {
  uint64_t bytes = 0;
  int first = 0, last = 0;  // live over steps [first, last]
  uint64_t offset = 0;      // the plan's answer
};

struct ArenaTrial {
  std::string algorithm;
  uint64_t bytes = 0;
};

struct ArenaPlan {
  uint64_t arena_bytes = 0;
  uint64_t lower_bound_bytes = 0;  // the largest sum of aligned sizes live at one step
  std::string algorithm;
  std::vector<ArenaTrial> trials;
};

// Places every buffer at an `align`-multiple offset (align a power of two); offsets go into
// `buffers`. Zero-byte buffers get offset 0 and take no room.
ArenaPlan PlanArenaBuffers(std::vector<ArenaBuffer>& buffers, uint64_t align);

// True when no two buffers with overlapping live ranges overlap in bytes and all fit in `arena`.
bool ArenaPlanValid(const std::vector<ArenaBuffer>& buffers, uint64_t arena);

}  // namespace weft::internal

#endif  // WEFT_SRC_AOT_ARENA_PLAN_H_
