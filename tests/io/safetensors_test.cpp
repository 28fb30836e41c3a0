#include "io/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>

#include "base/error.h"
#include "support/test_support.h"

namespace glass {
namespace {

using test::TempDir;
using test::thrown_error;

// A file made of an explicit header text (and declared length) plus `data_bytes` bytes.
std::string make_file(const std::string& header, size_t data_bytes, uint64_t declared_len = UINT64_MAX) {
  uint64_t len = declared_len == UINT64_MAX ? header.size() : declared_len;
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>(len >> (8 * i));
  s += header;
  s += std::string(data_bytes, '\x01');
  return s;
}

TEST(Safetensors, WritesAndReadsBack) {
  TempDir tmp;
  const float a[6] = {1, 2, 3, 4, 5, 6};
  const uint16_t b[3] = {0x3f80, 0x4000, 0xc000};
  write_safetensors(tmp.file("m.safetensors"),
                    {{"a", DType::F32, {2, 3}, a, sizeof a}, {"b", DType::BF16, {3}, b, sizeof b}},
                    {{"format", "pt"}});
  SafetensorsFile f(tmp.file("m.safetensors"));
  ASSERT_EQ(f.tensors().size(), 2u);
  const TensorInfo* ta = f.find("a");
  ASSERT_NE(ta, nullptr);
  EXPECT_EQ(ta->dtype, DType::F32);
  EXPECT_EQ(ta->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ta->nbytes, sizeof a);
  EXPECT_EQ(std::memcmp(ta->data, a, sizeof a), 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(ta->data) % 8, 0u);  // header padded to 8 bytes
  const TensorInfo* tb = f.find("b");
  ASSERT_NE(tb, nullptr);
  EXPECT_EQ(std::memcmp(tb->data, b, sizeof b), 0);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.find("c"), nullptr);
}

struct BadCase {
  const char* name;
  std::string bytes;
  const char* expect;
};

TEST(Safetensors, RejectsBadFilesWithClearMessages) {
  const std::string good_header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::vector<BadCase> cases = {
      {"empty", "", "shorter than the 8-byte header length"},
      {"short", std::string(5, '\0'), "shorter than the 8-byte header length"},
      {"header_past_end", make_file(good_header, 8, 5000), "points past the end of the file"},
      {"header_huge", make_file(good_header, 8, 1ull << 40), "exceeds"},
      {"truncated_data", make_file(good_header, 4), "point past the end of the file"},
      {"not_json", make_file("{not json", 0), "not valid JSON"},
      {"not_object", make_file("[1,2]", 0), "must be a JSON object"},
      {"unknown_dtype", make_file(R"({"w":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}})", 8), "unknown dtype \"Q7\""},
      {"size_mismatch", make_file(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8), "needs 12"},
      {"begin_after_end", make_file(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", 8), "begin after end"},
      {"negative_shape", make_file(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8), "non-negative"},
      {"missing_offsets", make_file(R"({"w":{"dtype":"F32","shape":[2]}})", 8), "data_offsets"},
      {"missing_dtype", make_file(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", 8), "\"dtype\""},
      {"overlap", make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12), "overlap"},
      {"huge_shape", make_file(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8), "too large"},
      {"metadata_not_string", make_file(R"({"__metadata__":{"a":1}})", 0), "__metadata__"},
  };
  TempDir tmp;
  for (const auto& c : cases) {
    const std::string path = tmp.file(std::string(c.name) + ".safetensors");
    test::write_string(path, c.bytes);
    const std::string e = thrown_error([&] { SafetensorsFile f(path); });
    EXPECT_NE(e.find(path), std::string::npos) << c.name << ": " << e;
    EXPECT_NE(e.find(c.expect), std::string::npos) << c.name << ": " << e;
  }
}

TEST(Safetensors, NamesTheTensorAtFault) {
  TempDir tmp;
  const std::string path = tmp.file("m.safetensors");
  test::write_string(path, make_file(R"({"model.norm.weight":{"dtype":"BF16","shape":[64],"data_offsets":[0,128]}})", 100));
  const std::string e = thrown_error([&] { SafetensorsFile f(path); });
  EXPECT_NE(e.find("model.norm.weight"), std::string::npos) << e;
}

TEST(Safetensors, MissingFile) {
  const std::string e = thrown_error([] { SafetensorsFile f("/nonexistent/x.safetensors"); });
  EXPECT_NE(e.find("/nonexistent/x.safetensors: cannot open"), std::string::npos) << e;
}

TEST(Safetensors, DTypeNames) {
  DType t;
  ASSERT_TRUE(parse_dtype("BF16", &t));
  EXPECT_EQ(t, DType::BF16);
  EXPECT_EQ(dtype_size(DType::BF16), 2u);
  EXPECT_STREQ(dtype_name(DType::F8_E4M3), "F8_E4M3");
  EXPECT_FALSE(parse_dtype("bf16", &t));
}

}  // namespace
}  // namespace glass
