#include "kernels/weight_matrix.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "base/half.h"
#include "support/test_support.h"

namespace glass {
namespace {

std::vector<float> random_values(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

std::vector<float> round_trip(WeightType t, const std::vector<float>& in) {
  const auto cols = static_cast<int64_t>(in.size());
  std::vector<std::byte> buf(weight_row_bytes(t, cols));
  quantize_row(t, in.data(), cols, buf.data());
  WeightMatrix w{t, buf.data(), 1, cols, buf.size()};
  std::vector<float> out(in.size());
  dequantize_row(w, 0, out.data());
  return out;
}

TEST(WeightMatrix, RowBytes) {
  EXPECT_EQ(weight_row_bytes(WeightType::F32, 64), 256u);
  EXPECT_EQ(weight_row_bytes(WeightType::BF16, 64), 128u);
  EXPECT_EQ(weight_row_bytes(WeightType::Q8_0, 64), 68u);
  EXPECT_EQ(weight_row_bytes(WeightType::Q4_0, 64), 36u);
}

TEST(WeightMatrix, TypeNames) {
  WeightType t;
  for (const char* n : {"f32", "f16", "bf16", "q8_0", "q4_0"}) {
    ASSERT_TRUE(parse_weight_type(n, &t)) << n;
    EXPECT_STREQ(weight_type_name(t), n);
  }
  EXPECT_FALSE(parse_weight_type("q4_k", &t));
}

TEST(WeightMatrix, FloatFormatsRoundTrip) {
  const auto in = random_values(96, 1);
  EXPECT_EQ(round_trip(WeightType::F32, in), in);
  const auto bf = round_trip(WeightType::BF16, in);
  const auto h = round_trip(WeightType::F16, in);
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(bf[i], bf16_to_f32(f32_to_bf16(in[i])));
    EXPECT_NEAR(h[i], in[i], std::fabs(in[i]) * 0x1p-11f + 1e-7f);
  }
}

TEST(WeightMatrix, Q8_0ErrorWithinHalfAStep) {
  const auto in = random_values(32 * 7, 2);
  const auto out = round_trip(WeightType::Q8_0, in);
  for (size_t b = 0; b < 7; ++b) {
    float amax = 0;
    for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(in[b * 32 + j]));
    const float step = amax / 127.0f;
    for (size_t j = 0; j < 32; ++j)  // fp16 scale rounding adds a little
      EXPECT_NEAR(out[b * 32 + j], in[b * 32 + j], 0.5f * step + amax * 1e-3f) << b << "," << j;
  }
}

TEST(WeightMatrix, Q4_0MatchesLlamaCppLayout) {
  // Largest magnitude -8 gives scale 1: the values are their own nibble minus 8.
  std::vector<float> in(32);
  for (int j = 0; j < 32; ++j) in[j] = static_cast<float>((j % 16) - 8);
  in[5] = -8.0f;
  std::vector<std::byte> buf(weight_row_bytes(WeightType::Q4_0, 32));
  quantize_row(WeightType::Q4_0, in.data(), 32, buf.data());
  const auto* block = reinterpret_cast<const BlockQ4_0*>(buf.data());
  EXPECT_EQ(f16_to_f32(block->scale), 1.0f);
  EXPECT_EQ(block->q[0] & 0x0f, 0);      // element 0 = -8 -> nibble 0
  EXPECT_EQ(block->q[0] >> 4, 0);        // element 16 = -8 -> nibble 0
  EXPECT_EQ(block->q[15] & 0x0f, 15);    // element 15 = 7 -> nibble 15
  EXPECT_EQ(round_trip(WeightType::Q4_0, in), in);
}

TEST(WeightMatrix, Q4_0ErrorWithinHalfAStep) {
  const auto in = random_values(32 * 5, 3);
  const auto out = round_trip(WeightType::Q4_0, in);
  for (size_t b = 0; b < 5; ++b) {
    float amax = 0;
    for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(in[b * 32 + j]));
    // The scale maps the largest-magnitude value to -8; values of the opposite sign
    // clamp at +7, so near the far end the error reaches one whole step.
    const float step = amax / 8.0f;
    for (size_t j = 0; j < 32; ++j) {
      const float err = std::fabs(out[b * 32 + j] - in[b * 32 + j]);
      const bool clamped = std::fabs(in[b * 32 + j]) > 7.5f * step;
      EXPECT_LE(err, (clamped ? 1.0f : 0.5f) * step + amax * 1e-3f) << b << "," << j;
    }
  }
}

TEST(WeightMatrix, ZeroBlocksQuantizeToZero) {
  const std::vector<float> zeros(64, 0.0f);
  EXPECT_EQ(round_trip(WeightType::Q8_0, zeros), zeros);
  EXPECT_EQ(round_trip(WeightType::Q4_0, zeros), zeros);
}

TEST(WeightMatrix, BlockTypesRefuseRaggedRows) {
  std::vector<float> in(40, 1.0f);
  std::vector<std::byte> buf(64);
  const std::string e = test::thrown_error([&] { quantize_row(WeightType::Q8_0, in.data(), 40, buf.data()); });
  EXPECT_NE(e.find("multiple of 32"), std::string::npos) << e;
}

}  // namespace
}  // namespace glass
