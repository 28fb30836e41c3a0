// llama.cpp's own bytes for a few 256-value rows (tests/quant/data/llamacpp_rows.json, made
// once with llama-quantize --pure; the data folder's README says how): our quantizer must
// reproduce them byte for byte, and our dequantization must give the floats gguf-py's
// reference dequantization gives for them (FNV-1a of the float32 bytes). The rows include
// the awkward cases: an outlier, all-zero, one sign only, values spanning eight decades,
// a tiny sub-block beside large ones, float32 subnormals, a constant, exact ties.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/json_fields.h"
#include "quant/weight_type.h"

namespace glass {
namespace {

std::vector<std::byte> from_hex(const std::string& hex) {
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  std::vector<std::byte> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::byte>(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
  return out;
}

std::string to_hex(const std::byte* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    const auto b = static_cast<unsigned>(p[i]);
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

std::string fnv1a64_hex(const float* v, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* p = reinterpret_cast<const unsigned char*>(v);
  for (size_t i = 0; i < 4 * n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

struct GoldenRow {
  std::string name;
  std::vector<float> values;
};

class LlamaCppRows : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { golden_ = new Json(read_json_file(GLASS_QUANT_GOLDEN)); }
  static void TearDownTestSuite() {
    delete golden_;
    golden_ = nullptr;
  }
  static std::vector<GoldenRow> rows() {
    std::vector<GoldenRow> out;
    for (const Json& r : golden_->at("rows")) {
      const auto bytes = from_hex(r.at("f32").get<std::string>());
      GoldenRow row{r.at("name").get<std::string>(), std::vector<float>(bytes.size() / 4)};
      std::memcpy(row.values.data(), bytes.data(), bytes.size());
      out.push_back(std::move(row));
    }
    return out;
  }
  static Json* golden_;
};
Json* LlamaCppRows::golden_ = nullptr;

TEST_F(LlamaCppRows, EveryTypeIsCovered) {
  ASSERT_GE(rows().size(), 10u);
  for (const WeightTypeTraits& t : weight_types()) {
    if (t.type == WeightType::F32) continue;
    EXPECT_TRUE(golden_->at("types").contains(t.name)) << t.name;
  }
}

TEST_F(LlamaCppRows, QuantizedBytesAreLlamaQuantizes) {
  const auto inputs = rows();
  for (const auto& [name, entry] : golden_->at("types").items()) {
    WeightType t;
    ASSERT_TRUE(parse_weight_type(name, &t)) << name;
    const auto& expected = entry.at("quantized");
    ASSERT_EQ(expected.size(), inputs.size()) << name;
    for (size_t r = 0; r < inputs.size(); ++r) {
      const auto cols = static_cast<int64_t>(inputs[r].values.size());
      std::vector<std::byte> q(weight_row_bytes(t, cols));
      quantize_values(t, inputs[r].values.data(), q.data(), cols);
      EXPECT_EQ(to_hex(q.data(), q.size()), expected[r].get<std::string>()) << name << ", row " << inputs[r].name;
    }
  }
}

TEST_F(LlamaCppRows, DequantizedFloatsAreGgufPys) {
  const auto inputs = rows();
  for (const auto& [name, entry] : golden_->at("types").items()) {
    WeightType t;
    ASSERT_TRUE(parse_weight_type(name, &t)) << name;
    for (size_t r = 0; r < inputs.size(); ++r) {
      const auto q = from_hex(entry.at("quantized")[r].get<std::string>());
      std::vector<float> y(inputs[r].values.size());
      dequantize_values(t, q.data(), y.data(), static_cast<int64_t>(y.size()));
      EXPECT_EQ(fnv1a64_hex(y.data(), y.size()), entry.at("dequantized_fnv1a64")[r].get<std::string>())
          << name << ", row " << inputs[r].name;
    }
  }
}

}  // namespace
}  // namespace glass
