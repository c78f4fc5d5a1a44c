// TfIdfVectorizer: counts the n-grams of a pool in each row of token ids and weighs the counts
// (the text-feature front end of classical NLP models exported to ONNX).
//
// X is [C] or [B, C] of int32/int64 token ids; Y is float [S] or [B, S] with S = max(ngram_indexes)
// + 1. The pool (pool_int64s) lists n-grams level by level: ngram_counts[k] is where the n-grams of
// length k + 1 start; the i-th n-gram of the whole pool is counted into column ngram_indexes[i].
// Only lengths in [min_gram_length, max_gram_length] are counted. An n-gram's items may lie
// `skip` apart for skip in [0, max_skip_count]; unigrams count once per position. weights[i] is
// the weight of the pool's i-th n-gram (as the operator's definition and ONNX Runtime read it).
// Per row, each n-gram i found c > 0 times adds to its column: TF c, TFIDF c * weights[i]; IDF
// sets the column to weights[i] (where several n-grams share a column, the one found last while
// scanning the row, as ONNX Runtime does). Without weights TFIDF is TF and IDF gives 1. String pools need string tensors, which Weft does
// not hold: an error says so.
#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "op_util.h"

namespace weft::ops {
namespace {

constexpr int64_t kMaxColumns = int64_t{1} << 31;

// The pool as a trie: node 0 is the root; a node's id is its n-gram's position in the pool + 1
// (0: no pool n-gram ends here).
struct Trie {
  struct Node {
    int64_t id = 0;
    std::unordered_map<int64_t, int32_t> next;
  };
  std::vector<Node> nodes{1};
  int32_t Child(int32_t at, int64_t token) {
    auto it = nodes[static_cast<size_t>(at)].next.find(token);
    if (it != nodes[static_cast<size_t>(at)].next.end()) return it->second;
    const int32_t n = static_cast<int32_t>(nodes.size());
    nodes[static_cast<size_t>(at)].next.emplace(token, n);
    nodes.emplace_back();
    return n;
  }
};

struct Config {
  int64_t min_len, max_len, skips, columns;
  int mode;  // 0 TF, 1 IDF, 2 TFIDF
  std::vector<int64_t> indexes;
  std::vector<float> weights;
  Trie trie;
};

bool Read(const KernelContextBase* ctx, Config* c) {
  const auto* a = ctx->GetAttrs();
  c->min_len = *a->GetInt("min_gram_length");
  c->max_len = *a->GetInt("max_gram_length");
  c->skips = *a->GetInt("max_skip_count");
  const std::string mode = a->GetStr("mode");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") return Fail(ctx, "mode must be TF, IDF or TFIDF, not '" + mode + "'"), false;
  c->mode = mode == "TF" ? 0 : mode == "IDF" ? 1 : 2;
  if (c->min_len < 1 || c->max_len < c->min_len)
    return Fail(ctx, "needs 1 <= min_gram_length <= max_gram_length, not " + std::to_string(c->min_len) + " and " + std::to_string(c->max_len)), false;
  if (c->skips < 0) return Fail(ctx, "max_skip_count must not be negative, not " + std::to_string(c->skips)), false;
  ListView<const char*> strings = a->GetListString("pool_strings");
  if (strings.size()) return Fail(ctx, "pool_strings needs string tensors, which Weft does not hold; give the pool as token ids (pool_int64s)"), false;
  ListView<int64_t> pool = a->GetListInt("pool_int64s"), counts = a->GetListInt("ngram_counts"), idx = a->GetListInt("ngram_indexes");
  ListView<float> w = a->GetListFloat("weights");
  c->indexes.assign(idx.begin(), idx.end());
  c->weights.assign(w.begin(), w.end());
  if (c->indexes.empty()) return Fail(ctx, "ngram_indexes is empty: the output would have no column"), false;
  if (counts.size() == 0 || counts[0] != 0)
    return Fail(ctx, "ngram_counts must start at 0 (where the pool's 1-grams begin), not " +
                         (counts.size() ? std::to_string(counts[0]) : std::string("be empty"))), false;
  c->columns = 0;
  for (size_t k = 0; k < c->indexes.size(); ++k) {
    if (c->indexes[k] < 0 || c->indexes[k] >= kMaxColumns)
      return Fail(ctx, "ngram_indexes[" + std::to_string(k) + "] = " + std::to_string(c->indexes[k]) + " is not a column in [0, 2^31)"), false;
    c->columns = std::max(c->columns, c->indexes[k] + 1);
  }
  if (!c->weights.empty() && c->weights.size() != c->indexes.size())
    return Fail(ctx, "weights has " + std::to_string(c->weights.size()) + " entries; it needs one per n-gram, as ngram_indexes (" +
                         std::to_string(c->indexes.size()) + ")"), false;
  // The pool, level by level.
  const int64_t total = static_cast<int64_t>(pool.size());
  int64_t ngram = 0;  // position of the next n-gram in the pool
  for (size_t level = 0; level < counts.size(); ++level) {
    const int64_t begin = counts[level], end = level + 1 < counts.size() ? counts[level + 1] : total, len = static_cast<int64_t>(level) + 1;
    if (begin < 0 || end < begin || end > total)
      return Fail(ctx, "ngram_counts must rise from 0 within the pool's " + std::to_string(total) + " items; entry " + std::to_string(level) +
                           " gives [" + std::to_string(begin) + ", " + std::to_string(end) + ")"), false;
    if ((end - begin) % len != 0)
      return Fail(ctx, "the pool's " + std::to_string(len) + "-grams take " + std::to_string(end - begin) + " items, not a multiple of " +
                           std::to_string(len)), false;
    for (int64_t at = begin; at < end; at += len, ++ngram) {
      if (ngram >= static_cast<int64_t>(c->indexes.size()))
        return Fail(ctx, "the pool holds more n-grams than ngram_indexes has entries (" + std::to_string(c->indexes.size()) + ")"), false;
      if (len < c->min_len || len > c->max_len) continue;
      int32_t node = 0;
      for (int64_t k = 0; k < len; ++k) node = c->trie.Child(node, pool[static_cast<size_t>(at + k)]);
      if (c->trie.nodes[static_cast<size_t>(node)].id)
        return Fail(ctx, "the pool lists the " + std::to_string(len) + "-gram at item " + std::to_string(at) + " twice (n-grams " +
                             std::to_string(c->trie.nodes[static_cast<size_t>(node)].id - 1) + " and " + std::to_string(ngram) + ")"), false;
      c->trie.nodes[static_cast<size_t>(node)].id = ngram + 1;
    }
  }
  return true;
}

class TfIdfVectorizer : public EagerExecuteOp, public ShapeInferOp, public CompilableOp, public RebuildOnLoad {
 public:
  // The pool's trie, built once per node (a large vocabulary takes a while to index).
  graphStatus Compile(OpCompileContext* ctx) override {
    auto c = std::make_shared<Config>();
    if (!Read(ctx, c.get())) return GRAPH_FAILED;
    config_ = std::move(c);
    return GRAPH_SUCCESS;
  }
  static bool OutShape(const KernelContextBase* ctx, const Shape& x, int64_t columns, Shape* out) {
    if (x.GetDimNum() == 1) *out = Shape({columns});
    else if (x.GetDimNum() == 2) *out = Shape({x.GetDim(0), columns});
    else return Fail(ctx, "X must be [C] or [B, C], not " + x.ToString()), false;
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    Config c;
    if (!Read(ctx, &c)) return GRAPH_FAILED;
    Shape out;
    if (!OutShape(ctx, *ctx->GetInputShape(0), c.columns, &out)) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = out;
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return ctx->SetOutputDataType(0, DT_FLOAT); }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    std::shared_ptr<const Config> cp = config_;
    if (!cp) {
      auto fresh = std::make_shared<Config>();
      if (!Read(ctx, fresh.get())) return GRAPH_FAILED;
      cp = std::move(fresh);
    }
    const Config& c = *cp;
    const Tensor* x = ctx->GetInputTensor(0);
    Shape out;
    if (!OutShape(ctx, x->GetShape(), c.columns, &out)) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, out, DT_FLOAT);
    if (!y) return GRAPH_FAILED;
    const int64_t rows = x->GetShape().GetDimNum() == 2 ? x->GetShape().GetDim(0) : 1;
    const int64_t len = x->GetShape().GetDim(x->GetShape().GetDimNum() - 1);
    float* py = y->GetData<float>();
    std::fill(py, py + y->GetShapeSize(), 0.f);
    std::vector<int64_t> tokens(static_cast<size_t>(len)), count(c.indexes.size());  // count per pool n-gram
    std::vector<int64_t> last(static_cast<size_t>(c.columns));                          // IDF: the n-gram found last per column
    const auto& nodes = c.trie.nodes;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < len; ++i)
        tokens[static_cast<size_t>(i)] = x->GetDataType() == DT_INT32 ? x->GetData<int32_t>()[r * len + i] : x->GetData<int64_t>()[r * len + i];
      std::fill(count.begin(), count.end(), 0);
      std::fill(last.begin(), last.end(), -1);
      // Items `gap` apart; unigrams (the same for every gap) only with the first. A gap beyond
      // the row finds nothing.
      const int64_t gaps = std::min(c.skips, std::max<int64_t>(len, 1)) + 1;
      for (int64_t gap = 1; gap <= gaps; ++gap) {
        const int64_t shortest = gap == 1 ? c.min_len : std::max<int64_t>(c.min_len, 2);
        if (shortest > c.max_len || shortest > len) break;  // no n-gram that long fits in the row
        for (int64_t start = 0; start + gap * (shortest - 1) < len; ++start) {
          int32_t node = 0;
          for (int64_t size = 1, at = start; size <= c.max_len && at < len; ++size, at += gap) {
            auto it = nodes[static_cast<size_t>(node)].next.find(tokens[static_cast<size_t>(at)]);
            if (it == nodes[static_cast<size_t>(node)].next.end()) break;
            node = it->second;
            const int64_t id = nodes[static_cast<size_t>(node)].id;
            if (size >= shortest && id) {
              ++count[static_cast<size_t>(id - 1)];
              last[static_cast<size_t>(c.indexes[static_cast<size_t>(id - 1)])] = id - 1;
            }
          }
        }
      }
      float* row = py + r * c.columns;
      if (c.mode == 1) {
        for (int64_t k = 0; k < c.columns; ++k)
          if (last[static_cast<size_t>(k)] >= 0) row[k] = c.weights.empty() ? 1.f : c.weights[static_cast<size_t>(last[static_cast<size_t>(k)])];
        continue;
      }
      for (size_t g = 0; g < count.size(); ++g) {
        const int64_t n = count[g];
        if (n == 0) continue;
        const float w = c.mode == 0 || c.weights.empty() ? 1.f : c.weights[g];
        row[c.indexes[g]] += static_cast<float>(n) * w;
      }
    }
    return GRAPH_SUCCESS;
  }

 private:
  std::shared_ptr<const Config> config_;  // from Compile; Execute builds its own without it
};

}  // namespace

void WeftRegister_tfidf(std::vector<OpEntry>& out) {
  out.push_back({OpDefBuilder("TfIdfVectorizer").INPUT(X, TensorType({DT_INT32, DT_INT64})).OUTPUT(Y, TensorType({DT_FLOAT}))
                     .REQUIRED_ATTR(max_gram_length, Int).REQUIRED_ATTR(max_skip_count, Int).REQUIRED_ATTR(min_gram_length, Int)
                     .REQUIRED_ATTR(mode, String).REQUIRED_ATTR(ngram_counts, ListInt).REQUIRED_ATTR(ngram_indexes, ListInt)
                     .ATTR(pool_int64s, ListInt, {}).ATTR(pool_strings, ListString, {}).ATTR(weights, ListFloat, {}).Build(),
                 MakeOpImpl<TfIdfVectorizer>("TfIdfVectorizer")});
}

}  // namespace weft::ops
