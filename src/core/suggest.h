// "Did you mean ...?": the names nearest to a misspelt one, for error messages.
//
//   auto near = NearestNames("imput", {"input", "mask"});   // {"input"}
//   if (!near.empty()) msg += "; " + DidYouMean(near);       // "; did you mean 'input'?"
#ifndef WEFT_SRC_CORE_SUGGEST_H_
#define WEFT_SRC_CORE_SUGGEST_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace weft::internal {

// Edits between `a` and `b`, ignoring ASCII case: each insertion, deletion, substitution or swap
// of two adjacent characters counts one.
size_t EditDistance(std::string_view a, std::string_view b);

// Up to `limit` of `candidates` near `word`, nearest first (ties by name): those at most a third
// of the longer name's length in edits away, and those equal to it but for case. Never `word`
// itself.
std::vector<std::string> NearestNames(std::string_view word, const std::vector<std::string>& candidates,
                                      size_t limit = 3);

// "did you mean 'a'?", "did you mean 'a' or 'b'?", "did you mean 'a', 'b' or 'c'?"; empty for no names.
std::string DidYouMean(const std::vector<std::string>& names);

}  // namespace weft::internal

#endif  // WEFT_SRC_CORE_SUGGEST_H_
