// Read-only memory map of a whole file. Weights are used in place from the map.
#pragma once

#include <cstddef>
#include <string>

namespace glass {

class MappedFile {
 public:
  // Throws glass::Error naming the path if it cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;

  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  void release();
  std::string path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

// Whole file into a string; throws glass::Error naming the path.
std::string read_text_file(const std::string& path);

// Writes `contents` to `path` atomically: a temporary file beside it, then rename,
// so a failure never leaves a partial file.
void write_file_atomic(const std::string& path, const void* data, size_t size);

}  // namespace glass
