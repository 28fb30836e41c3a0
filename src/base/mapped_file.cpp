#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <istream>

#include "base/error.h"

namespace glass {

namespace {

[[noreturn]] void not_a_file(const std::string& path, const struct stat& st) {
  if (S_ISDIR(st.st_mode)) fail(path, ": is a folder, not a file");
  fail(path, ": not a regular file (", S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISCHR(st.st_mode) ? "a character device"
                                          : S_ISBLK(st.st_mode)  ? "a block device"
                                          : S_ISSOCK(st.st_mode) ? "a socket"
                                                                 : "a special file",
       "); expected a file");
}

// Opens `path` for reading as a regular file: stat() first so that a FIFO or a device
// is refused without being opened, then O_NONBLOCK (a FIFO swapped in meanwhile does not
// block the open) and fstat() of what was opened.
int open_regular(const std::string& path, struct stat& st) {
  if (::stat(path.c_str(), &st) != 0) fail(path, ": cannot open: ", std::strerror(errno));
  if (!S_ISREG(st.st_mode)) not_a_file(path, st);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail(path, ": cannot open: ", std::strerror(errno));
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail(path, ": cannot stat: ", std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    not_a_file(path, st);
  }
  return fd;
}

std::string limit_text(int64_t max_bytes) {
  return str_cat(max_bytes, " bytes (", format_bytes(static_cast<double>(max_bytes)), ")");
}

}  // namespace

MappedFile::MappedFile(const std::string& path) : path_(path) {
  struct stat st {};
  const int fd = open_regular(path, st);
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      fail(path, ": cannot mmap ", size_, " bytes: ", std::strerror(err));
    }
    data_ = static_cast<const std::byte*>(p);
    // Weights are read front to back on every decode step: ask for readahead now,
    // so the first forward pass does not wait on page faults one page at a time.
    ::madvise(p, size_, MADV_WILLNEED);
    fd_ = fd;
    return;
  }
  ::close(fd);
}

bool MappedFile::read(const std::byte* begin, size_t bytes, std::byte* out) const {
  if (fd_ < 0 || begin < data_ || begin > data_ + size_ || bytes > static_cast<size_t>(data_ + size_ - begin)) return false;
  auto offset = static_cast<off_t>(begin - data_);
  while (bytes > 0) {
    const ssize_t got = ::pread(fd_, out, bytes, offset);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    out += got;
    offset += got;
    bytes -= static_cast<size_t>(got);
  }
  return true;
}

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)), data_(other.data_), size_(other.size_), fd_(other.fd_) {
  other.data_ = nullptr;
  other.size_ = 0;
  other.fd_ = -1;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    data_ = other.data_;
    size_ = other.size_;
    fd_ = other.fd_;
    other.data_ = nullptr;
    other.size_ = 0;
    other.fd_ = -1;
  }
  return *this;
}

void MappedFile::release_pages(const std::byte* begin, size_t bytes) const {
  if (data_ == nullptr || begin < data_ || begin > data_ + size_) return;
  bytes = std::min(bytes, static_cast<size_t>(data_ + size_ - begin));
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (reinterpret_cast<uintptr_t>(begin) + page - 1) / page * page;
  const uintptr_t last = (reinterpret_cast<uintptr_t>(begin) + bytes) / page * page;
  // Only whole pages: a neighbour's bytes in a shared page may be read in place. A
  // read-only private file map has no private copies to lose.
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

void MappedFile::release() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
  data_ = nullptr;
  size_ = 0;
  fd_ = -1;
}

std::string read_text_file(const std::string& path, int64_t max_bytes, const char* what) {
  struct stat st {};
  const int fd = open_regular(path, st);
  if (st.st_size > max_bytes) {
    ::close(fd);
    fail(path, ": ", st.st_size, " bytes is too large for ", what, " (limit ", limit_text(max_bytes), ")");
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  for (;;) {
    if (got == text.size()) {
      // The file may have grown since fstat: read on, up to the limit.
      if (static_cast<int64_t>(text.size()) >= max_bytes + 1) break;
      text.resize(static_cast<size_t>(std::min<int64_t>(max_bytes + 1, static_cast<int64_t>(text.size()) * 2 + 4096)));
    }
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      fail(path, ": read error: ", std::strerror(err));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  if (static_cast<int64_t>(got) > max_bytes) fail(path, ": grew past the limit of ", limit_text(max_bytes), " while read");
  text.resize(got);
  return text;
}

std::string read_stream(std::istream& in, const std::string& name, int64_t max_bytes) {
  std::string text;
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof buf);
    const std::streamsize n = in.gcount();
    if (n <= 0) break;
    if (static_cast<int64_t>(text.size()) + n > max_bytes)
      fail(name, ": more than the limit of ", limit_text(max_bytes));
    text.append(buf, static_cast<size_t>(n));
  }
  if (in.bad()) fail(name, ": read error");
  return text;
}

bool read_line(std::istream& in, std::string& line, const std::string& name, int64_t max_bytes) {
  line.clear();
  std::streambuf* buf = in.rdbuf();
  if (buf == nullptr || !in.good()) return false;
  for (;;) {
    const int c = buf->sbumpc();
    if (c == std::char_traits<char>::eof()) {
      in.setstate(std::ios::eofbit);
      return !line.empty();
    }
    if (c == '\n') return true;
    if (static_cast<int64_t>(line.size()) >= max_bytes) fail(name, ": a line longer than the limit of ", limit_text(max_bytes));
    line.push_back(static_cast<char>(c));
  }
}

// --- output files --------------------------------------------------------------------------

namespace {

std::string folder_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// `path` with its symlinks followed (as open() would), so that the link's target is
// what gets written or replaced. A dangling link names the file to create.
std::string follow_links(const std::string& path) {
  std::string p = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    char buf[PATH_MAX];
    const ssize_t n = ::readlink(p.c_str(), buf, sizeof buf);
    if (n < 0) fail(path, ": cannot read the symbolic link ", p, ": ", std::strerror(errno));
    std::string target(buf, static_cast<size_t>(n));
    p = target.starts_with('/') ? target : folder_of(p) + "/" + target;
  }
  fail(path, ": too many levels of symbolic links");
}

std::atomic<unsigned> temp_counter{0};

}  // namespace

OutputFile::OutputFile(const std::string& path) : path_(path) {
  if (path.empty()) fail("output file: the path is empty");
  // What the path names, all links followed (the kernel's way, magic links such as
  // /dev/stdout -> /proc/self/fd/1 -> pipe:[...] included).
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) fail(path, ": is a folder, not a file");
  auto write_through = [&](int flags) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | flags);
    if (fd_ < 0) fail(path, ": cannot open for writing: ", std::strerror(errno));
  };
  if (exists && !S_ISREG(st.st_mode)) {
    // A device or a FIFO: written as it is, never replaced.
    write_through(0);
    return;
  }
  // A regular file (or none yet): the file at the end of the links is replaced.
  target_ = follow_links(path);
  struct stat target_st {};
  if (exists && (::stat(target_.c_str(), &target_st) != 0 || target_st.st_dev != st.st_dev ||
                 target_st.st_ino != st.st_ino)) {
    // A link that names no path (/proc/self/fd/N of a deleted file): written through.
    write_through(O_TRUNC);
    return;
  }
  const std::string folder = folder_of(target_);
  const std::string name = target_.substr(target_.rfind('/') == std::string::npos ? 0 : target_.rfind('/') + 1);
  temp_ = str_cat(folder, "/.", name, ".tmp.", ::getpid(), ".", temp_counter.fetch_add(1));
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    const int err = errno;
    temp_.clear();
    fail(path, ": cannot create a file in ", folder, ": ", std::strerror(err));
  }
  if (exists) {
    // The replacement keeps the replaced file's permissions (and owner, where allowed).
    if (::fchmod(fd_, st.st_mode & 07777) != 0) {
      const int err = errno;
      ::close(fd_);
      ::unlink(temp_.c_str());
      fail(path, ": cannot set permissions: ", std::strerror(err));
    }
    if (::fchown(fd_, st.st_uid, st.st_gid) != 0) {
      // Only root may give a file away; the file is then the writer's, as a new one would be.
    }
  }
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_.empty()) ::unlink(temp_.c_str());
}

void OutputFile::write(const void* data, size_t size) {
  if (fd_ < 0) fail(path_, ": write after the file was closed");
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd_, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(path_, ": write failed: ", std::strerror(errno));
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
}

void OutputFile::commit() {
  if (fd_ < 0) fail(path_, ": commit after the file was closed");
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail(path_, ": write failed: ", std::strerror(errno));
  if (!temp_.empty() && ::rename(temp_.c_str(), target_.c_str()) != 0)
    fail(path_, ": cannot rename the temporary file into place: ", std::strerror(errno));
  committed_ = true;
}

void write_file_atomic(const std::string& path, const void* data, size_t size) {
  OutputFile out(path);
  out.write(data, size);
  out.commit();
}

}  // namespace glass
