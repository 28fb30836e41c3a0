// A weight matrix as the kernels see it: rows of `cols` values in one of the
// supported encodings. Row r starts at data + r * row_bytes, unless the matrix is
// block-quantized and interleaved (see below).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "quant/blocks.h"
#include "quant/weight_type.h"

namespace glass {

// Interleaved block-quantized layout of q8_0 and q4_0 (llama.cpp calls this repacking):
// rows come in groups of kInterleaveRows. A group takes the space of its rows, and holds, block by
// block, the group's 8 fp16 scales (16 bytes) and then its quants, so that one 32-byte
// load carries 4 consecutive values of each of the 8 rows:
//   q8_0: 8 slices s = 0..7 of 32 bytes; byte 4r + j of slice s is row r's value 4s + j.
//   q4_0: 4 slices i = 0..3 of 32 bytes of unsigned nibbles (value + 8); byte 4r + j of
//         slice i holds row r's value 8i + j in its low nibble and 8i + 4 + j in its high.
// The values and scales are exactly those of the row-major blocks. Rows past the last
// whole group stay row-major at data + r * row_bytes.
inline constexpr int64_t kInterleaveRows = 8;
inline bool interleavable(WeightType t) { return t == WeightType::Q8_0 || t == WeightType::Q4_0; }

struct WeightMatrix {
  WeightType type = WeightType::F32;
  const std::byte* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  size_t row_bytes = 0;
  bool interleaved = false;

  // Row r's bytes; for an interleaved matrix only rows >= interleaved_rows().
  const std::byte* row(int64_t r) const { return data + static_cast<size_t>(r) * row_bytes; }
  size_t bytes() const { return static_cast<size_t>(rows) * row_bytes; }
  int64_t interleaved_rows() const { return interleaved ? rows / kInterleaveRows * kInterleaveRows : 0; }
  // Group g's block b: 8 scales, then the quants.
  const std::byte* group_block(int64_t g, int64_t b) const {
    return data + static_cast<size_t>(g * kInterleaveRows) * row_bytes +
           static_cast<size_t>(b * kInterleaveRows) * (row_bytes / static_cast<size_t>(cols / kQuantBlock));
  }
};

// Inside one interleaved block (WeightMatrix::group_block): row i's fp16 scale, and
// where its value k (0..31) sits in the quants that follow the scales.
inline uint16_t interleaved_scale(const std::byte* block, int64_t i) {
  uint16_t scale;
  std::memcpy(&scale, block + 2 * i, 2);
  return scale;
}
inline const uint8_t* interleaved_quants(const std::byte* block) {
  return reinterpret_cast<const uint8_t*>(block + 2 * kInterleaveRows);
}
inline int64_t interleaved_byte(WeightType t, int64_t i, int k) {
  return (t == WeightType::Q8_0 ? (k / 4) * 32 : (k / 8) * 32) + 4 * i + k % 4;
}
inline bool interleaved_high_nibble(int k) { return k % 8 >= 4; }  // q4_0 only
// Row i's value k as the integer its scale multiplies (q4_0: nibble - 8).
inline int32_t interleaved_value(WeightType t, const uint8_t* quants, int64_t i, int k) {
  const uint8_t byte = quants[interleaved_byte(t, i, k)];
  if (t == WeightType::Q8_0) return static_cast<int8_t>(byte);
  return (interleaved_high_nibble(k) ? byte >> 4 : byte & 0x0f) - 8;
}

// Decodes row `r` into `out[cols]`.
void dequantize_row(const WeightMatrix& w, int64_t r, float* out);

// Writes the interleaved form of a row-major block-quantized matrix into `out`
// (w.bytes() bytes) and returns the matrix that views it.
WeightMatrix interleave_rows(const WeightMatrix& w, std::byte* out);

// Encodes `cols` floats into one row of type `t` at `out` (weight_row_bytes(t, cols) bytes).
// Block types round as llama.cpp's reference quantizers do (quant/weight_type.h).
void quantize_row(WeightType t, const float* in, int64_t cols, std::byte* out);

}  // namespace glass
