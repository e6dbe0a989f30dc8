// SHA-256 (FIPS 180-4) of byte strings and files: model file identity in results.
#pragma once
#include <string>
#include <string_view>

namespace specsweep {

// Lowercase hex digest.
std::string Sha256Hex(std::string_view bytes);
// Of a whole file; Error naming the path if unreadable.
std::string Sha256File(const std::string& path);

}  // namespace specsweep
