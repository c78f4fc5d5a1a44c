// The static memory plan: arena offsets for every intermediate from its live range.
#include <algorithm>

#include "compile/compiler.h"

namespace weft::internal {

namespace {

// Values placed so far, indexed by their lifetimes (steps [producer, last_use]): a segment tree
// over steps whose nodes list the values covering them, so finding the placed values whose
// lifetime overlaps a new one costs about the length of the new lifetime, not the number of
// values placed (a chain of 100,000 nodes plans in linear time).
class LifetimeIndex {
 public:
  LifetimeIndex(int num_steps, size_t num_values) : seen_(num_values, -1) {
    while (size_ < num_steps + 1) size_ *= 2;
    nodes_.resize(2 * static_cast<size_t>(size_));
  }
  void Insert(int id, int first, int last) { Insert(1, 0, size_ - 1, first, last, id); }
  // Calls f(id) once for each inserted value whose lifetime overlaps [first, last].
  template <typename F>
  void ForOverlapping(int first, int last, F&& f) {
    ++query_;
    Visit(1, 0, size_ - 1, first, last, f);
  }

 private:
  void Insert(size_t node, int lo, int hi, int first, int last, int id) {
    if (last < lo || hi < first) return;
    if (first <= lo && hi <= last) {
      nodes_[node].push_back(id);
      return;
    }
    int mid = lo + (hi - lo) / 2;
    Insert(2 * node, lo, mid, first, last, id);
    Insert(2 * node + 1, mid + 1, hi, first, last, id);
  }
  template <typename F>
  void Visit(size_t node, int lo, int hi, int first, int last, F& f) {
    if (last < lo || hi < first) return;
    for (int id : nodes_[node])
      if (seen_[id] != query_) {
        seen_[id] = query_;
        f(id);
      }
    if (lo == hi) return;
    int mid = lo + (hi - lo) / 2;
    Visit(2 * node, lo, mid, first, last, f);
    Visit(2 * node + 1, mid + 1, hi, first, last, f);
  }

  int size_ = 1;
  std::vector<std::vector<int>> nodes_;
  std::vector<int> seen_;
  int query_ = 0;
};

}  // namespace

MemoryPlan PlanMemory(std::vector<Value>& values, int num_steps, size_t red_zone) {
  MemoryPlan plan;
  std::vector<int> order, views;
  for (size_t k = 0; k < values.size(); ++k) {
    Value& v = values[k];
    if (v.kind != ValueKind::kIntermediate || v.producer < 0) continue;  // fused away or never produced
    if (v.is_output || v.last_use < v.producer) v.last_use = v.is_output ? num_steps : v.producer;
    (v.alias_of >= 0 ? views : order).push_back(static_cast<int>(k));
  }
  // A view lives in the bytes of the value it aliases (chains end at a planned value): that
  // value's lifetime covers the view's.
  auto root_of = [&](int k) {
    while (values[k].alias_of >= 0) k = values[k].alias_of;
    return k;
  };
  for (int k : views) {
    Value& r = values[root_of(k)];
    r.last_use = std::max(r.last_use, values[k].last_use);
  }
  auto padded = [red_zone](size_t b) { return (b + red_zone + 63) / 64 * 64; };
  // Lower bound: the most bytes live at any one step (a sweep over lifetime starts and ends).
  std::vector<int64_t> delta(static_cast<size_t>(num_steps) + 2, 0);
  for (int k : order) {
    delta[static_cast<size_t>(values[k].producer)] += static_cast<int64_t>(values[k].bytes);
    delta[static_cast<size_t>(std::min(values[k].last_use, num_steps)) + 1] -= static_cast<int64_t>(values[k].bytes);
  }
  int64_t live = 0;
  for (int t = 0; t <= num_steps; ++t) {
    live += delta[static_cast<size_t>(t)];
    plan.lower_bound_bytes = std::max(plan.lower_bound_bytes, static_cast<size_t>(live));
  }
  // Greedy best fit, largest first: each tensor takes the lowest gap that no overlapping one uses.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return values[a].bytes > values[b].bytes; });
  LifetimeIndex placed(num_steps, values.size());
  std::vector<std::pair<size_t, size_t>> busy;
  for (int k : order) {
    Value& v = values[k];
    size_t need = padded(v.bytes);
    busy.clear();
    placed.ForOverlapping(v.producer, v.last_use, [&](int p) {
      const Value& o = values[p];
      busy.emplace_back(o.offset, o.offset + padded(o.bytes));
    });
    std::sort(busy.begin(), busy.end());
    size_t best = SIZE_MAX, best_gap = SIZE_MAX, cursor = 0;
    for (auto& [b, e] : busy) {
      if (b >= cursor && b - cursor >= need && b - cursor < best_gap) {
        best = cursor;
        best_gap = b - cursor;
      }
      cursor = std::max(cursor, e);
    }
    v.offset = best != SIZE_MAX ? best : cursor;
    plan.arena_bytes = std::max(plan.arena_bytes, v.offset + need);
    placed.Insert(k, v.producer, v.last_use);
  }
  for (int k : views) values[k].offset = values[root_of(k)].offset;
  return plan;
}

}  // namespace weft::internal
