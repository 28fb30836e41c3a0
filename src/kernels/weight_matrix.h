// A weight matrix as the kernels see it: rows of `cols` values in one of the
// supported encodings. Row r starts at data + r * row_bytes, unless the matrix is
// block-quantized and interleaved (see below).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
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

// Tiled layout of the AMX kernels (amx_kernels.h): rows in groups of kTileRows, the last group
// padded with zero rows, each group stored whole before the next (a decode step streams it;
// a weight tile is one tileloadd):
//   bf16: the group's columns in chunks of kTileChunk (the last padded with zeros), each chunk
//         one 1 KiB tile of 16 lines of 64 bytes; line k2 holds, for each row i of the group,
//         the chunk's values 2 k2 and 2 k2 + 1 at bytes 4 i .. 4 i + 3 (the pairs tdpbf16ps
//         multiplies).
//   q8_0, q4_0: the quants of every block of 32 values, then the 16 fp16 scales of every
//         block (32 bytes each), so that the quants of a group whose block count is even start
//         on a cache line like the group (tile loads of split lines are slower). Per block:
//         q8_0: 8 lines s of 64 bytes; byte 4 i + j of line s is row i's value 4 s + j (the
//               block's int8 tile as tdpbssd reads it);
//         q4_0: 4 lines s of 64 bytes of unsigned nibbles (value + 8); byte 4 i + j of line s
//               holds row i's value 8 s + j in its low nibble and 8 s + 4 + j in its high.
// The values and scales are exactly those of the row-major matrix. Tiled matrices are
// allocated on 64-byte boundaries (aligned_bytes).
inline constexpr int64_t kTileRows = 16;
inline constexpr int64_t kTileChunk = 32;
inline bool tileable(WeightType t) { return t == WeightType::BF16 || interleavable(t); }
// Bytes of one group of kTileRows rows, and of a whole rows x cols matrix, tiled.
size_t tiled_group_bytes(WeightType t, int64_t cols);
size_t tiled_bytes(WeightType t, int64_t rows, int64_t cols);
// `bytes` bytes starting on a 64-byte boundary inside `storage` (allocated 64 bytes larger),
// left unwritten for the caller to fill; its whole 2 MiB pages are advised MADV_HUGEPAGE.
// Every weight matrix glass lays out or converts into memory of its own comes from here.
std::byte* aligned_bytes(std::unique_ptr<std::byte[]>& storage, size_t bytes);

// Lane layout of q4_1, q5_0 and q5_1 (`block_lanes`): each row's 32-value blocks in groups
// of kLaneBlocks, a group's blocks across the 32-bit lanes of one vector, so that a vpdpbusd
// multiplies 4 values of each of 16 blocks and each lane sums one block (simd_lane_dot.inc).
// A row takes the space of its row-major form, and its group k the space of blocks
// 16k .. 16k + n - 1 (n = 16, or fewer for the row's last group), holding:
//   the n fp16 scales (2n bytes); q4_1, q5_1: the n fp16 mins (2n bytes);
//   q5_0, q5_1: the fifth bits (4n bytes) as 8 masks of 4n bits one after another, bits
//     k 4n + 4i + j being block i's value 4k + j;
//   the packed nibbles (16n bytes) as 4 vectors of 4n bytes: bytes 4i .. 4i + 3 of vector j
//     are block i's bytes 4j .. 4j + 3 (low nibbles values 4j .., high nibbles 16 + 4j ..).
// The values, scales and mins are exactly those of the row-major blocks.
//
// Lane layout of q4_K, q5_K and q6_K: each super-block keeps its size, its place and every
// field but the codes', whose bytes are reordered so that a 64-byte vector holds 4 values of
// each of 16 runs of 16 values, a run a 32-bit lane, so that each lane of a vpdpbusd sums
// within one sub-block (simd_kquant_dot.inc). Value 16j + 4k + b (j < 16, k, b < 4) has lane
// position p = 64k + 4j + b:
//   q4_K, q5_K: the low 4 bits of the value at position p in q[64(k / 2) + 4j + b], the low
//     nibble for even k; q5_K: its fifth bit is bit p of high_bits (bit p % 8 of byte p / 8);
//   q6_K: the low 4 bits as q4_K's, in low; the high 2 bits at bits 2k of high[4j + b].
// Lane order is also the order of the AVX-512 kernels' k-quant activations (simd::KActBlock).
inline constexpr int64_t kLaneBlocks = 16;
inline bool lane_blockable(WeightType t) {
  return t == WeightType::Q4_1 || t == WeightType::Q5_0 || t == WeightType::Q5_1 || t == WeightType::Q4_K ||
         t == WeightType::Q5_K || t == WeightType::Q6_K;
}
// The value at lane position p of a q4_K / q5_K / q6_K super-block.
constexpr int kquant_lane_value(int p) { return 16 * ((p % 64) / 4) + 4 * (p / 64) + p % 4; }
// Where a group of n blocks holds its fields, in bytes from its start (the scales at 0).
struct LaneGroupOffsets {
  int64_t mins, masks, nibbles;
};
constexpr LaneGroupOffsets lane_group_offsets(WeightType t, int64_t n) {
  const int64_t mins = 2 * n, masks = mins + (block_has_min(t) ? 2 * n : 0);
  return {mins, masks, masks + (block_has_fifth_bits(t) ? 4 * n : 0)};
}
// One row (cols values) of a lane-blockable type from row-major into the lane layout, and back.
void lane_block_row(WeightType t, int64_t cols, const std::byte* row_major, std::byte* out);
void unlane_block_row(WeightType t, int64_t cols, const std::byte* lanes, std::byte* row_major);

struct WeightMatrix {
  WeightType type = WeightType::F32;
  const std::byte* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  size_t row_bytes = 0;  // of the row-major form
  bool interleaved = false;
  bool tiled = false;
  bool block_lanes = false;  // rows in the lane layout (above)

  // Row r's bytes; for an interleaved matrix only rows >= interleaved_rows(), never for a tiled one.
  const std::byte* row(int64_t r) const { return data + static_cast<size_t>(r) * row_bytes; }
  size_t bytes() const { return tiled ? tiled_bytes(type, rows, cols) : static_cast<size_t>(rows) * row_bytes; }
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

inline size_t tiled_quant_bytes(WeightType t);
// Tiled: group g (rows 16 g .. 16 g + 15); its bf16 chunk c or its q8_0 / q4_0 block b.
inline const std::byte* tile_group(const WeightMatrix& w, int64_t g) {
  return w.data + static_cast<size_t>(g) * tiled_group_bytes(w.type, w.cols);
}
inline size_t tiled_block_bytes(WeightType t) {  // one chunk (bf16) or block (q8_0, q4_0) of a group
  return t == WeightType::BF16 ? 2 * kTileRows * kTileChunk : 2 * kTileRows + tiled_quant_bytes(t);
}
inline size_t tiled_quant_bytes(WeightType t) { return (t == WeightType::Q8_0 ? 32 : 16) * kTileRows; }
// bf16: chunk b's tile. q8_0 / q4_0: block b's quants, and its 16 scales.
inline const std::byte* tile_block(const WeightMatrix& w, int64_t g, int64_t b) {
  return tile_group(w, g) + static_cast<size_t>(b) * (w.type == WeightType::BF16 ? tiled_block_bytes(w.type)
                                                                                 : tiled_quant_bytes(w.type));
}
inline const std::byte* tile_scales(const WeightMatrix& w, int64_t g, int64_t b) {
  return tile_group(w, g) + static_cast<size_t>(w.cols / kQuantBlock) * tiled_quant_bytes(w.type) +
         static_cast<size_t>(b) * 2 * kTileRows;
}

// Decodes row `r` into `out[cols]`.
void dequantize_row(const WeightMatrix& w, int64_t r, float* out);

// quant's dequantize_values, with bf16 / f16 widened by the SIMD kernels: `count` values
// of type `t` from `src` into floats (dequantize_row's and glass convert's decoding).
void decode_values(WeightType t, const std::byte* src, float* out, int64_t count);

// Threads for converting or laying out `units` independent pieces (rows, groups) at load:
// the CPUs, at most 8 and at most one per unit, at least 1.
int64_t conversion_threads(int64_t units);

// Writes the interleaved form of a row-major block-quantized matrix into `out`
// (w.bytes() bytes) and returns the matrix that views it.
WeightMatrix interleave_rows(const WeightMatrix& w, std::byte* out);
// Group g of the interleaved matrix `iw` (its data allocated, row_bytes as row-major) from
// the group's kInterleaveRows rows, row-major at `rows`: for converting straight into the
// layout, a group at a time.
void interleave_group(const WeightMatrix& iw, int64_t g, const std::byte* rows);

// What the SIMD kernels multiply w with: its type's format (quant/weight_type.h), but floats
// for q4_1 / q5_0 / q5_1 rows not in the lane layout (whose integer kernels need it).
inline ActivationFormat activation_format(const WeightMatrix& w) {
  const ActivationFormat format = traits(w.type).activation;
  return format == ActivationFormat::Int12x32 && !w.block_lanes ? ActivationFormat::Float : format;
}

// Writes the lane layout of a row-major lane-blockable matrix into `out` (w.bytes() bytes)
// and returns the matrix that views it; unlane_block_rows the way back.
WeightMatrix lane_block_rows(const WeightMatrix& w, std::byte* out);
WeightMatrix unlane_block_rows(const WeightMatrix& w, std::byte* out);

// Writes the tiled form of a row-major or interleaved bf16 / q8_0 / q4_0 matrix into `out`
// (tiled_bytes bytes) and returns the matrix that views it.
WeightMatrix tile_rows(const WeightMatrix& w, std::byte* out);
// The same in parts (groups of kTileRows rows may be written in parallel): the tiled matrix
// over `out`, then groups [group_begin, group_end) of it.
WeightMatrix tiled_view(const WeightMatrix& w, std::byte* out);
void tile_groups(const WeightMatrix& w, const WeightMatrix& tiled, int64_t group_begin, int64_t group_end);

// Encodes `cols` floats into one row of type `t` at `out` (weight_row_bytes(t, cols) bytes).
// Block types round as llama.cpp's reference quantizers do (quant/weight_type.h).
void quantize_row(WeightType t, const float* in, int64_t cols, std::byte* out);

}  // namespace glass
