// Text files a user names as input (prompt and question files, passages, a REST corpus,
// an acceptance trace): a regular file of a bounded size, checked before a byte is read,
// so a device (/dev/zero), a FIFO or a runaway file is a one-line error, not a hang or
// an exhausted memory. The limit is stated in docs/robustness.md.
#pragma once
#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>

namespace specsweep {

// 256 MiB: far above any prompt set, question set or corpus the harness tokenizes, and
// small enough that reading one never exhausts a worker's memory.
inline constexpr uint64_t kMaxTextInputBytes = uint64_t{256} << 20;

// Throws Error "<path>: the <what> is not a regular file" (or too large, or missing) unless `path` is an existing
// regular file (symlinks followed) of at most `max_bytes`. Returns its size.
uint64_t CheckTextInput(const std::string& path, std::string_view what, uint64_t max_bytes = kMaxTextInputBytes);

// The file opened for reading after CheckTextInput.
std::ifstream OpenTextInput(const std::string& path, std::string_view what, uint64_t max_bytes = kMaxTextInputBytes);

// The whole file after CheckTextInput.
std::string ReadTextInput(const std::string& path, std::string_view what, uint64_t max_bytes = kMaxTextInputBytes);

}  // namespace specsweep
