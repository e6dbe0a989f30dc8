// "Did you mean" for names a user typed: the closest known name by edit distance, so
// an unknown experiment key, option or command names what was probably meant.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace specsweep {

// Levenshtein distance (insertions, deletions, substitutions), case-sensitive.
size_t EditDistance(std::string_view a, std::string_view b);

// The known name closest to `typed`, if close enough to be a typo: at most 2 edits and
// at most half of the typed name's characters; "" otherwise.
std::string ClosestName(std::string_view typed, const std::vector<std::string>& known);

// " (did you mean 'NAME'?)" or "".
std::string DidYouMean(std::string_view typed, const std::vector<std::string>& known);

}  // namespace specsweep
