// Read-only memory map of a whole file (weights are copied out at load time, so the
// map lives only as long as the loader needs it; Release drops the pages already copied
// so that loading never holds the file and the model at once).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace specsweep {

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // throws Error naming the path
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Drops the whole pages inside [p, p + n) from this process's memory (the page cache
  // keeps them; touching them again reads them back). A hint: errors are ignored.
  void Release(const uint8_t* p, size_t n) const;

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace specsweep
