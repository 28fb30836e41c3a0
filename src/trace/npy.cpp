#include "trace/npy.h"

#include <bit>
#include <cstring>
#include <limits>
#include <optional>

#include "base/error.h"
#include "base/half.h"
#include "base/mapped_file.h"

namespace glass {

static_assert(std::endian::native == std::endian::little, ".npy data is written and read as little-endian");

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
// numpy pads the header so that the data starts on a 64-byte boundary.
constexpr size_t kAlignment = 64;
// Beyond any real tensor; keeps the size arithmetic far from overflow.
constexpr int64_t kMaxElements = int64_t{1} << 48;

// A cursor over the header dict, e.g. "{'descr': '<f4', 'fortran_order': False, 'shape': (5, 896), }".
// It reads the Python literal subset numpy writes: strings, True/False and tuples of
// non-negative integers.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& source) : s_(text), source_(source) {}

  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool consume(char c) {
    skip_space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c, const char* what) {
    if (!consume(c)) bad(str_cat("expected '", c, "' ", what));
  }
  bool at_end() {
    skip_space();
    return i_ == s_.size();
  }
  std::string string_literal() {
    skip_space();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) bad("expected a quoted string");
    const char quote = s_[i_++];
    const size_t start = i_;
    while (i_ < s_.size() && s_[i_] != quote) {
      if (s_[i_] == '\\') bad("escapes in strings are not supported");
      ++i_;
    }
    if (i_ >= s_.size()) bad("unterminated string");
    return std::string(s_.substr(start, i_++ - start));
  }
  bool boolean() {
    skip_space();
    if (s_.substr(i_, 4) == "True") {
      i_ += 4;
      return true;
    }
    if (s_.substr(i_, 5) == "False") {
      i_ += 5;
      return false;
    }
    bad("expected True or False");
  }
  std::vector<int64_t> shape_tuple() {
    expect('(', "to open the shape tuple");
    std::vector<int64_t> shape;
    while (!consume(')')) {
      skip_space();
      if (i_ >= s_.size() || s_[i_] < '0' || s_[i_] > '9')
        bad("shape entries must be non-negative integers");
      int64_t v = 0;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
        if (v > (kMaxElements - 9) / 10) bad("a shape entry is too large");
        v = v * 10 + (s_[i_++] - '0');
      }
      // numpy writes `5L` in very old files.
      if (i_ < s_.size() && s_[i_] == 'L') ++i_;
      shape.push_back(v);
      if (!consume(',')) {
        expect(')', "to close the shape tuple");
        break;
      }
    }
    return shape;
  }
  [[noreturn]] void bad(const std::string& what) const {
    fail(source_, ": bad .npy header at character ", i_, ": ", what, " (header: ", s_, ")");
  }

 private:
  std::string_view s_;
  const std::string& source_;
  size_t i_ = 0;
};

uint32_t read_le(std::string_view bytes, size_t offset, size_t width) {
  uint32_t v = 0;
  for (size_t i = 0; i < width; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
  return v;
}

}  // namespace

int64_t NpyArray::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string npy_shape_tuple(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) s += ",";
  return s + ")";
}

bool has_npy_magic(std::string_view bytes) { return bytes.substr(0, kMagic.size()) == kMagic; }

std::string encode_npy(const std::vector<int64_t>& shape, std::span<const float> data) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) fail("encode_npy: negative dimension in shape ", npy_shape_tuple(shape));
    n *= d;
  }
  if (static_cast<size_t>(n) != data.size())
    fail("encode_npy: shape ", npy_shape_tuple(shape), " holds ", n, " values but ", data.size(), " were given");
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + npy_shape_tuple(shape) + ", }";
  // magic (6) + version (2) + length (2) + header + padding + '\n' is a multiple of 64.
  const size_t unpadded = kMagic.size() + 4 + header.size() + 1;
  header.append((kAlignment - unpadded % kAlignment) % kAlignment, ' ');
  header += '\n';
  if (header.size() > 0xffff) fail("encode_npy: shape ", npy_shape_tuple(shape), " makes the header too long");
  std::string out;
  out.reserve(kMagic.size() + 4 + header.size() + data.size_bytes());
  out += kMagic;
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(reinterpret_cast<const char*>(data.data()), data.size_bytes());
  return out;
}

void write_npy(const std::string& path, const std::vector<int64_t>& shape, std::span<const float> data) {
  const std::string bytes = encode_npy(shape, data);
  write_file_atomic(path, bytes.data(), bytes.size());
}

NpyArray decode_npy(std::string_view bytes, const std::string& source) {
  if (!has_npy_magic(bytes)) fail(source, ": not a .npy file (it does not start with \"\\x93NUMPY\")");
  if (bytes.size() < kMagic.size() + 2) fail(source, ": truncated .npy file: ", bytes.size(), " bytes end inside the version");
  const int major = static_cast<unsigned char>(bytes[6]);
  const int minor = static_cast<unsigned char>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0)
    fail(source, ": unsupported .npy format version ", major, ".", minor, " (this reader knows 1.0, 2.0 and 3.0)");
  const size_t length_bytes = major == 1 ? 2 : 4;
  const size_t prefix = kMagic.size() + 2 + length_bytes;
  if (bytes.size() < prefix) fail(source, ": truncated .npy file: ", bytes.size(), " bytes end inside the header length");
  const size_t header_len = read_le(bytes, kMagic.size() + 2, length_bytes);
  if (bytes.size() - prefix < header_len)
    fail(source, ": truncated .npy file: the header claims ", header_len, " bytes but only ", bytes.size() - prefix,
         " follow");
  const std::string_view header = bytes.substr(prefix, header_len);
  if (header.empty() || header.back() != '\n') fail(source, ": bad .npy header: it does not end with a newline");
  for (char c : header)
    if (static_cast<unsigned char>(c) >= 0x80 && major < 3) fail(source, ": bad .npy header: non-ASCII bytes");

  HeaderParser p(header, source);
  p.expect('{', "to open the header dict");
  std::optional<std::string> descr;
  std::optional<bool> fortran;
  std::optional<std::vector<int64_t>> shape;
  while (!p.consume('}')) {
    const std::string key = p.string_literal();
    p.expect(':', "after a key");
    if (key == "descr" && !descr) descr = p.string_literal();
    else if (key == "fortran_order" && !fortran) fortran = p.boolean();
    else if (key == "shape" && !shape) shape = p.shape_tuple();
    else p.bad("unexpected or repeated key '" + key + "'");
    if (!p.consume(',')) {
      p.expect('}', "to close the header dict");
      break;
    }
  }
  if (!p.at_end()) p.bad("text after the header dict");
  if (!descr || !fortran || !shape) p.bad("the header needs the keys 'descr', 'fortran_order' and 'shape'");

  size_t item = 0;
  if (*descr == "<f4") item = 4;
  else if (*descr == "<f8") item = 8;
  else if (*descr == "<f2") item = 2;
  else if (*descr == ">f4" || *descr == ">f8" || *descr == ">f2")
    fail(source, ": .npy data is big-endian ('", *descr, "'); save it little-endian (arr.astype('<f4'))");
  else
    fail(source, ": .npy element type '", *descr, "' is not a float type this reader knows ('<f4', '<f8', '<f2')");

  NpyArray a;
  a.shape = *shape;
  a.descr = *descr;
  int64_t n = 1;
  int64_t long_axes = 0;
  for (int64_t d : a.shape) {
    if (d != 0 && n > kMaxElements / d) fail(source, ": .npy shape ", npy_shape_tuple(a.shape), " is implausibly large");
    n *= d;
    long_axes += d > 1;
  }
  if (*fortran && long_axes > 1)
    fail(source, ": .npy data is in Fortran order; save it in C order (np.ascontiguousarray)");

  const size_t data_offset = prefix + header_len;
  const size_t have = bytes.size() - data_offset;
  const auto need = static_cast<size_t>(n) * item;
  if (have < need)
    fail(source, ": truncated .npy file: shape ", npy_shape_tuple(a.shape), " of '", *descr, "' needs ", need,
         " data bytes but the file has ", have);
  if (have > need)
    fail(source, ": .npy file has ", have, " data bytes but its header's shape ", npy_shape_tuple(a.shape), " of '",
         *descr, "' accounts for ", need, " (the header does not describe the data)");

  a.data.resize(static_cast<size_t>(n));
  const char* src = bytes.data() + data_offset;
  if (need == 0) {
    // an empty array (a zero in the shape): nothing to copy, and memcpy may not take null
  } else if (item == 4) {
    std::memcpy(a.data.data(), src, need);
  } else if (item == 8) {
    for (size_t i = 0; i < a.data.size(); ++i) {
      double d;
      std::memcpy(&d, src + 8 * i, 8);
      a.data[i] = static_cast<float>(d);
    }
  } else {
    for (size_t i = 0; i < a.data.size(); ++i) {
      uint16_t h;
      std::memcpy(&h, src + 2 * i, 2);
      a.data[i] = f16_to_f32(h);
    }
  }
  return a;
}

NpyArray read_npy(const std::string& path) {
  const MappedFile file(path);
  return decode_npy(std::string_view(reinterpret_cast<const char*>(file.data()), file.size()), path);
}

}  // namespace glass
