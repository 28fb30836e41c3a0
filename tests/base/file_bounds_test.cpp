// Files as the user names them (issue 15 items 3, 6 and 10): outputs open the path as
// given (a regular file is replaced atomically, a symlink is followed and stays a
// symlink, anything else is written through and never replaced), and inputs that must be
// regular files refuse FIFOs and devices and have a size cap.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>

#include "base/error.h"
#include "base/json_fields.h"
#include "base/mapped_file.h"
#include "support/test_support.h"

namespace glass {
namespace {

using test::thrown_error;

struct stat lstat_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st;
}

// Issue 15 item 6: a symlink given as the output became a regular file.
TEST(FileBounds, OutputThroughASymlinkKeepsTheLink) {
  test::TempDir tmp;
  const std::string target = tmp.file("target.bin");
  const std::string link = tmp.file("link.bin");
  test::write_string(target, "old contents");
  ASSERT_EQ(::chmod(target.c_str(), 0640), 0);
  ASSERT_EQ(::symlink("target.bin", link.c_str()), 0);
  write_file_atomic(link, "new", 3);
  EXPECT_TRUE(S_ISLNK(lstat_of(link).st_mode)) << "the symlink was replaced";
  EXPECT_EQ(test::read_string(target), "new");
  EXPECT_EQ(lstat_of(target).st_mode & 07777, 0640u) << "the file keeps its permissions";
  // A dangling symlink: the file it names is created.
  const std::string dangling = tmp.file("dangling.bin");
  ASSERT_EQ(::symlink("created.bin", dangling.c_str()), 0);
  write_file_atomic(dangling, "made", 4);
  EXPECT_TRUE(S_ISLNK(lstat_of(dangling).st_mode));
  EXPECT_EQ(test::read_string(tmp.file("created.bin")), "made");
}

// Issue 15 item 6: what is not a regular file (here a FIFO; /dev/full was the report's
// case) is written through, never replaced by a regular file.
TEST(FileBounds, OutputToAFifoIsWrittenThrough) {
  test::TempDir tmp;
  const std::string fifo = tmp.file("out.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  write_file_atomic(fifo, "through", 7);
  char buf[16] = {};
  EXPECT_EQ(::read(reader, buf, sizeof buf), 7);
  EXPECT_EQ(std::string(buf, 7), "through");
  ::close(reader);
  EXPECT_TRUE(S_ISFIFO(lstat_of(fifo).st_mode)) << "the FIFO was replaced";
  // Through a symlink to it, too.
  const std::string link = tmp.file("fifo.link");
  ASSERT_EQ(::symlink(fifo.c_str(), link.c_str()), 0);
  const int reader2 = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader2, 0);
  write_file_atomic(link, "again", 5);
  EXPECT_EQ(::read(reader2, buf, sizeof buf), 5);
  ::close(reader2);
  EXPECT_TRUE(S_ISLNK(lstat_of(link).st_mode));
  EXPECT_TRUE(S_ISFIFO(lstat_of(fifo).st_mode));
}

TEST(FileBounds, OutputReplacesARegularFileAtomically) {
  test::TempDir tmp;
  const std::string path = tmp.file("out.bin");
  test::write_string(path, "old");
  const ino_t before = lstat_of(path).st_ino;
  write_file_atomic(path, "new contents", 12);
  EXPECT_EQ(test::read_string(path), "new contents");
  EXPECT_NE(lstat_of(path).st_ino, before) << "a new file was renamed into place";
  // A folder is not overwritten, and nothing is left beside it.
  const std::string e = thrown_error([&] { write_file_atomic(tmp.path(), "x", 1); });
  EXPECT_NE(e.find(tmp.path()), std::string::npos) << e;
}

// Issue 15 item 10: a FIFO read where a file is expected blocked until a writer came.
TEST(FileBounds, InputsMustBeRegularFiles) {
  test::TempDir tmp;
  const std::string fifo = tmp.file("in.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto done = std::async(std::launch::async, [&] { return thrown_error([&] { read_text_file(fifo); }); });
  if (done.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // lets the blocked open return
    if (fd >= 0) ::close(fd);
    FAIL() << "reading a FIFO blocked";
  }
  const std::string e = done.get();
  EXPECT_NE(e.find("not a regular file"), std::string::npos) << e;
  // /dev/zero would be read without end.
  const std::string z = thrown_error([] { read_json_file("/dev/zero"); });
  EXPECT_NE(z.find("/dev/zero: not a regular file"), std::string::npos) << z;
  const std::string m = thrown_error([&] { MappedFile f(fifo); });
  EXPECT_NE(m.find("not a regular file"), std::string::npos) << m;
}

// Issue 15 items 1 and 3: JSON is parsed with a depth limit, so nothing that walks the
// tree recursively afterwards (a copy, dump() in an error message) can overflow the stack.
TEST(FileBounds, JsonIsParsedWithADepthLimit) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  const std::string e = thrown_error([&] { parse_json(deep, "deep.json"); });
  EXPECT_NE(e.find("deep.json"), std::string::npos) << e.substr(0, 200);
  EXPECT_NE(e.find("levels"), std::string::npos) << e.substr(0, 200);
  EXPECT_LT(e.size(), 300u);
  // Real files nest a handful of levels.
  EXPECT_NO_THROW(parse_json(std::string(60, '[') + std::string(60, ']'), "ok.json"));
}

// Error messages name a wrong value without serializing all of it.
TEST(FileBounds, WrongTypeMessagesAreBounded) {
  std::string huge = "{\"a\": [";
  for (int i = 0; i < 100000; ++i) huge += "\"xxxxxxxxxx\", ";
  huge += "1]}";
  const Json j = parse_json(huge, "big.json");
  const std::string e = thrown_error([&] { json_int(j, "a", "big.json"); });
  EXPECT_NE(e.find("\"a\""), std::string::npos) << e.substr(0, 200);
  EXPECT_LT(e.size(), 300u) << e.substr(0, 300);
}

}  // namespace
}  // namespace glass
