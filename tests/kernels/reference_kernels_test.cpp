#include "kernels/reference_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace glass {
namespace {

TEST(ReferenceKernels, MatmulWithBias) {
  // w = [[1, 2, 3], [4, 5, 6]], two tokens.
  const float wdata[6] = {1, 2, 3, 4, 5, 6};
  WeightMatrix w{WeightType::F32, reinterpret_cast<const std::byte*>(wdata), 2, 3, 12};
  const float x[6] = {1, 0, -1, 0.5f, 0.5f, 0.5f};
  const float bias[2] = {10, 20};
  float y[4];
  ReferenceKernels k;
  k.matmul(w, x, 2, bias, y);
  EXPECT_FLOAT_EQ(y[0], 1 - 3 + 10);
  EXPECT_FLOAT_EQ(y[1], 4 - 6 + 20);
  EXPECT_FLOAT_EQ(y[2], 3 + 10);
  EXPECT_FLOAT_EQ(y[3], 7.5f + 20);
  k.matmul(w, x, 1, nullptr, y);
  EXPECT_FLOAT_EQ(y[0], -2);
}

// MatmulPrecision::Bf16 rounds the activations of bf16 matrices, and only theirs: 1 + 2^-10
// becomes 1 (to nearest even), so the bf16 row [1, 1] gives 2 where float activations give
// 2 + 2^-10; the same values as f32 weights are multiplied as they are.
TEST(ReferenceKernels, Bf16PrecisionRoundsTheActivationsOfBf16WeightsOnly) {
  const uint16_t ones[2] = {0x3f80, 0x3f80};
  const float ones_f32[2] = {1, 1};
  const WeightMatrix bf16{WeightType::BF16, reinterpret_cast<const std::byte*>(ones), 1, 2, 4};
  const WeightMatrix f32{WeightType::F32, reinterpret_cast<const std::byte*>(ones_f32), 1, 2, 8};
  const float x[2] = {1.0f + 1.0f / 1024, 1.0f};
  float y = 0;
  ReferenceKernels rounding(MatmulPrecision::Bf16), plain;
  EXPECT_EQ(rounding.matmul_precision(), MatmulPrecision::Bf16);
  rounding.matmul(bf16, x, 1, nullptr, &y);
  EXPECT_EQ(y, 2.0f);
  plain.matmul(bf16, x, 1, nullptr, &y);
  EXPECT_EQ(y, 2.0f + 1.0f / 1024);
  rounding.matmul(f32, x, 1, nullptr, &y);
  EXPECT_EQ(y, 2.0f + 1.0f / 1024);
}

TEST(ReferenceKernels, MatmulPrecisionNames) {
  MatmulPrecision p = MatmulPrecision::Float;
  EXPECT_TRUE(parse_matmul_precision("bf16", &p));
  EXPECT_EQ(p, MatmulPrecision::Bf16);
  EXPECT_TRUE(parse_matmul_precision("float", &p));
  EXPECT_EQ(p, MatmulPrecision::Float);
  for (const char* bad : {"", "BF16", "fp32", "bf16 ", "f32"}) EXPECT_FALSE(parse_matmul_precision(bad, &p)) << bad;
  EXPECT_STREQ(matmul_precision_name(MatmulPrecision::Bf16), "bf16");
}

TEST(ReferenceKernels, RmsNorm) {
  const float x[4] = {1, 2, 3, 4};
  const float weight[4] = {1, 1, 2, 0.5f};
  float y[4];
  ReferenceKernels k;
  k.rmsnorm(x, weight, 1, 4, 1e-6f, y);
  const double rms = std::sqrt((1 + 4 + 9 + 16) / 4.0 + 1e-6);
  EXPECT_NEAR(y[0], 1 / rms, 1e-6);
  EXPECT_NEAR(y[2], 6 / rms, 1e-6);
  EXPECT_NEAR(y[3], 2 / rms, 1e-6);
}

TEST(ReferenceKernels, RopeRotatesHalves) {
  // head_dim 4: pairs (x0, x2) and (x1, x3).
  float x[4] = {1, 2, 3, 4};
  const float cos[2] = {0.0f, 1.0f};
  const float sin[2] = {1.0f, 0.0f};  // pair 0 turns by 90 degrees, pair 1 not at all
  ReferenceKernels k;
  k.rope(x, 1, 1, 4, cos, sin);
  EXPECT_FLOAT_EQ(x[0], -3);  // x0 cos - x2 sin
  EXPECT_FLOAT_EQ(x[2], 1);   // x2 cos + x0 sin
  EXPECT_FLOAT_EQ(x[1], 2);
  EXPECT_FLOAT_EQ(x[3], 4);
}

TEST(ReferenceKernels, SiluMul) {
  const float g[3] = {0, 1, -2};
  const float u[3] = {5, 2, 1};
  float out[3];
  ReferenceKernels k;
  k.silu_mul(g, u, 3, out);
  EXPECT_FLOAT_EQ(out[0], 0);
  EXPECT_NEAR(out[1], 2 * (1 / (1 + std::exp(-1.0))), 1e-6);
  EXPECT_NEAR(out[2], -2 / (1 + std::exp(2.0)), 1e-6);
}

TEST(ReferenceKernels, KVStoreAndLoad) {
  const float src[3] = {1.5f, -2.25f, 3.0f};
  for (KVType t : {KVType::F32, KVType::F16, KVType::BF16}) {
    std::vector<std::byte> buf(12);
    store_kv_row(t, src, 3, buf.data());
    for (int i = 0; i < 3; ++i) EXPECT_EQ(load_kv(t, buf.data(), i), src[i]) << kv_type_name(t);
  }
}

// Two query heads share one KV head; three cached positions in blocks of two.
TEST(ReferenceKernels, AttentionGroupedQueryOverBlocks) {
  const int64_t head_dim = 2, block_size = 2;
  // Block layout: [position in block][kv_dim]; K and V in separate arenas, block stride 4 floats.
  // Sequence uses blocks 1 then 0.
  std::vector<float> karena(8), varena(8);
  const float keys[3][2] = {{1, 0}, {0, 1}, {1, 1}};
  const float vals[3][2] = {{1, 2}, {3, 4}, {5, 6}};
  const int32_t blocks[2] = {1, 0};
  for (int p = 0; p < 3; ++p)
    for (int i = 0; i < 2; ++i) {
      karena[blocks[p / 2] * 4 + (p % 2) * 2 + i] = keys[p][i];
      varena[blocks[p / 2] * 4 + (p % 2) * 2 + i] = vals[p][i];
    }
  const float q[4] = {1, 0, 0, 2};  // head 0, head 1
  float out[4];
  AttentionRow row{blocks, 3};
  AttentionArgs a;
  a.q = q;
  a.out = out;
  a.n = 1;
  a.heads = 2;
  a.kv_heads = 1;
  a.head_dim = head_dim;
  a.scale = 1.0f;
  a.kv_type = KVType::F32;
  a.k_base = reinterpret_cast<const std::byte*>(karena.data());
  a.v_base = reinterpret_cast<const std::byte*>(varena.data());
  a.block_stride = 4 * sizeof(float);
  a.block_size = block_size;
  a.rows = &row;
  std::vector<float> weights(2 * 4);
  a.weights_out = weights.data();
  a.weights_stride = 4;
  ReferenceKernels k;
  k.attention(a);
  for (int h = 0; h < 2; ++h) {
    double s[3], sum = 0;
    for (int p = 0; p < 3; ++p) {
      s[p] = std::exp(q[h * 2] * keys[p][0] + q[h * 2 + 1] * keys[p][1]);
      sum += s[p];
    }
    for (int i = 0; i < 2; ++i) {
      double expect = 0;
      for (int p = 0; p < 3; ++p) expect += s[p] / sum * vals[p][i];
      EXPECT_NEAR(out[h * 2 + i], expect, 1e-6) << "head " << h << " dim " << i;
    }
    for (int p = 0; p < 3; ++p) EXPECT_NEAR(weights[h * 4 + p], s[p] / sum, 1e-6);
    EXPECT_EQ(weights[h * 4 + 3], -1.0f);  // padding past the row's length
  }
}

}  // namespace
}  // namespace glass
