// Files as the user names them: read-only memory maps of weights, bounded reads of input
// files, and output files that never replace what the path points at with something else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>

namespace glass {

// Size caps on inputs read whole into memory (checked before reading: a bigger file,
// or a longer stdin, is an error naming it and the cap).
// JSON and text files: config.json, tokenizer.json (Qwen2.5's is 7 MB), vocab.json,
// merges.txt, chat templates, --messages, stdin.
inline constexpr int64_t kMaxJsonFileBytes = int64_t{64} << 20;
// Text given to tokenize or to benchmark the tokenizer on.
inline constexpr int64_t kMaxTextFileBytes = int64_t{1} << 30;

class MappedFile {
 public:
  // Throws glass::Error naming the path if it cannot be opened or mapped, or is not a
  // regular file (a FIFO is refused without waiting for a writer).
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;

  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // These bytes of the map will not be read again soon: the whole pages among them leave
  // this process's memory (they stay in the page cache, and reading them again maps them
  // back in, so this never changes what is read). For weights converted at load: the
  // source is not kept resident beside its conversion. Bytes outside the map are ignored.
  void release_pages(const std::byte* begin, size_t bytes) const;
  // Copies these bytes of the map into `out` by reading the file (pread), without mapping
  // its pages into this process: for data read once (weights converted at load). False
  // when the range is not the map's or the read fails; `out` is then unspecified.
  bool read(const std::byte* begin, size_t bytes, std::byte* out) const;

 private:
  void release();
  std::string path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;  // kept open for read()
};

// A whole regular file into a string. Throws glass::Error naming the path when it is
// missing, a folder, not a regular file (a FIFO, a device such as /dev/zero: refused
// without blocking or reading), or larger than `max_bytes` ("N bytes is too large for
// <what> (limit ...)").
std::string read_text_file(const std::string& path, int64_t max_bytes = kMaxJsonFileBytes,
                           const char* what = "a JSON or text input");

// All of `in` (stdin, a pipe) up to `max_bytes`; more is an error naming `name` and the cap.
std::string read_stream(std::istream& in, const std::string& name, int64_t max_bytes = kMaxJsonFileBytes);

// The next line of `in` (without its '\n') into `line`; false at the end. A line longer
// than `max_bytes` is an error naming `name` and the cap (a line of stdin is read whole).
bool read_line(std::istream& in, std::string& line, const std::string& name, int64_t max_bytes = kMaxJsonFileBytes);

// An output file opened as the path is given:
//   - a regular file (or a new one) is written to a temporary file in the same folder,
//     then renamed over it by commit(): a failure never leaves a partial file, and the
//     replaced file's permissions are kept;
//   - a symlink is followed (its target is what is written or replaced; the link stays);
//   - anything else (a device such as /dev/null or /dev/full, a FIFO) is written
//     through, never replaced;
//   - a folder is an error.
// Write errors (ENOSPC, EIO) are errors naming the path. Without commit() (an exception,
// an early return) the temporary file is removed and the target is untouched.
class OutputFile {
 public:
  explicit OutputFile(const std::string& path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(const void* data, size_t size);
  void commit();

  const std::string& path() const { return path_; }

 private:
  std::string path_;     // as given, for messages
  std::string target_;   // the file written or replaced (symlinks resolved)
  std::string temp_;     // empty when writing through
  int fd_ = -1;
  bool committed_ = false;
};

// `data` into `path` with OutputFile's semantics.
void write_file_atomic(const std::string& path, const void* data, size_t size);

}  // namespace glass
