#include "kernels/weight_matrix.h"

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/half.h"
#include "kernels/simd_kernels.h"

namespace glass {

namespace {

// Row r (r < w.interleaved_rows()) of an interleaved matrix, block by block.
void dequantize_interleaved_row(const WeightMatrix& w, int64_t r, float* out) {
  const int64_t g = r / kInterleaveRows, i = r % kInterleaveRows;
  for (int64_t b = 0; b < w.cols / kQuantBlock; ++b) {
    const std::byte* block = w.group_block(g, b);
    const float d = f16_to_f32(interleaved_scale(block, i));
    const uint8_t* q = interleaved_quants(block);
    for (int k = 0; k < 32; ++k) out[b * kQuantBlock + k] = static_cast<float>(interleaved_value(w.type, q, i, k)) * d;
  }
}

// Row r's block b of a row-major or interleaved q8_0 / q4_0 matrix: its fp16 scale and its
// 32 values as the integers the scale multiplies (q4_0: nibble - 8).
void block_values(const WeightMatrix& w, int64_t r, int64_t b, uint16_t* scale, int32_t* values) {
  if (r < w.interleaved_rows()) {
    const std::byte* block = w.group_block(r / kInterleaveRows, b);
    *scale = interleaved_scale(block, r % kInterleaveRows);
    for (int k = 0; k < 32; ++k) values[k] = interleaved_value(w.type, interleaved_quants(block), r % kInterleaveRows, k);
  } else if (w.type == WeightType::Q8_0) {
    const auto& src = reinterpret_cast<const BlockQ8_0*>(w.row(r))[b];
    std::memcpy(scale, &src.scale, 2);
    for (int k = 0; k < 32; ++k) values[k] = src.q[k];
  } else {
    const auto& src = reinterpret_cast<const BlockQ4_0*>(w.row(r))[b];
    std::memcpy(scale, &src.scale, 2);
    for (int k = 0; k < 16; ++k) {
      values[k] = (src.q[k] & 0x0f) - 8;
      values[k + 16] = (src.q[k] >> 4) - 8;
    }
  }
}

// Where row i (of its group) value k of a tiled block sits among the block's quants (after
// the 16 scales), and for q4_0 in which nibble.
size_t tiled_quant_byte(WeightType t, int64_t i, int k) {
  return static_cast<size_t>(t == WeightType::Q8_0 ? (k / 4) * 64 + 4 * i + k % 4 : (k / 8) * 64 + 4 * i + k % 4);
}

void dequantize_tiled_row(const WeightMatrix& w, int64_t r, float* out) {
  const int64_t g = r / kTileRows, i = r % kTileRows;
  if (w.type == WeightType::BF16) {
    for (int64_t c = 0; c < w.cols; ++c) {
      const std::byte* tile = tile_block(w, g, c / kTileChunk);
      const int64_t k = c % kTileChunk;
      uint16_t v;
      std::memcpy(&v, tile + (k / 2) * 64 + 4 * i + 2 * (k % 2), 2);
      out[c] = bf16_to_f32(v);
    }
    return;
  }
  for (int64_t b = 0; b < w.cols / kQuantBlock; ++b) {
    uint16_t scale;
    std::memcpy(&scale, tile_scales(w, g, b) + 2 * i, 2);
    const float d = f16_to_f32(scale);
    const auto* q = reinterpret_cast<const uint8_t*>(tile_block(w, g, b));
    for (int k = 0; k < 32; ++k) {
      const uint8_t byte = q[tiled_quant_byte(w.type, i, k)];
      const int32_t v = w.type == WeightType::Q8_0 ? static_cast<int8_t>(byte) : ((k % 8 >= 4 ? byte >> 4 : byte & 0x0f) - 8);
      out[b * kQuantBlock + k] = static_cast<float>(v) * d;
    }
  }
}

}  // namespace

size_t tiled_group_bytes(WeightType t, int64_t cols) {
  const int64_t per = t == WeightType::BF16 ? kTileChunk : kQuantBlock;
  return static_cast<size_t>((cols + per - 1) / per) * tiled_block_bytes(t);
}

std::byte* aligned_bytes(std::unique_ptr<std::byte[]>& storage, size_t bytes) {
  // Not zeroed: a pass over a large matrix would fault in all its pages on one thread before
  // the real writes.
  storage.reset(new std::byte[bytes + 64]);
  const auto address = reinterpret_cast<uintptr_t>(storage.get());
  // Weights in 2 MiB pages where the kernel allows it (transparent huge pages): decode streams
  // every weight once a token, and a TLB miss every 4 KiB cost it about 6% on the AVX-512 VM
  // (docs/performance.md). Only whole huge pages inside the buffer.
  constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  const uintptr_t first = (address + kHugePage - 1) / kHugePage * kHugePage;
  const uintptr_t last = (address + bytes) / kHugePage * kHugePage;
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
  return storage.get() + (64 - address % 64) % 64;
}

size_t tiled_bytes(WeightType t, int64_t rows, int64_t cols) {
  return static_cast<size_t>((rows + kTileRows - 1) / kTileRows) * tiled_group_bytes(t, cols);
}

WeightMatrix tile_rows(const WeightMatrix& w, std::byte* out) {
  const WeightMatrix tw = tiled_view(w, out);
  tile_groups(w, tw, 0, (w.rows + kTileRows - 1) / kTileRows);
  return tw;
}

WeightMatrix tiled_view(const WeightMatrix& w, std::byte* out) {
  if (!tileable(w.type) || w.tiled) fail("tile_rows needs a row-major or interleaved bf16, q8_0 or q4_0 matrix");
  WeightMatrix tw = w;
  tw.data = out;
  tw.interleaved = false;
  tw.tiled = true;
  return tw;
}

void tile_groups(const WeightMatrix& w, const WeightMatrix& tw, int64_t group_begin, int64_t group_end) {
  // Padding rows and columns are zeros (scales 0 for the blocks).
  std::memset(const_cast<std::byte*>(tile_group(tw, group_begin)), 0,
              static_cast<size_t>(group_end - group_begin) * tiled_group_bytes(w.type, w.cols));
  for (int64_t g = group_begin; g < group_end; ++g) {
    const int64_t rows_here = std::min(kTileRows, w.rows - g * kTileRows);
    if (w.type == WeightType::BF16) {
      for (int64_t i = 0; i < rows_here; ++i) {
        const std::byte* src = w.row(g * kTileRows + i);
        const int64_t pairs = w.cols / 2;
        for (int64_t pr = 0; pr < pairs; ++pr) {  // two values (4 bytes) at a time
          const int64_t c = 2 * pr;
          std::memcpy(const_cast<std::byte*>(tile_block(tw, g, c / kTileChunk)) + ((c % kTileChunk) / 2) * 64 + 4 * i,
                      src + 2 * c, 4);
        }
        if (w.cols % 2 != 0) {
          const int64_t c = w.cols - 1;
          std::memcpy(const_cast<std::byte*>(tile_block(tw, g, c / kTileChunk)) + ((c % kTileChunk) / 2) * 64 + 4 * i,
                      src + 2 * c, 2);
        }
      }
      continue;
    }
    for (int64_t b = 0; b < w.cols / kQuantBlock; ++b) {
      auto* scales = const_cast<std::byte*>(tile_scales(tw, g, b));
      auto* q = reinterpret_cast<uint8_t*>(const_cast<std::byte*>(tile_block(tw, g, b)));
      for (int64_t i = 0; i < rows_here; ++i) {
        uint16_t scale;
        int32_t values[32];
        block_values(w, g * kTileRows + i, b, &scale, values);
        std::memcpy(scales + 2 * i, &scale, 2);
        for (int k = 0; k < 32; ++k) {
          uint8_t& byte = q[tiled_quant_byte(w.type, i, k)];
          if (w.type == WeightType::Q8_0) byte = static_cast<uint8_t>(static_cast<int8_t>(values[k]));
          else byte |= static_cast<uint8_t>((values[k] + 8) << (k % 8 >= 4 ? 4 : 0));
        }
      }
      // Padding rows: q4_0 nibbles hold value + 8, so a zero value is nibble 8 (its scale is 0
      // anyway, but the exact int32 dots of the tile kernels then stay small).
      if (w.type == WeightType::Q4_0)
        for (int64_t i = rows_here; i < kTileRows; ++i)
          for (int k = 0; k < 32; ++k) q[tiled_quant_byte(w.type, i, k)] |= static_cast<uint8_t>(8 << (k % 8 >= 4 ? 4 : 0));
    }
  }
}

// Each row's 4-byte pieces of a block go to their places (interleaved_byte) whole; q4_0
// pieces are made of the nibbles of values k and k + 4 of each 8.
void interleave_group(const WeightMatrix& iw, int64_t g, const std::byte* rows) {
  const int64_t blocks = iw.cols / kQuantBlock;
  for (int64_t b = 0; b < blocks; ++b) {
    auto* dst = const_cast<std::byte*>(iw.group_block(g, b));
    auto* q = const_cast<uint8_t*>(interleaved_quants(dst));
    for (int64_t i = 0; i < kInterleaveRows; ++i) {
      const std::byte* row = rows + static_cast<size_t>(i) * iw.row_bytes;
      if (iw.type == WeightType::Q8_0) {
        const auto& src = reinterpret_cast<const BlockQ8_0*>(row)[b];
        std::memcpy(dst + 2 * i, &src.scale, 2);
        for (int c = 0; c < 8; ++c) std::memcpy(q + c * 32 + 4 * i, src.q + 4 * c, 4);
      } else {
        const auto& src = reinterpret_cast<const BlockQ4_0*>(row)[b];
        std::memcpy(dst + 2 * i, &src.scale, 2);
        // Value k is the low nibble of q[k] (k < 16) or the high one of q[k - 16].
        for (int c = 0; c < 4; ++c) {
          for (int j = 0; j < 4; ++j) {
            const int lo_k = 8 * c + j, hi_k = lo_k + 4;
            const int lo = lo_k < 16 ? (src.q[lo_k] & 0x0f) : (src.q[lo_k - 16] >> 4);
            const int hi = hi_k < 16 ? (src.q[hi_k] & 0x0f) : (src.q[hi_k - 16] >> 4);
            q[c * 32 + 4 * i + j] = static_cast<uint8_t>(lo | (hi << 4));
          }
        }
      }
    }
  }
}

namespace {

// Groups [g0, g1) of interleave_rows.
void interleave_groups(const WeightMatrix& w, const WeightMatrix& iw, int64_t g0, int64_t g1) {
  for (int64_t g = g0; g < g1; ++g) interleave_group(iw, g, w.row(g * kInterleaveRows));
}

}  // namespace

WeightMatrix interleave_rows(const WeightMatrix& w, std::byte* out) {
  if (!interleavable(w.type) || w.interleaved || w.tiled) fail("interleave_rows needs a row-major q8_0 or q4_0 matrix");
  WeightMatrix iw = w;
  iw.data = out;
  iw.interleaved = true;
  const int64_t grouped = iw.interleaved_rows();
  const int64_t groups = grouped / kInterleaveRows;
  // Groups are independent: a few threads make loading a large model that much faster.
  const int64_t workers = conversion_threads(groups);
  {
    std::vector<std::jthread> threads;
    for (int64_t i = 1; i < workers; ++i)
      threads.emplace_back([&, i] { interleave_groups(w, iw, groups * i / workers, groups * (i + 1) / workers); });
    interleave_groups(w, iw, 0, groups / workers);
  }
  std::memcpy(out + static_cast<size_t>(grouped) * w.row_bytes, w.row(grouped),
              static_cast<size_t>(w.rows - grouped) * w.row_bytes);
  return iw;
}

namespace {
// One group of a row (n blocks), from the row-major blocks at `blocks` to `out`. A block holds
// its fp16 scale, then its fp16 min (q4_1, q5_1), its 4 bytes of fifth bits (q5_0, q5_1) and
// its 16 bytes of nibbles (quant/blocks.h).
void lane_block_group(WeightType t, const std::byte* blocks, int64_t n, std::byte* out) {
  if (n <= 0 || n > kLaneBlocks) fail("lane_block_group: a group holds 1 to ", kLaneBlocks, " blocks, not ", n);
  const size_t block = traits(t).block_bytes;
  const LaneGroupOffsets at = lane_group_offsets(t, n);
  for (int64_t i = 0; i < n; ++i) std::memcpy(out + 2 * i, blocks + i * block, 2);
  if (block_has_min(t))
    for (int64_t i = 0; i < n; ++i) std::memcpy(out + at.mins + 2 * i, blocks + i * block + 2, 2);
  if (block_has_fifth_bits(t)) {  // the 4 bits of values 4k .. 4k + 3 of block i go to bits k 4n + 4i .. + 3
    std::byte* masks = out + at.masks;
    std::memset(masks, 0, static_cast<size_t>(4 * n));  // n <= 16
    for (int64_t i = 0; i < n; ++i) {
      uint32_t high;
      std::memcpy(&high, blocks + i * block + (block_has_min(t) ? 4 : 2), 4);
      for (int64_t k = 0; k < 8; ++k) {
        const int64_t bit = k * 4 * n + 4 * i;
        masks[bit / 8] |= std::byte{static_cast<uint8_t>(((high >> (4 * k)) & 0x0f) << (bit % 8))};
      }
    }
  }
  for (int64_t j = 0; j < 4; ++j)
    for (int64_t i = 0; i < n; ++i) std::memcpy(out + at.nibbles + 4 * n * j + 4 * i, blocks + i * block + block - 16 + 4 * j, 4);
}

// A k-quant super-block's codes, moved between row-major and lane order (weight_matrix.h) a run
// of 16 values j (values 16j .. 16j + 15) at a time, 8 values to a 64-bit word.
//
// Where run j's low 4 bits lie in a row-major block: the nibble at `shift` of 16 bytes from
// `byte` (of q4_K's / q5_K's q, of q6_K's low).
struct NibbleRun {
  size_t byte;
  int shift;
};
NibbleRun row_major_nibbles(WeightType t, int j) {
  if (t == WeightType::Q6_K) return {static_cast<size_t>(64 * (j / 8) + 32 * ((j / 2) % 2) + 16 * (j % 2)), 4 * ((j / 4) % 2)};
  return {static_cast<size_t>(32 * (j / 4) + 16 * (j % 2)), 4 * ((j / 2) % 2)};
}
// Where run j's high 2 bits lie in a row-major q6_K block (value 128h + 32k + l's at bits 2k of
// high[32h + l]): the pair at `shift` of 16 bytes from `byte` of high.
NibbleRun row_major_high_pairs(int j) { return {static_cast<size_t>(32 * (j / 8) + 16 * (j % 2)), 2 * ((j % 8) / 2)}; }
uint64_t load64(const std::byte* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
uint32_t load32(const std::byte* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
void or64(std::byte* p, uint64_t v) {
  const uint64_t old = load64(p);
  v |= old;
  std::memcpy(p, &v, 8);
}
void store32(std::byte* p, uint32_t v) { std::memcpy(p, &v, 4); }
// Bit i of x at bit 8i, and back: the bits of a q5_K byte (row-major: bit i of high_bits[l] is
// value 32i + l's fifth bit) against the lane masks (bit p of the 256: position p's).
constexpr std::array<uint64_t, 256> kSpreadBits = [] {
  std::array<uint64_t, 256> t{};
  for (int x = 0; x < 256; ++x)
    for (int i = 0; i < 8; ++i) t[static_cast<size_t>(x)] |= static_cast<uint64_t>((x >> i) & 1) << (8 * i);
  return t;
}();
uint8_t gather_bits(uint64_t y) {  // bit 8i of y at bit i: each lands at 56 + i, no carries
  return static_cast<uint8_t>(((y & 0x0101010101010101ull) * 0x0102040810204080ull) >> 56);
}
// The byte offsets of a super-block's code fields: the low nibbles, q5_K's fifth bits, q6_K's high bits.
struct KCodeFields {
  size_t low, fifth, high;
};
KCodeFields kcode_fields(WeightType t) {
  if (t == WeightType::Q4_K) return {offsetof(BlockQ4_K, q), 0, 0};
  if (t == WeightType::Q5_K) return {offsetof(BlockQ5_K, q), offsetof(BlockQ5_K, high_bits), 0};
  return {offsetof(BlockQ6_K, low), 0, offsetof(BlockQ6_K, high)};
}

void lane_kquant_block(WeightType t, const std::byte* in, std::byte* out) {
  const size_t bytes = traits(t).block_bytes;
  const KCodeFields at = kcode_fields(t);
  std::memcpy(out, in, bytes);  // the scales; the codes are overwritten
  constexpr uint64_t kNibbles = 0x0f0f0f0f0f0f0f0full, kPairs = 0x0303030303030303ull;
  for (int j = 0; j < 16; ++j) {
    // Value 16j + 4k + b to q[64(k / 2) + 4j + b], nibble k % 2: values 16j + 8h .. + 3 low and
    // 16j + 8h + 4 .. + 7 high in vector h.
    const NibbleRun run = row_major_nibbles(t, j);
    for (int h = 0; h < 2; ++h) {
      const uint64_t n = (load64(in + at.low + run.byte + 8 * h) >> run.shift) & kNibbles;
      store32(out + at.low + 64 * h + 4 * j, static_cast<uint32_t>(n | ((n >> 32) << 4)));
    }
  }
  if (t == WeightType::Q5_K) {  // row-major: bit i of high_bits[l] for value 32i + l, run j's at
                                // bit j / 2 of bytes 16(j % 2) ..
    uint64_t masks[4] = {};
    for (int l = 0; l < 32; ++l) {  // value 32i + l = 16j + 4k + b: j = 2i + l / 16, k = (l % 16) / 4, b = l % 4
      const uint64_t spread = kSpreadBits[static_cast<uint8_t>(in[at.fifth + static_cast<size_t>(l)])];  // bit i at 8i
      masks[(l % 16) / 4] |= spread << (4 * (l / 16) + l % 4);                                          // p % 64 = 4j + b
    }
    std::memcpy(out + at.fifth, masks, 32);
  }
  if (t == WeightType::Q6_K) {
    for (int j = 0; j < 16; ++j) {
      const NibbleRun run = row_major_high_pairs(j);
      const uint64_t lo = (load64(in + at.high + run.byte) >> run.shift) & kPairs;
      const uint64_t hi = (load64(in + at.high + run.byte + 8) >> run.shift) & kPairs;
      store32(out + at.high + 4 * j, static_cast<uint32_t>(lo | ((lo >> 32) << 2) | (hi << 4) | ((hi >> 32) << 6)));
    }
  }
}

void unlane_kquant_block(WeightType t, const std::byte* in, std::byte* out) {
  const size_t bytes = traits(t).block_bytes;
  const KCodeFields at = kcode_fields(t);
  std::memcpy(out, in, bytes);
  std::memset(out + at.low, 0, 128);
  if (t == WeightType::Q6_K) std::memset(out + at.high, 0, 64);
  for (int j = 0; j < 16; ++j) {
    const NibbleRun run = row_major_nibbles(t, j);
    for (int h = 0; h < 2; ++h) {
      const uint32_t d = load32(in + at.low + 64 * h + 4 * j);
      const uint64_t n = (d & 0x0f0f0f0fu) | (static_cast<uint64_t>((d >> 4) & 0x0f0f0f0fu) << 32);
      or64(out + at.low + run.byte + 8 * h, n << run.shift);
    }
  }
  if (t == WeightType::Q5_K) {
    uint64_t masks[4];
    std::memcpy(masks, in + at.fifth, 32);
    for (int l = 0; l < 32; ++l)
      out[at.fifth + static_cast<size_t>(l)] = std::byte{gather_bits(masks[(l % 16) / 4] >> (4 * (l / 16) + l % 4))};
  }
  if (t == WeightType::Q6_K) {
    for (int j = 0; j < 16; ++j) {
      const uint32_t d = load32(in + at.high + 4 * j);
      const uint64_t lo = (d & 0x03030303u) | (static_cast<uint64_t>((d >> 2) & 0x03030303u) << 32);
      const uint64_t hi = ((d >> 4) & 0x03030303u) | (static_cast<uint64_t>((d >> 6) & 0x03030303u) << 32);
      const NibbleRun run = row_major_high_pairs(j);
      or64(out + at.high + run.byte, lo << run.shift);
      or64(out + at.high + run.byte + 8, hi << run.shift);
    }
  }
}
}  // namespace

void lane_block_row(WeightType t, int64_t cols, const std::byte* row_major, std::byte* out) {
  const size_t block = traits(t).block_bytes;
  if (traits(t).activation == ActivationFormat::Int12x256) {
    for (int64_t b = 0; b < cols / kSuperBlock; ++b) lane_kquant_block(t, row_major + b * block, out + b * block);
    return;
  }
  const int64_t nb = cols / kQuantBlock;
  for (int64_t b = 0; b < nb; b += kLaneBlocks)
    lane_block_group(t, row_major + b * block, std::min(kLaneBlocks, nb - b), out + b * block);
}

void unlane_block_row(WeightType t, int64_t cols, const std::byte* lanes, std::byte* row_major) {
  const size_t block = traits(t).block_bytes;
  if (traits(t).activation == ActivationFormat::Int12x256) {
    for (int64_t b = 0; b < cols / kSuperBlock; ++b) unlane_kquant_block(t, lanes + b * block, row_major + b * block);
    return;
  }
  const int64_t nb = cols / kQuantBlock;
  for (int64_t g = 0; g < nb; g += kLaneBlocks) {
    const int64_t n = std::min(kLaneBlocks, nb - g);
    const std::byte* p = lanes + g * block;
    const LaneGroupOffsets at = lane_group_offsets(t, n);
    for (int64_t i = 0; i < n; ++i) {
      std::byte* b = row_major + (g + i) * block;
      std::memcpy(b, p + 2 * i, 2);
      if (block_has_min(t)) std::memcpy(b + 2, p + at.mins + 2 * i, 2);
      if (block_has_fifth_bits(t)) {
        uint32_t high = 0;
        for (int64_t k = 0; k < 8; ++k) {
          const int64_t bit = k * 4 * n + 4 * i;
          high |= ((static_cast<uint32_t>(p[at.masks + bit / 8]) >> (bit % 8)) & 0x0f) << (4 * k);
        }
        std::memcpy(b + (block_has_min(t) ? 4 : 2), &high, 4);
      }
      for (int64_t j = 0; j < 4; ++j) std::memcpy(b + block - 16 + 4 * j, p + at.nibbles + 4 * n * j + 4 * i, 4);
    }
  }
}

namespace {
// Rows of w converted one by one into `out` by row(type, cols, in, out), a few threads at once.
WeightMatrix relay_rows(const WeightMatrix& w, std::byte* out, bool lanes,
                        void (*row)(WeightType, int64_t, const std::byte*, std::byte*)) {
  WeightMatrix lw = w;
  lw.data = out;
  lw.block_lanes = lanes;
  const int64_t workers = conversion_threads(w.rows / 256);
  auto rows = [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) row(w.type, w.cols, w.row(r), out + static_cast<size_t>(r) * w.row_bytes);
  };
  {
    std::vector<std::jthread> threads;
    for (int64_t i = 1; i < workers; ++i) threads.emplace_back(rows, w.rows * i / workers, w.rows * (i + 1) / workers);
    rows(0, w.rows / workers);
  }
  return lw;
}
}  // namespace

WeightMatrix lane_block_rows(const WeightMatrix& w, std::byte* out) {
  if (!lane_blockable(w.type) || w.block_lanes)
    fail("lane_block_rows needs a row-major q4_1, q5_0, q5_1, q4_K, q5_K or q6_K matrix");
  return relay_rows(w, out, true, lane_block_row);
}

WeightMatrix unlane_block_rows(const WeightMatrix& w, std::byte* out) {
  if (!w.block_lanes) fail("unlane_block_rows needs a matrix in the lane layout");
  return relay_rows(w, out, false, unlane_block_row);
}

void dequantize_row(const WeightMatrix& w, int64_t r, float* out) {
  if (w.tiled) {
    dequantize_tiled_row(w, r, out);
    return;
  }
  if (r < w.interleaved_rows()) {
    dequantize_interleaved_row(w, r, out);
    return;
  }
  if (w.block_lanes) {
    std::vector<std::byte> row(w.row_bytes);
    unlane_block_row(w.type, w.cols, w.row(r), row.data());
    decode_values(w.type, row.data(), out, w.cols);
    return;
  }
  decode_values(w.type, w.row(r), out, w.cols);
}

void decode_values(WeightType t, const std::byte* src, float* out, int64_t count) {
  if (!simd::widen_to_float(t, src, out, count)) dequantize_values(t, src, out, count);
}

int64_t conversion_threads(int64_t units) {
  return std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, std::clamp<int64_t>(units, 1, 8));
}

void quantize_row(WeightType t, const float* in, int64_t cols, std::byte* out) {
  const int64_t block = traits(t).block_values;
  if (cols % block == 0 && simd::quantize_blocks(t, in, out, cols / block)) return;
  quantize_values(t, in, out, cols);
}

}  // namespace glass
