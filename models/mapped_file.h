// Read-only memory map of a whole file. Loaders copy (re-lay out) most weights out of it
// and Release the pages already copied, so that loading never holds the file and the
// model at once; weights already in the kernels' layout are pointed to instead, and
// then the map lives as long as the model (held by a shared_ptr). Such a model needs its
// file left as it is: replacing it (our writers write a temporary file and rename it)
// is safe, rewriting it in place is not (the pages would change, or fault past its end).
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
  // Maps the pages of [p, p + n) in one call (MADV_POPULATE_READ) instead of one fault
  // per 64 KiB as they are read. A hint: errors (kernels before 5.14) are ignored.
  void Populate(const uint8_t* p, size_t n) const;

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace specsweep
