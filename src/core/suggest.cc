#include "core/suggest.h"

#include <algorithm>
#include <cctype>
#include <utility>

namespace weft::internal {

namespace {
char Lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }
}  // namespace

size_t EditDistance(std::string_view a, std::string_view b) {
  // Optimal string alignment over three rolling rows: row i-2, i-1 and i.
  const size_t m = b.size();
  std::vector<size_t> prev2(m + 1), prev(m + 1), cur(m + 1);
  for (size_t j = 0; j <= m; ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= m; ++j) {
      size_t cost = Lower(a[i - 1]) == Lower(b[j - 1]) ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && Lower(a[i - 1]) == Lower(b[j - 2]) && Lower(a[i - 2]) == Lower(b[j - 1]))
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[m];
}

std::vector<std::string> NearestNames(std::string_view word, const std::vector<std::string>& candidates, size_t limit) {
  std::vector<std::pair<size_t, std::string>> near;
  for (const std::string& c : candidates) {
    if (c == word) continue;
    size_t d = EditDistance(word, c);
    if (d <= std::max(word.size(), c.size()) / 3) near.emplace_back(d, c);
  }
  std::sort(near.begin(), near.end());
  near.erase(std::unique(near.begin(), near.end()), near.end());
  std::vector<std::string> out;
  for (size_t k = 0; k < near.size() && k < limit; ++k) out.push_back(std::move(near[k].second));
  return out;
}

std::string DidYouMean(const std::vector<std::string>& names) {
  if (names.empty()) return "";
  std::string s = "did you mean ";
  for (size_t k = 0; k < names.size(); ++k)
    s += (k == 0 ? "" : k + 1 == names.size() ? " or " : ", ") + ("'" + names[k] + "'");
  return s + "?";
}

}  // namespace weft::internal
