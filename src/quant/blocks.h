// The block layouts of llama.cpp's quantized types (ggml-common.h), byte for byte. Scales
// are IEEE halves (fp16) held as their bits. docs/formats.md ("Weight types") gives each
// type's reconstruction formula; the codecs (codecs_legacy.cpp, codecs_kquants.cpp)
// implement it.
#pragma once

#include <cstdint>
#include <type_traits>

#include "quant/weight_type.h"

namespace glass {

inline constexpr int64_t kQuantBlock = 32;   // values per block of the 32-value types
inline constexpr int64_t kSuperBlock = 256;  // values per super-block of the k-quants

// ---- 32-value blocks. Where a byte holds two 4-bit quants, its low nibble is value j and
// its high nibble value j + 16; a fifth bit, where there is one, is bit j of `high_bits`
// (a little-endian 32-bit word) for value j.

struct BlockQ8_0 {
  uint16_t scale;  // fp16
  int8_t q[32];    // value = q * scale
};
struct BlockQ4_0 {
  uint16_t scale;  // fp16
  uint8_t q[16];   // low nibble: value j, high nibble: value j + 16; value = (nibble - 8) * scale
};
struct BlockQ4_1 {
  uint16_t scale;  // fp16
  uint16_t min;    // fp16
  uint8_t q[16];   // value = nibble * scale + min
};
struct BlockQ5_0 {
  uint16_t scale;        // fp16
  uint8_t high_bits[4];  // the fifth bit of each value
  uint8_t q[16];         // value = (nibble | high bit << 4) - 16) * scale
};
struct BlockQ5_1 {
  uint16_t scale;  // fp16
  uint16_t min;    // fp16
  uint8_t high_bits[4];
  uint8_t q[16];  // value = (nibble | high bit << 4) * scale + min
};
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24);

// ---- k-quants: 256-value super-blocks made of 16 sub-blocks of 16 values (Q2_K, Q3_K,
// Q6_K) or 8 of 32 (Q4_K, Q5_K). Each sub-block has a small integer scale (and, for the
// types with a min, a small integer min), itself scaled by the super-block's fp16 `scale`
// (and `min_scale`).

// 2 bits per value. Sub-block s (values 16s..16s+15): scale = scale * (scales[s] & 15),
// min = min_scale * (scales[s] >> 4); value = scale * q - min. Value v's 2 bits are bits
// 2 * ((v % 128) / 32) of q[32 * (v / 128) + v % 32].
struct BlockQ2_K {
  uint8_t scales[16];
  uint8_t q[64];
  uint16_t scale;      // fp16
  uint16_t min_scale;  // fp16
};

// 3 bits per value: the low 2 as in Q2_K, the third is bit v / 32 of high_bits[v % 32];
// value = sub-block scale * (low2 - (third bit ? 0 : 4)). The 16 signed 6-bit sub-block
// scales (stored + 32) are packed in 12 bytes: the low 4 bits of scale s are the low
// nibble of byte s (s < 8) or the high nibble of byte s - 8; its high 2 bits are bits
// 2 * (s / 4) of byte 8 + s % 4. Sub-block scale = scale * (6-bit value - 32).
struct BlockQ3_K {
  uint8_t high_bits[32];
  uint8_t q[64];
  uint8_t scales[12];
  uint16_t scale;  // fp16
};

// 4 bits per value. 8 sub-blocks of 32, each with a 6-bit scale and a 6-bit min packed in
// 12 bytes (see unpack_scale_min in codecs_kquants.cpp): value = scale * sc * q - min_scale * m.
// Values 64i..64i+31 are the low nibbles of q[32i..32i+31], values 64i+32..64i+63 their high nibbles.
struct BlockQ4_K {
  uint16_t scale;      // fp16
  uint16_t min_scale;  // fp16
  uint8_t scales[12];
  uint8_t q[128];
};

// 5 bits per value: the low 4 as in Q4_K, the fifth is bit v / 32 of high_bits[v % 32].
struct BlockQ5_K {
  uint16_t scale;      // fp16
  uint16_t min_scale;  // fp16
  uint8_t scales[12];
  uint8_t high_bits[32];
  uint8_t q[128];
};

// 6 bits per value, signed (stored + 32); 16 sub-blocks of 16 with signed 8-bit scales:
// value = scale * scales[v / 16] * (q - 32). In each half h of 128 values, value
// 128h + 32k + l (k < 4, l < 32) has its low 4 bits in low[64h + 32(k % 2) + l] (low
// nibble for k < 2, high for k >= 2) and its high 2 bits at bits 2k of high[32h + l].
struct BlockQ6_K {
  uint8_t low[128];
  uint8_t high[64];
  int8_t scales[16];
  uint16_t scale;  // fp16
};
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210);

// The block of q4_1, q5_0 or q5_1, and its fields beyond the scale: a min (q4_1, q5_1:
// value = d code + m) and fifth bits (q5_0, q5_1: 5-bit codes).
template <WeightType T>
using Block32WithBits = std::conditional_t<T == WeightType::Q4_1, BlockQ4_1,
                                           std::conditional_t<T == WeightType::Q5_0, BlockQ5_0, BlockQ5_1>>;
constexpr bool block_has_min(WeightType t) { return t == WeightType::Q4_1 || t == WeightType::Q5_1; }
constexpr bool block_has_fifth_bits(WeightType t) { return t == WeightType::Q5_0 || t == WeightType::Q5_1; }

// The block of q4_K, q5_K or q6_K, for the kernels that read those types' super-blocks.
template <WeightType T>
using KQuantBlock = std::conditional_t<T == WeightType::Q4_K, BlockQ4_K,
                                       std::conditional_t<T == WeightType::Q5_K, BlockQ5_K, BlockQ6_K>>;
// q4_K and q5_K: 8 sub-blocks of 32 with a scale and a min each; q6_K: 16 of 16, scales only.
constexpr bool kquant_has_mins(WeightType t) { return t == WeightType::Q4_K || t == WeightType::Q5_K; }

// Q4_K / Q5_K: sub-block j's 6-bit scale and min in the 12 scale bytes. Bytes 0-3 hold
// scales 0-3 and bytes 4-7 mins 0-3 in their low 6 bits; bytes 8-11 hold the low 4 bits
// of scales 4-7 (low nibble) and mins 4-7 (high nibble), whose top 2 bits sit in the top
// bits of bytes 0-3 (scales) and 4-7 (mins).
struct ScaleMin {
  uint8_t scale, min;
};
inline ScaleMin unpack_scale_min(const uint8_t* packed, int j) {
  if (j < 4) return {static_cast<uint8_t>(packed[j] & 63), static_cast<uint8_t>(packed[j + 4] & 63)};
  return {static_cast<uint8_t>((packed[j + 4] & 0x0f) | ((packed[j - 4] >> 6) << 4)),
          static_cast<uint8_t>((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4))};
}

// Q3_K: sub-block j's 6-bit scale (stored + 32), unpacked and made signed.
inline int unpack_q3_scale(const uint8_t* packed, int j) {
  const int low = j < 8 ? packed[j] & 0x0f : packed[j - 8] >> 4;
  const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | (high << 4)) - 32;
}

}  // namespace glass
