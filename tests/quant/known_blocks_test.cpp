// Hand-made blocks of each type decoded to values worked out by hand from ggml's layout
// (ggml-common.h, dequantize_row_* in ggml-quants.c): scale packing, signs, mins and high
// bits at chosen positions. Every expected value is exactly representable, so the
// comparisons are exact.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "quant/blocks.h"
#include "quant/weight_type.h"

namespace glass {
namespace {

// fp16 bit patterns.
constexpr uint16_t kHalf2 = 0x4000, kHalf1 = 0x3c00, kHalfHalf = 0x3800, kHalfQuarter = 0x3400, kHalfMinus1 = 0xbc00;

template <class Block>
std::vector<float> decode(WeightType t, const Block& block) {
  static_assert(std::is_trivially_copyable_v<Block>);
  std::vector<std::byte> bytes(sizeof block);
  std::memcpy(bytes.data(), &block, sizeof block);
  std::vector<float> out(static_cast<size_t>(traits(t).block_values));
  dequantize_values(t, bytes.data(), out.data(), static_cast<int64_t>(out.size()));
  return out;
}

TEST(KnownBlocks, Q8_0) {
  BlockQ8_0 b{};
  b.scale = kHalfQuarter;
  b.q[0] = -128;
  b.q[5] = 127;
  b.q[31] = -3;
  const auto v = decode(WeightType::Q8_0, b);
  EXPECT_EQ(v[0], -32.0f);
  EXPECT_EQ(v[5], 31.75f);
  EXPECT_EQ(v[31], -0.75f);
  EXPECT_EQ(v[1], 0.0f);
}

TEST(KnownBlocks, Q4_0) {
  BlockQ4_0 b{};
  b.scale = kHalfHalf;
  b.q[0] = 0xf0;  // value 0: 0 - 8; value 16: 15 - 8
  b.q[7] = 0x89;  // value 7: 9 - 8; value 23: 8 - 8
  const auto v = decode(WeightType::Q4_0, b);
  EXPECT_EQ(v[0], -4.0f);
  EXPECT_EQ(v[16], 3.5f);
  EXPECT_EQ(v[7], 0.5f);
  EXPECT_EQ(v[23], 0.0f);
  EXPECT_EQ(v[1], -4.0f);  // nibble 0
}

TEST(KnownBlocks, Q4_1) {
  BlockQ4_1 b{};
  b.scale = kHalfHalf;
  b.min = kHalfMinus1;  // value = nibble * 0.5 - 1
  b.q[0] = 0x3a;
  b.q[15] = 0xf0;
  const auto v = decode(WeightType::Q4_1, b);
  EXPECT_EQ(v[0], 4.0f);
  EXPECT_EQ(v[16], 0.5f);
  EXPECT_EQ(v[15], -1.0f);
  EXPECT_EQ(v[31], 6.5f);
}

TEST(KnownBlocks, Q5_0) {
  BlockQ5_0 b{};
  b.scale = kHalfQuarter;
  b.high_bits[0] = 0x01;  // fifth bit of value 0
  b.high_bits[3] = 0x80;  // fifth bit of value 31
  b.q[0] = 0x0f;
  b.q[15] = 0xf7;
  const auto v = decode(WeightType::Q5_0, b);
  EXPECT_EQ(v[0], 3.75f);    // (15 | 16) - 16 = 15
  EXPECT_EQ(v[16], -4.0f);   // 0 - 16
  EXPECT_EQ(v[15], -2.25f);  // 7 - 16
  EXPECT_EQ(v[31], 3.75f);   // (15 | 16) - 16
  EXPECT_EQ(v[1], -4.0f);
}

TEST(KnownBlocks, Q5_1) {
  BlockQ5_1 b{};
  b.scale = kHalf2;
  b.min = kHalfHalf;      // value = code * 2 + 0.5
  b.high_bits[2] = 0x01;  // fifth bit of value 16
  b.q[0] = 0x21;
  b.q[3] = 0xff;
  const auto v = decode(WeightType::Q5_1, b);
  EXPECT_EQ(v[0], 2.5f);
  EXPECT_EQ(v[16], 36.5f);  // code 2 | 16 = 18
  EXPECT_EQ(v[3], 30.5f);
  EXPECT_EQ(v[19], 30.5f);
  EXPECT_EQ(v[1], 0.5f);
}

TEST(KnownBlocks, Q2_K) {
  BlockQ2_K b{};
  b.scale = kHalfHalf;
  b.min_scale = kHalfQuarter;
  b.scales[0] = 0x21;   // sub-block 0: scale 1 * 0.5, min 2 * 0.25
  b.scales[5] = 0xf3;   // sub-block 5: scale 3 * 0.5, min 15 * 0.25
  b.scales[15] = 0x0f;  // sub-block 15: scale 15 * 0.5, no min
  b.q[0] = 0xe7;        // value 0: bits 0-1 = 3
  b.q[16] = 0x20;       // value 80 (sub-block 5): byte 16, bits 4-5 = 2
  b.q[63] = 0xc0;       // value 255: byte 32 + 31, bits 6-7 = 3
  const auto v = decode(WeightType::Q2_K, b);
  EXPECT_EQ(v[0], 1.0f);     // 0.5 * 3 - 0.5
  EXPECT_EQ(v[1], -0.5f);    // code 0
  EXPECT_EQ(v[80], -0.75f);  // 1.5 * 2 - 3.75
  EXPECT_EQ(v[255], 22.5f);  // 7.5 * 3
  EXPECT_EQ(v[32], 0.0f);    // sub-block 2 has scale 0 and min 0 (code 1 in bits 2-3 of byte 0)
}

TEST(KnownBlocks, Q3_K) {
  BlockQ3_K b{};
  b.scale = kHalfHalf;
  // Sub-block scales are 6-bit, stored + 32: sub-block 0 = 40 (8), 9 = 10 (-22), 15 = 63 (31).
  b.scales[0] = 0x08;   // low 4 bits of scale 0
  b.scales[8] = 0x02;   // high 2 bits of scale 0 (bits 0-1 of byte 8)
  b.scales[1] = 0xa0;   // low 4 bits of scale 9 (high nibble of byte 9 - 8)
  b.scales[7] = 0xf0;   // low 4 bits of scale 15
  b.scales[11] = 0xc0;  // high 2 bits of scale 15 (bits 6-7 of byte 8 + 15 % 4)
  b.q[0] = 0x03;
  b.high_bits[0] = 0x01;   // value 0: third bit set
  b.q[54] = 0x02;          // value 150: byte 32 + 22, bits 0-1
  b.high_bits[22] = 0x10;  // value 150: bit 150 / 32 = 4 of byte 150 % 32
  b.q[63] = 0x40;          // value 255: bits 6-7 = 1, third bit clear
  const auto v = decode(WeightType::Q3_K, b);
  EXPECT_EQ(v[0], 12.0f);     // 0.5 * 8 * 3
  EXPECT_EQ(v[1], -16.0f);    // 0.5 * 8 * (0 - 4)
  EXPECT_EQ(v[150], -22.0f);  // 0.5 * -22 * 2
  EXPECT_EQ(v[255], -46.5f);  // 0.5 * 31 * (1 - 4)
  EXPECT_EQ(v[16], 64.0f);    // sub-block 1: stored 0, so scale -32; code 0 - 4
}

// The 12 scale bytes of Q4_K / Q5_K: sub-block 1 gets scale 10 and min 3, sub-block 5
// gets scale 39 and min 19 (their top two bits in the top bits of bytes 1 and 5).
template <class Block>
void set_q4_k_scales(Block& b) {
  b.scale = kHalfHalf;
  b.min_scale = kHalfQuarter;
  b.scales[1] = 0x80 | 10;  // scale 1 = 10; top bits of scale 5 = 2
  b.scales[5] = 0x40 | 3;   // min 1 = 3; top bits of min 5 = 1
  b.scales[9] = 0x37;       // low 4 bits of scale 5 (7) and min 5 (3)
}

TEST(KnownBlocks, Q4_K) {
  BlockQ4_K b{};
  set_q4_k_scales(b);
  b.q[0] = 0xc0;   // value 32 (sub-block 1): high nibble of byte 0
  b.q[64] = 0x50;  // value 160 (sub-block 5): high nibble of byte 64
  const auto v = decode(WeightType::Q4_K, b);
  EXPECT_EQ(v[32], 59.25f);   // 0.5 * 10 * 12 - 0.25 * 3
  EXPECT_EQ(v[33], -0.75f);   // code 0
  EXPECT_EQ(v[160], 92.75f);  // 0.5 * 39 * 5 - 0.25 * 19
  EXPECT_EQ(v[191], -4.75f);  // code 0
  EXPECT_EQ(v[0], 0.0f);      // sub-block 0: scale and min 0
}

TEST(KnownBlocks, Q5_K) {
  BlockQ5_K b{};
  set_q4_k_scales(b);
  b.q[0] = 0xc0;
  b.q[64] = 0x50;
  b.high_bits[0] = 0x20;   // fifth bit of value 160 (sub-block 5, position 0)
  b.high_bits[31] = 0x20;  // fifth bit of value 191
  const auto v = decode(WeightType::Q5_K, b);
  EXPECT_EQ(v[32], 59.25f);    // fifth bit of sub-block 1 clear
  EXPECT_EQ(v[160], 404.75f);  // 0.5 * 39 * (5 + 16) - 0.25 * 19
  EXPECT_EQ(v[191], 307.25f);  // 0.5 * 39 * 16 - 4.75
  EXPECT_EQ(v[161], -4.75f);
}

TEST(KnownBlocks, Q6_K) {
  BlockQ6_K b{};
  b.scale = kHalfQuarter;
  b.scales[0] = -3;
  b.scales[10] = 5;
  b.scales[15] = 127;
  b.low[0] = 0x0f;    // value 0: low 4 bits 15
  b.high[0] = 0x03;   // value 0: high 2 bits 3, so code 63
  b.low[106] = 0x01;  // value 170 = 128 + 32 * 1 + 10: low[64 + 32 + 10], low nibble
  b.low[127] = 0xa0;  // value 255 = 128 + 32 * 3 + 31: low[64 + 32 + 31], high nibble
  b.high[63] = 0x80;  // value 255: bits 6-7 of high[32 + 31] = 2
  const auto v = decode(WeightType::Q6_K, b);
  EXPECT_EQ(v[0], -23.25f);    // 0.25 * -3 * (63 - 32)
  EXPECT_EQ(v[170], -38.75f);  // 0.25 * 5 * (1 - 32)
  EXPECT_EQ(v[255], 317.5f);   // 0.25 * 127 * (42 - 32)
  EXPECT_EQ(v[1], 24.0f);      // 0.25 * -3 * (0 - 32)
}

TEST(KnownBlocks, FloatTypes) {
  const uint16_t halves[2] = {0xc000, 0x0001};  // -2 and the smallest subnormal
  std::vector<float> out(2);
  dequantize_values(WeightType::F16, reinterpret_cast<const std::byte*>(halves), out.data(), 2);
  EXPECT_EQ(out[0], -2.0f);
  EXPECT_EQ(out[1], 5.9604644775390625e-8f);
  const uint16_t bf[2] = {0x3f80, 0xc2f7};  // 1 and -123.5
  dequantize_values(WeightType::BF16, reinterpret_cast<const std::byte*>(bf), out.data(), 2);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -123.5f);
}

}  // namespace
}  // namespace glass
