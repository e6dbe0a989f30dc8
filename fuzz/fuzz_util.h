// Shared by the libFuzzer targets: the loaders read files, so each input is written
// to a per-process scratch directory first. Only specsweep::Error counts as a clean
// rejection; any other exception escapes and libFuzzer reports it as a crash.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace fuzz {

inline const std::filesystem::path& ScratchDir() {
  static const std::filesystem::path dir = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "specsweep-fuzz-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) std::abort();
    return std::filesystem::path(tmpl);
  }();
  return dir;
}

inline std::string WriteScratch(const std::string& name, std::string_view bytes) {
  const std::string path = (ScratchDir() / name).string();
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size());
  return path;
}

inline std::string_view AsView(const uint8_t* data, size_t size) { return {reinterpret_cast<const char*>(data), size}; }

}  // namespace fuzz
