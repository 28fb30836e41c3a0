// The .npy writer and the reader's refusal of files whose header does not describe them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "base/half.h"
#include "support/test_support.h"
#include "trace/npy.h"

namespace glass {
namespace {

using test::thrown_error;

// A file as numpy writes it: magic, version, little-endian header length, header, data.
std::string npy_file(const std::string& dict, const std::string& data, int major = 1) {
  std::string header = dict;
  const size_t prefix = major == 1 ? 10 : 12;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  if (major != 1) out += std::string(2, '\0');
  return out + header + data;
}

std::string floats(std::initializer_list<float> v) {
  return std::string(reinterpret_cast<const char*>(std::data(v)), v.size() * sizeof(float));
}

TEST(Npy, EncodesVersion1HeaderAsNumpyDoes) {
  const std::vector<float> data = {1, 2, 3, 4, 5, 6};
  const std::string bytes = encode_npy({2, 3}, data);
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const size_t header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u) << "data starts on a 64-byte boundary";
  const std::string header = bytes.substr(10, header_len);
  EXPECT_EQ(header.find("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"), 0u) << header;
  EXPECT_EQ(header.back(), '\n');
  EXPECT_EQ(bytes.size(), 10 + header_len + 24);
  EXPECT_EQ(std::memcmp(bytes.data() + 10 + header_len, data.data(), 24), 0);
}

TEST(Npy, ShapeTuplesAsPythonWritesThem) {
  EXPECT_EQ(npy_shape_tuple({}), "()");
  EXPECT_EQ(npy_shape_tuple({7}), "(7,)");
  EXPECT_EQ(npy_shape_tuple({5, 14, 64}), "(5, 14, 64)");
}

TEST(Npy, RoundTripsEveryRank) {
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{}, {3}, {2, 3}, {2, 1, 4}, {0, 5}}) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> data(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) data[i] = 0.5f * static_cast<float>(i) - 1.0f;
    if (n > 1) data[1] = -INFINITY;
    const NpyArray a = decode_npy(encode_npy(shape, data), "mem");
    EXPECT_EQ(a.shape, shape);
    EXPECT_EQ(a.descr, "<f4");
    EXPECT_EQ(a.data, data);
  }
}

TEST(Npy, WritesAtomicallyAndReadsBack) {
  test::TempDir tmp;
  const std::vector<float> data = {1.5f, -2.25f};
  write_npy(tmp.file("a.npy"), {2}, data);
  EXPECT_EQ(read_npy(tmp.file("a.npy")).data, data);
  EXPECT_NE(thrown_error([&] { write_npy(tmp.file("b.npy"), {3}, data); }).find("holds 3 values but 2"),
            std::string::npos);
  EXPECT_NE(thrown_error([&] { read_npy(tmp.file("b.npy")); }).find("b.npy"), std::string::npos);
}

TEST(Npy, ReadsFloat64AndFloat16AndLaterVersions) {
  const double d[3] = {1.0, -0.5, 1e-3};
  NpyArray a = decode_npy(
      npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", std::string(reinterpret_cast<const char*>(d), 24)),
      "f8");
  EXPECT_EQ(a.descr, "<f8");
  EXPECT_EQ(a.data, (std::vector<float>{1.0f, -0.5f, 1e-3f}));
  const uint16_t h[2] = {f32_to_f16(2.0f), f32_to_f16(-0.25f)};
  a = decode_npy(npy_file("{'descr': '<f2', 'fortran_order': False, 'shape': (1, 2)}",
                          std::string(reinterpret_cast<const char*>(h), 4), 2),
                 "f2");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(a.data, (std::vector<float>{2.0f, -0.25f}));
  // Key order and quoting as other writers produce them; Fortran order of a vector is C order.
  a = decode_npy(npy_file("{\"shape\": (2,), \"fortran_order\": True, \"descr\": \"<f4\"}", floats({3, 4})), "any");
  EXPECT_EQ(a.data, (std::vector<float>{3, 4}));
}

struct BadCase {
  const char* what;
  std::string bytes;
  const char* expect;
};

TEST(Npy, RefusesBadTruncatedAndLyingFiles) {
  const std::string good_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }";
  const std::string four = floats({1, 2, 3, 4});
  const std::string good = npy_file(good_dict, four);
  const std::vector<BadCase> cases = {
      {"not npy", "PK\x03\x04 something", "not a .npy file"},
      {"empty", "", "not a .npy file"},
      {"magic only", "\x93NUMPY", "end inside the version"},
      {"version 4", std::string("\x93NUMPY\x04\x00\x10\x00", 10) + std::string(16, ' '), "unsupported .npy format version 4.0"},
      {"cut in length", std::string("\x93NUMPY\x01\x00\x10", 9), "inside the header length"},
      {"header longer than file", good.substr(0, 40), "the header claims"},
      {"data truncated", good.substr(0, good.size() - 3), "truncated .npy file: shape (2, 2) of '<f4' needs 16 data bytes but the file has 13"},
      {"data oversized", good + "xxxx", "has 20 data bytes but its header's shape (2, 2)"},
      {"shape lies (too big)", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", four), "needs 24 data bytes"},
      {"shape lies (too small)", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", four), "accounts for 12"},
      {"descr lies", npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", four), "needs 32 data bytes"},
      {"big-endian", npy_file("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }", four), "big-endian"},
      {"integers", npy_file("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }", four), "'<i4' is not a float type"},
      {"fortran", npy_file("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", four), "Fortran order"},
      {"missing key", npy_file("{'descr': '<f4', 'shape': (2, 2), }", four), "needs the keys"},
      {"extra key", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), 'x': 1}", four), "unexpected or repeated key 'x'"},
      {"repeated key", npy_file("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 2)}", four), "repeated key 'descr'"},
      {"negative dim", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 2), }", four), "non-negative integers"},
      {"huge shape", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999), }", four), "implausibly large"},
      {"not a dict", npy_file("['descr']", four), "expected '{'"},
      {"garbage after", npy_file(good_dict + " junk", four), "text after the header dict"},
      {"no newline", std::string("\x93NUMPY\x01\x00\x08\x00{}      ", 18), "does not end with a newline"},
      {"bad bool", npy_file("{'descr': '<f4', 'fortran_order': false, 'shape': (2, 2), }", four), "expected True or False"},
      {"unterminated", npy_file("{'descr: '<f4', 'fortran_order': False, 'shape': (2, 2), }", four), "expected ':'"},
  };
  for (const BadCase& c : cases) {
    const std::string err = thrown_error([&] { decode_npy(c.bytes, "in.npy"); });
    EXPECT_NE(err.find("in.npy"), std::string::npos) << c.what << ": " << err;
    EXPECT_NE(err.find(c.expect), std::string::npos) << c.what << ": " << err;
  }
  EXPECT_TRUE(has_npy_magic(good));
  EXPECT_FALSE(has_npy_magic("\x93NUMP"));
}

}  // namespace
}  // namespace glass
