// The greedy placements of arena_plan.h. Each order of the buffers is placed one by one: a buffer
// goes into the lowest gap (first fit) or the tightest gap (best fit) left between the already
// placed buffers whose live ranges overlap its own. Orders: largest first, longest-lived first,
// largest size x lifetime first, heaviest conflicts first, earliest first. Eight to ten plans for
// a model of hundreds of tensors cost milliseconds.
#include "aot/arena_plan.h"

#include <algorithm>
#include <functional>
#include <numeric>

namespace weft::internal {

namespace {

uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

bool Overlap(const ArenaBuffer& a, const ArenaBuffer& b) { return a.first <= b.last && b.first <= a.last; }

// Places buffers in `order`; returns the arena size.
uint64_t Place(std::vector<ArenaBuffer>& bufs, const std::vector<size_t>& order, uint64_t align, bool best_fit) {
  std::vector<size_t> placed;
  uint64_t arena = 0;
  std::vector<std::pair<uint64_t, uint64_t>> busy;  // [start, end) of conflicting placed buffers
  for (size_t k : order) {
    ArenaBuffer& b = bufs[k];
    const uint64_t size = AlignUp(b.bytes, align);
    if (size == 0) {
      b.offset = 0;
      continue;
    }
    busy.clear();
    for (size_t p : placed)
      if (Overlap(b, bufs[p])) busy.push_back({bufs[p].offset, bufs[p].offset + AlignUp(bufs[p].bytes, align)});
    std::sort(busy.begin(), busy.end());
    uint64_t best = UINT64_MAX, best_gap = UINT64_MAX, cursor = 0;
    for (auto& [s, e] : busy) {
      if (s > cursor && s - cursor >= size) {
        const uint64_t gap = s - cursor;
        if (!best_fit) {
          best = cursor;
          break;
        }
        if (gap < best_gap) best_gap = gap, best = cursor;
      }
      cursor = std::max(cursor, e);
    }
    if (best == UINT64_MAX) best = cursor;  // after everything that conflicts
    b.offset = best;
    arena = std::max(arena, best + size);
    placed.push_back(k);
  }
  return arena;
}

}  // namespace

ArenaPlan PlanArenaBuffers(std::vector<ArenaBuffer>& bufs, uint64_t align) {
  ArenaPlan plan;
  const size_t n = bufs.size();
  // The lower bound: the most aligned bytes live at one step.
  int last_step = 0;
  for (auto& b : bufs) last_step = std::max(last_step, b.last);
  std::vector<uint64_t> live(static_cast<size_t>(last_step) + 2, 0);
  for (auto& b : bufs)
    for (int s = std::max(0, b.first); s <= b.last; ++s) live[static_cast<size_t>(s)] += AlignUp(b.bytes, align);
  plan.lower_bound_bytes = live.empty() ? 0 : *std::max_element(live.begin(), live.end());
  if (n == 0) return plan;

  auto span = [&](size_t k) { return static_cast<uint64_t>(bufs[k].last - bufs[k].first + 1); };
  std::vector<uint64_t> conflict(n, 0);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      if (i != j && Overlap(bufs[i], bufs[j])) conflict[i] += AlignUp(bufs[j].bytes, align);
  struct Order {
    const char* name;
    std::function<bool(size_t, size_t)> before;
  };
  // Ties break on the index, so a plan is the same on every machine.
  const std::vector<Order> orders = {
      {"largest first", [&](size_t a, size_t b) { return bufs[a].bytes != bufs[b].bytes ? bufs[a].bytes > bufs[b].bytes : a < b; }},
      {"longest-lived first", [&](size_t a, size_t b) {
         return span(a) != span(b) ? span(a) > span(b) : bufs[a].bytes != bufs[b].bytes ? bufs[a].bytes > bufs[b].bytes : a < b;
       }},
      {"size x lifetime", [&](size_t a, size_t b) {
         const uint64_t x = bufs[a].bytes * span(a), y = bufs[b].bytes * span(b);
         return x != y ? x > y : a < b;
       }},
      {"heaviest conflicts first", [&](size_t a, size_t b) {
         return conflict[a] != conflict[b] ? conflict[a] > conflict[b] : bufs[a].bytes != bufs[b].bytes ? bufs[a].bytes > bufs[b].bytes : a < b;
       }},
      {"earliest first", [&](size_t a, size_t b) {
         return bufs[a].first != bufs[b].first ? bufs[a].first < bufs[b].first : bufs[a].bytes != bufs[b].bytes ? bufs[a].bytes > bufs[b].bytes : a < b;
       }},
  };
  std::vector<uint64_t> best_offsets;
  for (const Order& o : orders) {
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), o.before);
    for (bool best_fit : {false, true}) {
      uint64_t bytes = Place(bufs, order, align, best_fit);
      plan.trials.push_back({std::string(o.name) + (best_fit ? ", best fit" : ", first fit"), bytes});
      if (best_offsets.empty() || bytes < plan.arena_bytes) {
        plan.arena_bytes = bytes;
        plan.algorithm = plan.trials.back().algorithm;
        best_offsets.clear();
        for (auto& b : bufs) best_offsets.push_back(b.offset);
      }
    }
  }
  for (size_t k = 0; k < n; ++k) bufs[k].offset = best_offsets[k];
  return plan;
}

bool ArenaPlanValid(const std::vector<ArenaBuffer>& bufs, uint64_t arena) {
  for (size_t i = 0; i < bufs.size(); ++i) {
    if (bufs[i].bytes == 0) continue;
    if (bufs[i].offset + bufs[i].bytes > arena) return false;
    for (size_t j = i + 1; j < bufs.size(); ++j) {
      if (bufs[j].bytes == 0 || !Overlap(bufs[i], bufs[j])) continue;
      if (bufs[i].offset < bufs[j].offset + bufs[j].bytes && bufs[j].offset < bufs[i].offset + bufs[i].bytes) return false;
    }
  }
  return true;
}

}  // namespace weft::internal
