#include "base/text_input.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "base/error.h"

namespace specsweep {

namespace {

std::string Size(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 20)) return fmt::format("{:.1f} MiB", double(bytes) / double(1 << 20));
  return fmt::format("{} bytes", bytes);
}

}  // namespace

uint64_t CheckTextInput(const std::string& path, std::string_view what, uint64_t max_bytes) {
  struct stat st {};
  // stat, not open: opening a FIFO blocks until a writer comes.
  if (::stat(path.c_str(), &st) != 0) Fail("{}: cannot open the {}: {}", path, what, std::strerror(errno));
  if (!S_ISREG(st.st_mode)) Fail("{}: the {} is not a regular file (a device, FIFO, socket or directory)", path, what);
  const auto bytes = static_cast<uint64_t>(st.st_size);
  if (bytes > max_bytes)
    Fail("{}: the {} is {}, more than the {} a text input may hold (docs/robustness.md)", path, what, Size(bytes),
         Size(max_bytes));
  return bytes;
}

std::ifstream OpenTextInput(const std::string& path, std::string_view what, uint64_t max_bytes) {
  CheckTextInput(path, what, max_bytes);
  std::ifstream f(path, std::ios::binary);
  if (!f) Fail("{}: cannot open the {}: {}", path, what, std::strerror(errno));
  return f;
}

std::string ReadTextInput(const std::string& path, std::string_view what, uint64_t max_bytes) {
  const uint64_t bytes = CheckTextInput(path, what, max_bytes);
  std::ifstream f(path, std::ios::binary);
  if (!f) Fail("{}: cannot open the {}: {}", path, what, std::strerror(errno));
  std::string text(bytes, '\0');
  // A file that grows while read is read up to the size checked.
  f.read(text.data(), static_cast<std::streamsize>(bytes));
  text.resize(static_cast<size_t>(f.gcount()));
  return text;
}

}  // namespace specsweep
