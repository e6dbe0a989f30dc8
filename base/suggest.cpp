#include "base/suggest.h"

#include <algorithm>
#include <numeric>

namespace specsweep {

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);  // distances of a[0..i) to b[0..j)
  std::iota(row.begin(), row.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string ClosestName(std::string_view typed, const std::vector<std::string>& known) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto& k : known) {
    const size_t d = EditDistance(typed, k);
    if (d < best_d) best_d = d, best = k;
  }
  return best_d <= 2 && 2 * best_d <= typed.size() ? best : "";
}

std::string DidYouMean(std::string_view typed, const std::vector<std::string>& known) {
  const std::string c = ClosestName(typed, known);
  return c.empty() ? "" : " (did you mean '" + c + "'?)";
}

}  // namespace specsweep
