// SIMD kernels, compiled once per CPU target by Highway's foreach_target and
// dispatched at run time. See simd_kernels.h for the contract.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/simd_kernels.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/aligned_allocator.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "base/half.h"
#include "kernels/simd_kernels.h"

// Re-evaluated for each target: the int8 kernels use x86 intrinsics where available.
#undef GLASS_X86_INT8
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#include <immintrin.h>
#define GLASS_X86_INT8 1
#else
#define GLASS_X86_INT8 0
#endif

#ifndef GLASS_SIMD_KERNELS_ONCE
#define GLASS_SIMD_KERNELS_ONCE
namespace glass::simd {
// Activations for the int8 kernels: one block per 32 values.
struct ActBlock {
  float scale;
  int32_t sum;  // of q: the q4_0 kernels multiply unsigned nibbles and subtract 8 * sum
  int8_t q[32];
};
}  // namespace glass::simd
#endif

HWY_BEFORE_NAMESPACE();
namespace glass::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// The one horizontal reduction every matmul tile uses, so every output element is
// summed the same way: lanes first, then the scalar tail, then the bias.
HWY_INLINE float Finish(DF df, VF acc, float tail, const float* bias, int64_t r) {
  float s = hn::GetLane(hn::SumOfLanes(df, acc)) + tail;
  if (bias != nullptr) s += bias[r];
  return s;
}

// Decode streams each matrix once from memory; the hardware prefetcher keeps up with one
// stream but not with eight. Tiles of T == 1 and several rows therefore fetch the next
// tile's bytes (contiguous with theirs) at the rate they read their own.
HWY_INLINE void PrefetchBytes(const std::byte* p, int64_t bytes) {
  for (int64_t off = 0; off < bytes; off += 64) __builtin_prefetch(p + off);
}
// Part `part` of the next tile (parts of `part_bytes`): a decode tile reading its rows one
// part at a time fetches the same share of the next tile's, so the rows after it arrive
// while it computes (the hardware prefetcher alone leaves decode waiting on memory).
HWY_INLINE void PrefetchPart(const std::byte* next, int64_t part, int64_t part_bytes) {
  if (next != nullptr) PrefetchBytes(next + part * part_bytes, part_bytes);
}
template <int R, int T>
HWY_INLINE const std::byte* NextTile(const WeightMatrix& w, int64_t r0) {
  return R > 1 && T == 1 && r0 + 2 * R <= w.rows ? w.row(r0 + R) : nullptr;
}

// ---------------------------------------------------------------- activations

size_t PreparedRowBytes(ActivationFormat format, int64_t cols) {
  switch (format) {
    case ActivationFormat::Int8x32: return static_cast<size_t>(cols / kQuantBlock) * sizeof(ActBlock);
    case ActivationFormat::Int12x32:
      return static_cast<size_t>((cols / kQuantBlock + kLaneBlocks - 1) / kLaneBlocks) * sizeof(LaneActGroup);
    case ActivationFormat::Int12x256: return static_cast<size_t>(cols / kSuperBlock) * sizeof(KActBlock);
    case ActivationFormat::Float: break;
  }
  return static_cast<size_t>(cols) * sizeof(float);
}

// As ggml's quantize_row_q8_0 on x86: the scale amax / 127 rounded to f16 as its blocks
// store it, values multiplied by 127 / amax and rounded to even, so that the products are
// llama.cpp's.
void QuantizeBlock32(const float* v, ActBlock& out) {
  float amax = 0;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(v[j]));
  const float id = amax != 0 ? 127.0f / amax : 0.0f;
  out.scale = f16_to_f32(f32_to_f16(amax / 127.0f));
  int32_t sum = 0;
  for (int j = 0; j < 32; ++j) {
    out.q[j] = static_cast<int8_t>(std::nearbyint(v[j] * id));
    sum += out.q[j];
  }
  out.sum = sum;
}

// The layout this target's k-quant kernels read (simd_kquant_dot.inc): lanes on AVX-512,
// row-major elsewhere; the activations follow it (KActBlock).
constexpr bool kKQuantLanes = GLASS_X86_INT8 && HWY_TARGET <= HWY_AVX3;

// 256 values as KActBlock says. The rounding is to nearest even, vectorized; on AVX-512 the
// values then go into lane order (kquant_act_to_lane_order).
void QuantizeKBlock(const float* v, KActBlock& out) {
  const DF df;
  const hn::RebindToSigned<DF> di;
  const auto L = static_cast<int64_t>(hn::Lanes(df));
  VF amax = hn::Zero(df);
  for (int64_t j = 0; j < kSuperBlock; j += L) amax = hn::Max(amax, hn::Abs(hn::LoadU(df, v + j)));
  const float m = hn::GetLane(hn::MaxOfLanes(df, amax));
  const float id = m != 0 ? 2047.0f / m : 0.0f;
  out.d = m / 2047.0f;
  const VF vid = hn::Set(df, id);
  const auto lim = hn::Set(di, 2047), low_bits = hn::Set(di, 15);
  const hn::Rebind<int16_t, decltype(di)> d16;
  const hn::Rebind<int8_t, decltype(di)> d8;
  // A vector of L values lies inside one run of 16 (a sum's): L divides 16.
  static_assert(HWY_MAX_BYTES / sizeof(int32_t) <= 16 && 16 % (HWY_MAX_BYTES / sizeof(int32_t)) == 0);
  int32_t sums[16] = {};
  for (int64_t j = 0; j < kSuperBlock; j += L) {
    const auto x = hn::NearestInt(hn::Mul(hn::LoadU(df, v + j), vid));
    const auto q = hn::Min(hn::Max(x, hn::Neg(lim)), lim);
    hn::StoreU(hn::DemoteTo(d16, q), d16, out.x + j);
    hn::StoreU(hn::DemoteTo(d8, hn::ShiftRight<4>(q)), d8, out.hi + j);
    hn::StoreU(hn::DemoteTo(d8, hn::And(q, low_bits)), d8, out.lo + j);
    sums[j / 16] += hn::GetLane(hn::SumOfLanes(di, q));
  }
  for (int s = 0; s < 16; ++s) out.sums[s] = static_cast<int16_t>(sums[s]);
  std::memset(out.padding, 0, sizeof(out.padding));
  if constexpr (kKQuantLanes) kquant_act_to_lane_order(out);
}

// One token's row of cols values as LaneActGroups (LaneActGroup says how): the rounding to
// nearest even, vectorized, as QuantizeKBlock's.
void QuantizeLaneGroups(const float* v, int64_t cols, LaneActGroup* out) {
  const DF df;
  const hn::RebindToSigned<DF> di;
  const hn::Rebind<int8_t, decltype(di)> d8;
  const auto L = static_cast<int64_t>(hn::Lanes(df));
  static_assert(32 % (HWY_MAX_BYTES / sizeof(float)) == 0);
  const int64_t nb = cols / kQuantBlock;
  std::memset(out, 0, static_cast<size_t>((nb + kLaneBlocks - 1) / kLaneBlocks) * sizeof(LaneActGroup));
  const auto lim = hn::Set(di, 2047), low_bits = hn::Set(di, 15);
  for (int64_t b = 0; b < nb; ++b) {
    LaneActGroup& g = out[b / kLaneBlocks];
    const int64_t i = b % kLaneBlocks;
    const float* x = v + b * kQuantBlock;
    VF amax = hn::Zero(df);
    for (int64_t j = 0; j < kQuantBlock; j += L) amax = hn::Max(amax, hn::Abs(hn::LoadU(df, x + j)));
    const float m = hn::GetLane(hn::MaxOfLanes(df, amax));
    const VF vid = hn::Set(df, m != 0 ? 2047.0f / m : 0.0f);
    g.d[i] = m / 2047.0f;
    HWY_ALIGN int8_t hi[kQuantBlock], lo[kQuantBlock];
    auto sum = hn::Zero(di);
    for (int64_t j = 0; j < kQuantBlock; j += L) {
      const auto q = hn::Min(hn::Max(hn::NearestInt(hn::Mul(hn::LoadU(df, x + j), vid)), hn::Neg(lim)), lim);
      hn::Store(hn::DemoteTo(d8, hn::ShiftRight<4>(q)), d8, hi + j);
      hn::Store(hn::DemoteTo(d8, hn::And(q, low_bits)), d8, lo + j);
      sum = hn::Add(sum, q);
    }
    g.sums[i] = hn::GetLane(hn::SumOfLanes(di, sum));
    for (int k = 0; k < 8; ++k) {
      std::memcpy(&g.hi[k][4 * i], hi + 4 * k, 4);
      std::memcpy(&g.lo[k][4 * i], lo + 4 * k, 4);
    }
  }
}

// BF16 kernels read 2L weights as L u32 lanes and split them into even and odd
// elements; the activations are stored in that order: per chunk of 2L values, the L
// even ones, then the L odd ones. Values past the last whole chunk stay in order.
void PrepareRows(WeightType type, const float* x, int64_t n, int64_t cols, std::byte* out) {
  const DF df;
  const auto L = static_cast<int64_t>(hn::Lanes(df));
  for (int64_t t = 0; t < n; ++t) {
    const float* src = x + t * cols;
    std::byte* row = out + static_cast<size_t>(t) * PreparedRowBytes(traits(type).activation, cols);
    switch (type) {
      case WeightType::F32:
      case WeightType::F16:
        std::memcpy(row, src, static_cast<size_t>(cols) * sizeof(float));
        break;
      case WeightType::BF16: {
        auto* dst = reinterpret_cast<float*>(row);
        const int64_t whole = cols / (2 * L) * (2 * L);
        for (int64_t c = 0; c < whole; c += 2 * L) {
          for (int64_t j = 0; j < L; ++j) {
            dst[c + j] = src[c + 2 * j];
            dst[c + L + j] = src[c + 2 * j + 1];
          }
        }
        for (int64_t c = whole; c < cols; ++c) dst[c] = src[c];
        break;
      }
      default:
        if (traits(type).activation == ActivationFormat::Int8x32) {
          auto* blocks = reinterpret_cast<ActBlock*>(row);
          for (int64_t b = 0; b < cols / kQuantBlock; ++b) QuantizeBlock32(src + b * kQuantBlock, blocks[b]);
        } else if (traits(type).activation == ActivationFormat::Int12x32) {
          QuantizeLaneGroups(src, cols, reinterpret_cast<LaneActGroup*>(row));
        } else if (traits(type).activation == ActivationFormat::Int12x256) {
          auto* blocks = reinterpret_cast<KActBlock*>(row);
          for (int64_t b = 0; b < cols / kSuperBlock; ++b) QuantizeKBlock(src + b * kSuperBlock, blocks[b]);
        } else {  // the block types decoded to float (simd_block_decode.inc)
          std::memcpy(row, src, static_cast<size_t>(cols) * sizeof(float));
        }
        break;
    }
  }
}

// ---------------------------------------------------------------- float tiles

// The float weight types as loaders for the one float tile below: each step reads
// kVectors vectors of weights at column c, which multiply the activations at c, c + L, ...
// of the prepared row; Value gives one weight for the scalar tail.
struct F32Weights {
  static constexpr int kVectors = 1;
  static constexpr int64_t kBytes = 4;
  static HWY_INLINE void Load(DF df, const std::byte* row, int64_t c, VF* v) {
    v[0] = hn::LoadU(df, reinterpret_cast<const float*>(row) + c);
  }
  static float Value(const std::byte* row, int64_t c) { return reinterpret_cast<const float*>(row)[c]; }
};
struct F16Weights {
  static constexpr int kVectors = 1;
  static constexpr int64_t kBytes = 2;
  static HWY_INLINE void Load(DF df, const std::byte* row, int64_t c, VF* v) {
    const hn::Rebind<hwy::float16_t, DF> dh;
    v[0] = hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(row) + c));
  }
  static float Value(const std::byte* row, int64_t c) { return f16_to_f32(reinterpret_cast<const uint16_t*>(row)[c]); }
};
// 2L weights read as L u32 lanes and split into the even and the odd elements (a shift
// and a mask, no shuffles); PrepareRows stores the activations in that order.
struct BF16Weights {
  static constexpr int kVectors = 2;
  static constexpr int64_t kBytes = 2;
  static HWY_INLINE void Load(DF df, const std::byte* row, int64_t c, VF* v) {
    const hn::RebindToUnsigned<DF> du;
    const auto u = hn::LoadU(du, reinterpret_cast<const uint32_t*>(reinterpret_cast<const uint16_t*>(row) + c));
    v[0] = hn::BitCast(df, hn::ShiftLeft<16>(u));
    v[1] = hn::BitCast(df, hn::And(u, hn::Set(du, 0xFFFF0000u)));
  }
  static float Value(const std::byte* row, int64_t c) { return bf16_to_f32(reinterpret_cast<const uint16_t*>(row)[c]); }
};

// R weight rows x T tokens. `x` points at token t0's prepared row; rows of x are
// `xstride` floats apart. Output y[t * ystride + r].
template <class Weights, int R, int T>
HWY_INLINE void TileFloat(const WeightMatrix& w, int64_t r0, const float* x, int64_t xstride, const float* bias,
                          float* y, int64_t ystride) {
  const DF df;
  const auto L = static_cast<int64_t>(hn::Lanes(df));
  constexpr int V = Weights::kVectors;
  const int64_t step = V * L;
  const int64_t cols = w.cols;
  const int64_t whole = cols / step * step;
  VF acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = hn::Zero(df);
  const std::byte* wr[R];
  for (int r = 0; r < R; ++r) wr[r] = w.row(r0 + r);
  const std::byte* next = NextTile<R, T>(w, r0);
  for (int64_t c = 0; c < whole; c += step) {
    PrefetchPart(next, c / step, step * Weights::kBytes * R);
    for (int r = 0; r < R; ++r) {
      VF wv[V];
      Weights::Load(df, wr[r], c, wv);
      for (int t = 0; t < T; ++t)
        for (int k = 0; k < V; ++k)
          acc[r][t] = hn::MulAdd(wv[k], hn::LoadU(df, x + t * xstride + c + k * L), acc[r][t]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) {
      float tail = 0;
      for (int64_t c = whole; c < cols; ++c) tail += Weights::Value(wr[r], c) * x[t * xstride + c];
      y[t * ystride + r0 + r] = Finish(df, acc[r][t], tail, bias, r0 + r);
    }
  }
}

// Long float rows: the block's tiles (4 rows x kFloatColumnTokens tokens) go through the
// columns kFloatColumnChunk at a time, so that a tile's weights for the chunk stay in L1
// while all the block's token tiles use them, and the block's activations for the chunk
// stay there too (TileFloat reads a whole 4864-column row of each from L2). The
// accumulators wait in `acc` between chunks and every lane takes its FMAs in TileFloat's
// order, so the results are its bits. Its inner loop repeats TileFloat's on purpose: one
// loop shared by both (with TileFloat's prefetch as an argument) measured 6% slower here
// (BM_Matmul bf16 896x4864, 512 tokens, 2 threads: 26.2 -> 27.8 ms, alternated).
constexpr int64_t kFloatColumnChunk = 1024;
constexpr int kFloatColumnTokens = HWY_TARGET <= HWY_AVX3 ? 4 : 3;  // a tile's tokens: what the registers hold
template <class Weights, int R, int T>
HWY_INLINE void TileFloatColumns(const WeightMatrix& w, int64_t r0, const float* x, int64_t xstride, int64_t c0,
                                 int64_t c1, VF* acc) {
  const DF df;
  const auto L = static_cast<int64_t>(hn::Lanes(df));
  constexpr int V = Weights::kVectors;
  const int64_t step = V * L;
  VF a[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) a[r][t] = acc[r * T + t];
  const std::byte* wr[R];
  for (int r = 0; r < R; ++r) wr[r] = w.row(r0 + r);
  for (int64_t c = c0; c < c1; c += step) {
    for (int r = 0; r < R; ++r) {
      VF wv[V];
      Weights::Load(df, wr[r], c, wv);
      for (int t = 0; t < T; ++t)
        for (int k = 0; k < V; ++k) a[r][t] = hn::MulAdd(wv[k], hn::LoadU(df, x + t * xstride + c + k * L), a[r][t]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r * T + t] = a[r][t];
}

// Tokens [t0, t1) (whole tiles of kFloatColumnTokens) by rows [r0, r0 + 4 * groups) of a long float matrix.
template <class Weights>
HWY_INLINE void FloatPrefillColumns(const WeightMatrix& w, const float* x, int64_t xstride, int64_t t0, int64_t t1,
                                    int64_t r0, int64_t groups, const float* bias, float* y, int64_t ystride) {
  constexpr int R = 4, T = kFloatColumnTokens;
  constexpr int64_t kMaxTiles = 32;
  const DF df;
  const auto L = static_cast<int64_t>(hn::Lanes(df));
  const int64_t step = Weights::kVectors * L;
  const int64_t whole = w.cols / step * step;
  VF acc[kMaxTiles][R * T];
  const int64_t tiles = (t1 - t0) / T;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t r = r0 + 4 * g;
    for (int64_t i = 0; i < tiles; ++i)
      for (auto& v : acc[i]) v = hn::Zero(df);
    for (int64_t c0 = 0; c0 < whole; c0 += kFloatColumnChunk) {
      const int64_t c1 = std::min(whole, c0 + kFloatColumnChunk);
      for (int64_t i = 0; i < tiles; ++i)
        TileFloatColumns<Weights, R, T>(w, r, x + (t0 + i * T) * xstride, xstride, c0, c1, acc[i]);
    }
    for (int64_t i = 0; i < tiles; ++i) {
      const float* xt = x + (t0 + i * T) * xstride;
      for (int rr = 0; rr < R; ++rr) {
        for (int t = 0; t < T; ++t) {
          float tail = 0;
          for (int64_t c = whole; c < w.cols; ++c) tail += Weights::Value(w.row(r + rr), c) * xt[t * xstride + c];
          y[(t0 + i * T + t) * ystride + r + rr] = Finish(df, acc[i][rr * T + t], tail, bias, r + rr);
        }
      }
    }
  }
}

// ---------------------------------------------------------------- int8 tiles

#if GLASS_X86_INT8
// The block scale through F16C (every AVX2 target has it): the portable bit-twiddling
// conversion costs more than the block's whole int8 dot product.
HWY_INLINE float BlockScale(uint16_t h) { return _cvtsh_ss(h); }
// ggml's hsum_float_8 (and llamafile's hsum): the upper half onto the lower, then pairs.
HWY_INLINE float SumLanes(__m256 v) {
  __m128 r = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
  r = _mm_add_ps(r, _mm_movehl_ps(r, r));
  r = _mm_add_ss(r, _mm_movehdup_ps(r));
  return _mm_cvtss_f32(r);
}
// y[t * ystride + r0 + r] = the lanes of acc[r][t] summed as above, plus the bias.
template <int R, int T>
HWY_INLINE void StoreSums(const __m256 (&acc)[R][T], const float* bias, int64_t r0, float* y, int64_t ystride) {
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) {
      float s = SumLanes(acc[r][t]);
      if (bias != nullptr) s += bias[r0 + r];
      y[t * ystride + r0 + r] = s;
    }
  }
}
// 16 packed bytes as 32 nibbles: byte j's low nibble is value j, its high nibble value j + 16.
HWY_INLINE __m256i Nibbles(const uint8_t* q) {
  const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
  const __m256i both = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);  // high nibbles -> upper lane
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}
// 16 in byte j where bit j of `bits` is set (the fifth bits of 5-bit codes).
HWY_INLINE __m256i SixteenWhereSet(uint32_t bits) {
#if HWY_TARGET <= HWY_AVX3
  return _mm256_maskz_mov_epi8(bits, _mm256_set1_epi8(16));  // the word as a byte mask
#endif
  // Byte j takes byte j / 8 of the word, then keeps bit j % 8 of it.
  const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int32_t>(bits)),
                                             _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                                               0x0101010101010101, 0x0000000000000000));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ULL));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
  return _mm256_and_si256(set, _mm256_set1_epi8(16));
}
// The fifth bits of a q5 block's 32 codes (the 32-bit word at p) as 16 in their bytes.
HWY_INLINE __m256i FifthBitsOf(const uint8_t* p) {
  uint32_t bits;
  std::memcpy(&bits, p, 4);
  return SixteenWhereSet(bits);
}
HWY_INLINE __m256i WeightBytes(const BlockQ8_0& b) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.q));
}
HWY_INLINE __m256i WeightBytes(const BlockQ4_0& b) { return _mm256_sub_epi8(Nibbles(b.q), _mm256_set1_epi8(8)); }
#else
HWY_INLINE void Nibbles(const uint8_t* q, int8_t* out) {
  for (int j = 0; j < 16; ++j) {
    out[j] = static_cast<int8_t>(q[j] & 0x0f);
    out[j + 16] = static_cast<int8_t>(q[j] >> 4);
  }
}
HWY_INLINE void WeightBytes(const BlockQ8_0& b, int8_t* out) { std::memcpy(out, b.q, 32); }
HWY_INLINE void WeightBytes(const BlockQ4_0& b, int8_t* out) {
  Nibbles(b.q, out);
  for (int j = 0; j < 32; ++j) out[j] = static_cast<int8_t>(out[j] - 8);
}
#endif

// Per block: the exact int32 dot of 32 weight and activation bytes, scaled by both
// block scales and accumulated in float. The same order in every tile.
template <class Block, int R, int T>
HWY_INLINE void TileInt8(const WeightMatrix& w, int64_t r0, const ActBlock* x, int64_t xstride_blocks,
                         const float* bias, float* y, int64_t ystride) {
  const int64_t nb = w.cols / kQuantBlock;
  const Block* wr[R];
  for (int r = 0; r < R; ++r) wr[r] = reinterpret_cast<const Block*>(w.row(r0 + r));
#if GLASS_X86_INT8
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  const __m256i ones = _mm256_set1_epi16(1);
  const std::byte* next = NextTile<R, T>(w, r0);
  for (int64_t b = 0; b < nb; ++b) {
    PrefetchPart(next, b, R * static_cast<int64_t>(sizeof(Block)));
    for (int r = 0; r < R; ++r) {
      const __m256i wq = WeightBytes(wr[r][b]);
      const __m256i wabs = _mm256_sign_epi8(wq, wq);
      const float dw = BlockScale(wr[r][b].scale);
      for (int t = 0; t < T; ++t) {
        const ActBlock& xb = x[t * xstride_blocks + b];
        const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.q));
        const __m256i xs = _mm256_sign_epi8(xq, wq);  // sign of w moved onto x
        const __m256i p16 = _mm256_maddubs_epi16(wabs, xs);
        const __m256 p = _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, ones));
        acc[r][t] = _mm256_fmadd_ps(p, _mm256_set1_ps(dw * xb.scale), acc[r][t]);
      }
    }
  }
  StoreSums<R, T>(acc, bias, r0, y, ystride);
#else
  float acc[R][T] = {};
  int8_t wq[32];
  for (int64_t b = 0; b < nb; ++b) {
    for (int r = 0; r < R; ++r) {
      WeightBytes(wr[r][b], wq);
      const float dw = f16_to_f32(wr[r][b].scale);
      for (int t = 0; t < T; ++t) {
        const ActBlock& xb = x[t * xstride_blocks + b];
        int32_t dot = 0;
        for (int j = 0; j < 32; ++j) dot += static_cast<int32_t>(wq[j]) * xb.q[j];
        acc[r][t] += static_cast<float>(dot) * (dw * xb.scale);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t)
      y[t * ystride + r0 + r] = acc[r][t] + (bias != nullptr ? bias[r0 + r] : 0.0f);
#endif
}

#include "kernels/simd_block_decode.inc"
#include "kernels/simd_kquant_dot.inc"

// ---------------------------------------------------------------- interleaved int8 groups

#if GLASS_X86_INT8
HWY_INLINE __m256i Broadcast4Bytes(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}
#endif

// The 8 rows of interleaved group g against T tokens; y and bias point at the group's
// first row. The 32-bit lanes of every product are the 8 rows, so a block's exact int32
// dots need no horizontal sum and its 8 scales are one vector. Each output is summed
// block by block in the same order whatever T is.
template <WeightType Type, int T>
HWY_INLINE void GroupInt8(const WeightMatrix& w, int64_t g, const ActBlock* x, int64_t xstride_blocks,
                          const float* bias, float* y, int64_t ystride) {
  const int64_t nb = w.cols / kQuantBlock;
#if GLASS_X86_INT8
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  const __m256i ones = _mm256_set1_epi16(1);
  const bool fetch_next = T == 1 && (g + 2) * kInterleaveRows <= w.interleaved_rows();
  const auto block_bytes = static_cast<int64_t>(w.row_bytes) / nb * kInterleaveRows;
  for (int64_t b = 0; b < nb; ++b) {
    const std::byte* block = w.group_block(g, b);
    if (fetch_next) PrefetchBytes(w.group_block(g + 1, b), block_bytes);
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block)));
    const uint8_t* q = interleaved_quants(block);
    __m256i dot[T];
    if constexpr (Type == WeightType::Q8_0) {
      for (int t = 0; t < T; ++t) dot[t] = _mm256_setzero_si256();
      for (int s = 0; s < 8; ++s) {
        const __m256i wq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32 * s));
        const __m256i wabs = _mm256_sign_epi8(wq, wq);
        for (int t = 0; t < T; ++t) {
          const __m256i xs = _mm256_sign_epi8(Broadcast4Bytes(x[t * xstride_blocks + b].q + 4 * s), wq);
          dot[t] = _mm256_add_epi32(dot[t], _mm256_madd_epi16(_mm256_maddubs_epi16(wabs, xs), ones));
        }
      }
    } else {
      // Nibbles are 0..15, so the pair sums (at most 2 * 15 * 127) of all 8 slices fit in
      // int16 and the widening happens once per block.
      __m256i sum16[T];
      for (int t = 0; t < T; ++t) sum16[t] = _mm256_setzero_si256();
      const __m256i low = _mm256_set1_epi8(0x0f);
      for (int i = 0; i < 4; ++i) {
        const __m256i packed = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32 * i));
        const __m256i lo = _mm256_and_si256(packed, low);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low);
        for (int t = 0; t < T; ++t) {
          const int8_t* xq = x[t * xstride_blocks + b].q + 8 * i;
          sum16[t] = _mm256_add_epi16(sum16[t], _mm256_maddubs_epi16(lo, Broadcast4Bytes(xq)));
          sum16[t] = _mm256_add_epi16(sum16[t], _mm256_maddubs_epi16(hi, Broadcast4Bytes(xq + 4)));
        }
      }
      for (int t = 0; t < T; ++t)
        dot[t] = _mm256_sub_epi32(_mm256_madd_epi16(sum16[t], ones),
                                  _mm256_set1_epi32(8 * x[t * xstride_blocks + b].sum));
    }
    for (int t = 0; t < T; ++t)
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[t]),
                               _mm256_mul_ps(dw, _mm256_set1_ps(x[t * xstride_blocks + b].scale)), acc[t]);
  }
  const __m256 vbias = bias != nullptr ? _mm256_loadu_ps(bias) : _mm256_setzero_ps();
  for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + t * ystride, _mm256_add_ps(acc[t], vbias));
#else
  float acc[T][kInterleaveRows] = {};
  for (int64_t b = 0; b < nb; ++b) {
    const std::byte* block = w.group_block(g, b);
    const uint8_t* q = interleaved_quants(block);
    for (int r = 0; r < kInterleaveRows; ++r) {
      const float dw = f16_to_f32(interleaved_scale(block, r));
      for (int t = 0; t < T; ++t) {
        const ActBlock& xb = x[t * xstride_blocks + b];
        int32_t dot = 0;
        for (int k = 0; k < 32; ++k) dot += interleaved_value(Type, q, r, k) * xb.q[k];
        acc[t][r] += static_cast<float>(dot) * (dw * xb.scale);
      }
    }
  }
  for (int t = 0; t < T; ++t)
    for (int r = 0; r < kInterleaveRows; ++r) y[t * ystride + r] = acc[t][r] + (bias != nullptr ? bias[r] : 0.0f);
#endif
}

#undef GLASS_HAVE_VNNI_KERNEL
#undef GLASS_HAVE_VNNI256
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
// VNNI, on CPUs that have it: vpdpbusd multiplies unsigned by signed bytes and adds each 4
// products into an int32 lane in one instruction. The AVX-512 target uses AVX512-VNNI (with
// VL); the AVX2 target the same instruction on ymm, VEX-encoded (AVX-VNNI: CPUs without
// AVX-512, such as Intel's client cores) or, on CPUs with AVX512-VNNI but not AVX-VNNI, EVEX-
// encoded (Dpbusd256). The weights are made unsigned, q8_0 by adding 128 and q4_0 as their
// nibbles (0..15), and the excess (128 or 8 times the block's activation sum) is subtracted
// per block, so every block's int32 dot is exactly GroupInt8's and the float steps after it
// are the same: the results are bit-identical to the kernels without VNNI.
#if HWY_TARGET == HWY_AVX3
#define GLASS_VNNI __attribute__((target("avx512vnni")))  // the zmm kernels' intrinsics
#endif

// vpdpbusd on ymm (acc + u8 x s8 quads), written out in the encoding `Evex` names, so that
// the kernels need no VNNI target attribute: they run only where the CPU has that encoding.
template <bool Evex>
HWY_INLINE __m256i Dpbusd256(__m256i acc, __m256i u, __m256i s) {
  if constexpr (Evex) asm("%{evex%} vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "v"(s));
  else asm("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u), "x"(s));
  return acc;
}
// Calls f(std::bool_constant<Evex>) with this target's encoding: EVEX on the AVX-512 target;
// on the AVX2 target VEX where the CPU has AVX-VNNI, else EVEX (the caller checked that the
// CPU has one of them).
template <class F>
HWY_INLINE void WithVnniEncoding(F&& f) {
#if HWY_TARGET == HWY_AVX3
  f(std::true_type{});
#else
  if (cpu_has_avx_vnni()) f(std::false_type{});
  else f(std::true_type{});
#endif
}

// Not inlined: the kernels without VNNI stay free of its instructions.
template <WeightType Type, int T, bool Evex>
HWY_NOINLINE void GroupInt8Vnni(const WeightMatrix& w, int64_t g, const ActBlock* x, int64_t xstride_blocks,
                               const float* bias, float* y, int64_t ystride) {
  const int64_t nb = w.cols / kQuantBlock;
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  const bool fetch_next = T == 1 && (g + 2) * kInterleaveRows <= w.interleaved_rows();
  const auto block_bytes = static_cast<int64_t>(w.row_bytes) / nb * kInterleaveRows;
  for (int64_t b = 0; b < nb; ++b) {
    const std::byte* block = w.group_block(g, b);
    if (fetch_next) PrefetchBytes(w.group_block(g + 1, b), block_bytes);
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block)));
    const uint8_t* q = interleaved_quants(block);
    // C sums per token, so that consecutive dpbusd do not wait for each other (with few
    // tokens there are few independent chains otherwise).
    constexpr int C = T == 1 ? 4 : 2;
    __m256i dot[C][T];
    for (int c = 0; c < C; ++c)
      for (int t = 0; t < T; ++t) dot[c][t] = _mm256_setzero_si256();
    int32_t excess;
    if constexpr (Type == WeightType::Q8_0) {
      const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
#pragma GCC unroll 8
      for (int s = 0; s < 8; ++s) {
        const __m256i wu = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32 * s)), flip);
        for (int t = 0; t < T; ++t)
          dot[s % C][t] = Dpbusd256<Evex>(dot[s % C][t], wu, Broadcast4Bytes(x[t * xstride_blocks + b].q + 4 * s));
      }
      excess = 128;
    } else {
      const __m256i low = _mm256_set1_epi8(0x0f);
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        const __m256i packed = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32 * i));
        const __m256i lo = _mm256_and_si256(packed, low);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low);
        for (int t = 0; t < T; ++t) {
          const int8_t* xq = x[t * xstride_blocks + b].q + 8 * i;
          dot[(2 * i) % C][t] = Dpbusd256<Evex>(dot[(2 * i) % C][t], lo, Broadcast4Bytes(xq));
          dot[(2 * i + 1) % C][t] = Dpbusd256<Evex>(dot[(2 * i + 1) % C][t], hi, Broadcast4Bytes(xq + 4));
        }
      }
      excess = 8;
    }
    for (int c = 1; c < C; ++c)
      for (int t = 0; t < T; ++t) dot[0][t] = _mm256_add_epi32(dot[0][t], dot[c][t]);
    for (int t = 0; t < T; ++t) {
      const ActBlock& xb = x[t * xstride_blocks + b];
      const __m256i exact = _mm256_sub_epi32(dot[0][t], _mm256_set1_epi32(excess * xb.sum));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(exact), _mm256_mul_ps(dw, _mm256_set1_ps(xb.scale)), acc[t]);
    }
  }
  const __m256 vbias = bias != nullptr ? _mm256_loadu_ps(bias) : _mm256_setzero_ps();
  for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + t * ystride, _mm256_add_ps(acc[t], vbias));
}

#if HWY_TARGET == HWY_AVX3
// GroupInt8Vnni on two groups at once (g and g + 1: 16 rows, 8 to a 256-bit half) for T
// tokens, so each vpdpbusd, conversion, multiply and fma does both groups' work and the
// token's 4 bytes are one broadcast for 16 rows. Lane by lane the operations are
// GroupInt8Vnni's, so the results are the same bits. y and bias point at group g's first row.
template <WeightType Type, int T>
GLASS_VNNI HWY_NOINLINE void GroupPairInt8Vnni(const WeightMatrix& w, int64_t g, const ActBlock* x,
                                              int64_t xstride_blocks, const float* bias, float* y, int64_t ystride) {
  const int64_t nb = w.cols / kQuantBlock;
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const std::byte* block0 = w.group_block(g, b);
    const std::byte* block1 = w.group_block(g + 1, b);
    const __m512 dw = _mm512_insertf32x8(
        _mm512_castps256_ps512(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block0)))),
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block1))), 1);
    const uint8_t* q0 = interleaved_quants(block0);
    const uint8_t* q1 = interleaved_quants(block1);
    constexpr int C = 2;  // sums per token, as GroupInt8Vnni with T > 1
    __m512i dot[C][T];
    for (int c = 0; c < C; ++c)
      for (int t = 0; t < T; ++t) dot[c][t] = _mm512_setzero_si512();
    int32_t excess;
    if constexpr (Type == WeightType::Q8_0) {
      const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
#pragma GCC unroll 8
      for (int s = 0; s < 8; ++s) {
        const __m512i wu = _mm512_xor_si512(LoadHalves(q0 + 32 * s, q1 + 32 * s), flip);
        for (int t = 0; t < T; ++t) {
          int32_t v;
          std::memcpy(&v, x[t * xstride_blocks + b].q + 4 * s, 4);
          dot[s % C][t] = _mm512_dpbusd_epi32(dot[s % C][t], wu, _mm512_set1_epi32(v));
        }
      }
      excess = 128;
    } else {
      const __m512i low = _mm512_set1_epi8(0x0f);
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        const __m512i packed = LoadHalves(q0 + 32 * i, q1 + 32 * i);
        const __m512i lo = _mm512_and_si512(packed, low);
        const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(packed, 4), low);
        for (int t = 0; t < T; ++t) {
          const int8_t* xq = x[t * xstride_blocks + b].q + 8 * i;
          int32_t v0, v1;
          std::memcpy(&v0, xq, 4);
          std::memcpy(&v1, xq + 4, 4);
          dot[(2 * i) % C][t] = _mm512_dpbusd_epi32(dot[(2 * i) % C][t], lo, _mm512_set1_epi32(v0));
          dot[(2 * i + 1) % C][t] = _mm512_dpbusd_epi32(dot[(2 * i + 1) % C][t], hi, _mm512_set1_epi32(v1));
        }
      }
      excess = 8;
    }
    for (int c = 1; c < C; ++c)
      for (int t = 0; t < T; ++t) dot[0][t] = _mm512_add_epi32(dot[0][t], dot[c][t]);
    for (int t = 0; t < T; ++t) {
      const ActBlock& xb = x[t * xstride_blocks + b];
      const __m512i exact = _mm512_sub_epi32(dot[0][t], _mm512_set1_epi32(excess * xb.sum));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(exact), _mm512_mul_ps(dw, _mm512_set1_ps(xb.scale)), acc[t]);
    }
  }
  const __m512 vbias = bias != nullptr ? _mm512_loadu_ps(bias) : _mm512_setzero_ps();
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(y + t * ystride, _mm512_add_ps(acc[t], vbias));
}

#endif

// TileInt8 on row-major q8_0 / q4_0 (a GGUF's own rows) with vpdpbusd: the weights are made
// unsigned (q8_0 + 128, q4_0 as its nibbles) and each lane's excess, k times the sum of its
// 4 activations, is subtracted, so every int32 lane is TileInt8's and the float steps after
// it are the same: bit-identical results.
template <class Block, int R, int T, bool Evex>
HWY_NOINLINE void TileInt8Vnni(const WeightMatrix& w, int64_t r0, const ActBlock* x, int64_t xstride_blocks,
                              const float* bias, float* y, int64_t ystride) {
  constexpr bool kQ8 = std::is_same_v<Block, BlockQ8_0>;
  const int64_t nb = w.cols / kQuantBlock;
  const Block* wr[R];
  for (int r = 0; r < R; ++r) wr[r] = reinterpret_cast<const Block*>(w.row(r0 + r));
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  const __m256i zero = _mm256_setzero_si256();
  const __m256i k = _mm256_set1_epi8(static_cast<char>(kQ8 ? 0x80 : 8));
  const std::byte* next = NextTile<R, T>(w, r0);
  for (int64_t b = 0; b < nb; ++b) {
    PrefetchPart(next, b, R * static_cast<int64_t>(sizeof(Block)));
    __m256i xq[T], excess[T];
    __m256 xscale[T];
    for (int t = 0; t < T; ++t) {
      xq[t] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[t * xstride_blocks + b].q));
      excess[t] = Dpbusd256<Evex>(zero, k, xq[t]);
      xscale[t] = _mm256_set1_ps(x[t * xstride_blocks + b].scale);
    }
    for (int r = 0; r < R; ++r) {
      __m256i u;
      if constexpr (kQ8) u = _mm256_xor_si256(WeightBytes(wr[r][b]), _mm256_set1_epi8(static_cast<char>(0x80)));
      else u = Nibbles(wr[r][b].q);
      // dw * the token's scale in every lane: the same product TileInt8 takes as a scalar.
      const __m256 dw = _mm256_set1_ps(BlockScale(wr[r][b].scale));
      for (int t = 0; t < T; ++t) {
        const __m256i dot = _mm256_sub_epi32(Dpbusd256<Evex>(zero, u, xq[t]), excess[t]);
        acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(dw, xscale[t]), acc[r][t]);
      }
    }
  }
  StoreSums<R, T>(acc, bias, r0, y, ystride);
}

#if HWY_TARGET == HWY_AVX3
// TileInt8Vnni for prefill, with 2P tokens: a zmm holds a pair of tokens, one per 256-bit
// half, so each vpdpbusd, conversion, multiply and fma does two tokens' work. Lane by lane
// the operations are TileInt8Vnni's (the excess is the dot's starting value instead of
// subtracted after it, the same int32), so the results are the same bits.
template <class Block, int R, int P>
GLASS_VNNI HWY_NOINLINE void TileInt8PairsVnni(const WeightMatrix& w, int64_t r0, const ActBlock* x,
                                              int64_t xstride_blocks, const float* bias, float* y, int64_t ystride) {
  constexpr bool kQ8 = std::is_same_v<Block, BlockQ8_0>;
  const int64_t nb = w.cols / kQuantBlock;
  const Block* wr[R];
  for (int r = 0; r < R; ++r) wr[r] = reinterpret_cast<const Block*>(w.row(r0 + r));
  __m512 acc[R][P];
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_ps();
  const __m512i zero = _mm512_setzero_si512();
  const __m512i k = _mm512_set1_epi8(static_cast<char>(kQ8 ? 0x80 : 8));
  for (int64_t b = 0; b < nb; ++b) {
    __m512i xq[P], start[P];
    __m512 xscale[P];
    for (int p = 0; p < P; ++p) {
      const ActBlock& first = x[2 * p * xstride_blocks + b];
      const ActBlock& second = x[(2 * p + 1) * xstride_blocks + b];
      xq[p] = LoadHalves(first.q, second.q);
      start[p] = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, k, xq[p]));  // minus the excess
      xscale[p] = _mm512_insertf32x8(_mm512_set1_ps(first.scale), _mm256_set1_ps(second.scale), 1);
    }
    for (int r = 0; r < R; ++r) {
      __m256i u;
      if constexpr (kQ8) u = _mm256_xor_si256(WeightBytes(wr[r][b]), _mm256_set1_epi8(static_cast<char>(0x80)));
      else u = Nibbles(wr[r][b].q);
      const __m512i u2 = _mm512_broadcast_i64x4(u);
      const __m512 dw = _mm512_set1_ps(BlockScale(wr[r][b].scale));
      for (int p = 0; p < P; ++p) {
        const __m512i dot = _mm512_dpbusd_epi32(start[p], u2, xq[p]);
        acc[r][p] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, xscale[p]), acc[r][p]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int p = 0; p < P; ++p) {
      for (int h = 0; h < 2; ++h) {
        float s = SumLanes(h == 0 ? _mm512_castps512_ps256(acc[r][p]) : _mm512_extractf32x8_ps(acc[r][p], 1));
        if (bias != nullptr) s += bias[r0 + r];
        y[(2 * p + h) * ystride + r0 + r] = s;
      }
    }
  }
}
#undef GLASS_VNNI
#define GLASS_HAVE_VNNI_KERNEL 1  // the zmm kernels
#else
#define GLASS_HAVE_VNNI_KERNEL 0
#endif
#define GLASS_HAVE_VNNI256 1  // the ymm kernels
#else
#define GLASS_HAVE_VNNI_KERNEL 0
#define GLASS_HAVE_VNNI256 0
#endif

// Tokens [t0, t0 + count) for group g, count <= TokensPerTile<Vnni>; rows of the group
// outside [lo, hi) are computed but not stored.
template <WeightType Type, bool Vnni>
HWY_INLINE void GroupTokens(const WeightMatrix& w, int64_t g, int64_t lo, int64_t hi, const ActBlock* x,
                            int64_t xstride_blocks, int64_t count, const float* bias, float* y) {
  const int64_t first = g * kInterleaveRows;
  const float* gbias = bias != nullptr ? bias + first : nullptr;
  const bool whole = lo == first && hi == first + kInterleaveRows;
  float partial[8 * kInterleaveRows];
  float* out = whole ? y + first : partial;
  const int64_t stride = whole ? w.rows : kInterleaveRows;
#if GLASS_HAVE_VNNI256
  if constexpr (Vnni) {
    WithVnniEncoding([&](auto evex) {
      constexpr bool E = decltype(evex)::value;
      switch (count) {
        case 1: GroupInt8Vnni<Type, 1, E>(w, g, x, xstride_blocks, gbias, out, stride); break;
        case 2: GroupInt8Vnni<Type, 2, E>(w, g, x, xstride_blocks, gbias, out, stride); break;
        case 3: GroupInt8Vnni<Type, 3, E>(w, g, x, xstride_blocks, gbias, out, stride); break;
#if GLASS_HAVE_VNNI_KERNEL  // 8 tokens a tile: AVX-512's 32 registers
        case 4: GroupInt8Vnni<Type, 4, E>(w, g, x, xstride_blocks, gbias, out, stride); break;
        case 5: GroupInt8Vnni<Type, 5, E>(w, g, x, xstride_blocks, gbias, out, stride); break;
        case 6: GroupInt8Vnni<Type, 6, E>(w, g, x, xstride_blocks, gbias, out, stride); break;
        case 7: GroupInt8Vnni<Type, 7, E>(w, g, x, xstride_blocks, gbias, out, stride); break;
        default: GroupInt8Vnni<Type, 8, E>(w, g, x, xstride_blocks, gbias, out, stride); break;
#else
        default: GroupInt8Vnni<Type, 4, E>(w, g, x, xstride_blocks, gbias, out, stride); break;
#endif
      }
    });
  } else
#endif
  {
    switch (count) {
      case 1: GroupInt8<Type, 1>(w, g, x, xstride_blocks, gbias, out, stride); break;
      case 2: GroupInt8<Type, 2>(w, g, x, xstride_blocks, gbias, out, stride); break;
      case 3: GroupInt8<Type, 3>(w, g, x, xstride_blocks, gbias, out, stride); break;
      default: GroupInt8<Type, 4>(w, g, x, xstride_blocks, gbias, out, stride); break;
    }
  }
  if (!whole)
    for (int64_t t = 0; t < count; ++t)
      for (int64_t r = lo; r < hi; ++r) y[t * w.rows + r] = partial[t * kInterleaveRows + (r - first)];
}

// Rows [row_begin, row_end) inside the interleaved groups, all n tokens: token blocks
// whose activations stay in L2 while the group's weights stream past, 4 or 8 tokens a tile.
template <WeightType Type, bool Vnni>
HWY_INLINE void InterleavedRows(const WeightMatrix& w, const ActBlock* x, int64_t xstride_blocks, int64_t n,
                                int64_t row_begin, int64_t row_end, const float* bias, float* y) {
  // The VNNI kernel has the registers (AVX-512's 32) for 8 tokens a tile.
  const int64_t tile = Vnni && GLASS_HAVE_VNNI_KERNEL ? 8 : 4;
  const int64_t block = std::max<int64_t>(4, (256 << 10) / (xstride_blocks * static_cast<int64_t>(sizeof(ActBlock))) / 4 * 4);
  for (int64_t t0 = 0; t0 < n; t0 += block) {
    const int64_t t1 = std::min(n, t0 + block);
    for (int64_t g = row_begin / kInterleaveRows; g * kInterleaveRows < row_end; ++g) {
      const int64_t lo = std::max(row_begin, g * kInterleaveRows);
      const int64_t hi = std::min(row_end, (g + 1) * kInterleaveRows);
#if GLASS_HAVE_VNNI_KERNEL
      // Prefill over two whole groups: 16 rows a zmm (the same bits as a group at a time).
      if (Vnni && t1 - t0 >= 8 && lo == g * kInterleaveRows && (g + 2) * kInterleaveRows <= row_end) {
        int64_t t = t0;
        const float* gbias = bias != nullptr ? bias + lo : nullptr;
        for (; t + 8 <= t1; t += 8)
          GroupPairInt8Vnni<Type, 8>(w, g, x + t * xstride_blocks, xstride_blocks, gbias, y + t * w.rows + lo, w.rows);
        for (; t < t1; t += tile)
          for (int64_t h = 0; h < 2; ++h)
            GroupTokens<Type, Vnni>(w, g + h, lo + h * kInterleaveRows, lo + (h + 1) * kInterleaveRows,
                                    x + t * xstride_blocks, xstride_blocks, std::min<int64_t>(tile, t1 - t), bias,
                                    y + t * w.rows);
        ++g;
        continue;
      }
#endif
      for (int64_t t = t0; t < t1; t += tile)
        GroupTokens<Type, Vnni>(w, g, lo, hi, x + t * xstride_blocks, xstride_blocks, std::min<int64_t>(tile, t1 - t),
                                bias, y + t * w.rows);
    }
  }
}

#include "kernels/simd_lane_dot.inc"

// ---------------------------------------------------------------- matmul driver

template <class Block, int R, int T>
HWY_INLINE void TileInt8Of(const WeightMatrix& w, int64_t r0, const std::byte* prepared, size_t prow, const float* bias,
                           float* y, int64_t ystride, bool vnni) {
  const auto* x = reinterpret_cast<const ActBlock*>(prepared);
  const auto xstride = static_cast<int64_t>(prow / sizeof(ActBlock));
#if GLASS_HAVE_VNNI256
  if (vnni) {
    WithVnniEncoding([&](auto evex) {
      TileInt8Vnni<Block, R, T, decltype(evex)::value>(w, r0, x, xstride, bias, y, ystride);
    });
    return;
  }
#endif
  (void)vnni;
  TileInt8<Block, R, T>(w, r0, x, xstride, bias, y, ystride);
}
// Calls f(std::integral_constant<WeightType, t>) for the block types decoded to float
// (simd_block_decode.inc), so that their kernels are chosen in one place; false otherwise.
template <class F>
HWY_INLINE bool WithDecodedType(WeightType t, F&& f) {
  using W = WeightType;
  switch (t) {
    case W::Q4_1: f(std::integral_constant<W, W::Q4_1>{}); return true;
    case W::Q5_0: f(std::integral_constant<W, W::Q5_0>{}); return true;
    case W::Q5_1: f(std::integral_constant<W, W::Q5_1>{}); return true;
    case W::Q2_K: f(std::integral_constant<W, W::Q2_K>{}); return true;
    case W::Q3_K: f(std::integral_constant<W, W::Q3_K>{}); return true;
    default: return false;
  }
}
HWY_INLINE bool IsDecoded(WeightType t) {
  return WithDecodedType(t, [](auto) {});
}

template <int R, int T>
HWY_INLINE void Tile(const WeightMatrix& w, int64_t r0, const std::byte* prepared, size_t prow, const float* bias,
                     float* y, int64_t ystride, bool vnni) {
  const auto* x = reinterpret_cast<const float*>(prepared);
  const auto xstride = static_cast<int64_t>(prow / 4);
  switch (w.type) {
    case WeightType::BF16: TileFloat<BF16Weights, R, T>(w, r0, x, xstride, bias, y, ystride); return;
    case WeightType::F16: TileFloat<F16Weights, R, T>(w, r0, x, xstride, bias, y, ystride); return;
    case WeightType::F32: TileFloat<F32Weights, R, T>(w, r0, x, xstride, bias, y, ystride); return;
    case WeightType::Q8_0: TileInt8Of<BlockQ8_0, R, T>(w, r0, prepared, prow, bias, y, ystride, vnni); return;
    case WeightType::Q4_0: TileInt8Of<BlockQ4_0, R, T>(w, r0, prepared, prow, bias, y, ystride, vnni); return;
    default:  // the decoded types, one token at a time (their prefill is DecodedPrefillRows)
      if constexpr (T == 1) {
        WithDecodedType(w.type, [&](auto type) {
          TileDecoded<decltype(type)::value, R>(w, r0, x, bias, y);
        });
      }
      return;
  }
}

// Rows in steps of R, then one at a time.
template <int R, int T>
HWY_INLINE void RowSweep(const WeightMatrix& w, int64_t row_begin, int64_t row_end, const std::byte* prepared,
                         size_t prow, const float* bias, float* y, int64_t ystride, bool vnni) {
  int64_t r = row_begin;
  for (; r + R <= row_end; r += R) Tile<R, T>(w, r, prepared, prow, bias, y, ystride, vnni);
  for (; r < row_end; ++r) Tile<1, T>(w, r, prepared, prow, bias, y, ystride, vnni);
}

#if GLASS_HAVE_VNNI_KERNEL
// PrefillRows for row-major q8_0 / q4_0 with VNNI: 4 rows x 4 token pairs a tile, the
// tokens past the last whole pair as TileInt8Vnni (the same bits).
template <class Block>
HWY_INLINE void PairsPrefillRowsOf(const WeightMatrix& w, const ActBlock* x, int64_t xstride, int64_t n,
                                   int64_t row_begin, int64_t row_end, const float* bias, float* y, int64_t ystride) {
  constexpr int64_t P = 4;
  const int64_t block = std::max<int64_t>(
      2 * P, std::min<int64_t>(96, (256 << 10) / (xstride * static_cast<int64_t>(sizeof(ActBlock)))) / (2 * P) * (2 * P));
  for (int64_t t0 = 0; t0 < n; t0 += block) {
    const int64_t t1 = std::min(n, t0 + block);
    int64_t r = row_begin;
    auto rows = [&]<int R>(std::integral_constant<int, R>) {
      int64_t t = t0;
      for (; t + 2 * P <= t1; t += 2 * P)
        TileInt8PairsVnni<Block, R, P>(w, r, x + t * xstride, xstride, bias, y + t * ystride, ystride);
      for (; t + 2 <= t1; t += 2)
        TileInt8PairsVnni<Block, R, 1>(w, r, x + t * xstride, xstride, bias, y + t * ystride, ystride);
      if (t < t1) TileInt8Vnni<Block, R, 1, true>(w, r, x + t * xstride, xstride, bias, y + t * ystride, ystride);
    };
    for (; r + 4 <= row_end; r += 4) rows(std::integral_constant<int, 4>{});
    for (; r < row_end; ++r) rows(std::integral_constant<int, 1>{});
  }
}
void PairsPrefillRows(const WeightMatrix& w, const std::byte* prepared, size_t prow, int64_t n, int64_t row_begin,
                      int64_t row_end, const float* bias, float* y, int64_t ystride) {
  const auto* x = reinterpret_cast<const ActBlock*>(prepared);
  const auto xstride = static_cast<int64_t>(prow / sizeof(ActBlock));
  if (w.type == WeightType::Q8_0) PairsPrefillRowsOf<BlockQ8_0>(w, x, xstride, n, row_begin, row_end, bias, y, ystride);
  else PairsPrefillRowsOf<BlockQ4_0>(w, x, xstride, n, row_begin, row_end, bias, y, ystride);
}
#endif

// Prefill: token blocks small enough that their activations stay in L2 while the weight
// rows stream past, then 4x3 register tiles. Output y[t * ystride + r].
void PrefillRows(const WeightMatrix& w, const std::byte* prepared, size_t prow, int64_t n, int64_t row_begin,
                 int64_t row_end, const float* bias, float* y, int64_t ystride, bool vnni) {
#if GLASS_HAVE_VNNI_KERNEL
  if (vnni && (w.type == WeightType::Q8_0 || w.type == WeightType::Q4_0)) {
    PairsPrefillRows(w, prepared, prow, n, row_begin, row_end, bias, y, ystride);
    return;
  }
#endif
  constexpr int64_t T = 3;
  const int64_t block = std::max<int64_t>(T, std::min<int64_t>(96, (256 << 10) / static_cast<int64_t>(prow)) / T * T);
  const bool float_columns = w.cols >= 2 * kFloatColumnChunk &&
                             (w.type == WeightType::BF16 || w.type == WeightType::F16 || w.type == WeightType::F32);
  for (int64_t t0 = 0; t0 < n; t0 += block) {
    const int64_t t1 = std::min(n, t0 + block);
    int64_t r_begin = row_begin;
    if (float_columns && t1 - t0 >= kFloatColumnTokens) {  // whole tiles by whole row groups, the rest below
      const int64_t groups = (row_end - row_begin) / 4, tiles_end = t0 + (t1 - t0) / kFloatColumnTokens * kFloatColumnTokens;
      const auto* x = reinterpret_cast<const float*>(prepared);
      const auto xstride = static_cast<int64_t>(prow / 4);
      switch (w.type) {
        case WeightType::BF16: FloatPrefillColumns<BF16Weights>(w, x, xstride, t0, tiles_end, row_begin, groups, bias, y, ystride); break;
        case WeightType::F16: FloatPrefillColumns<F16Weights>(w, x, xstride, t0, tiles_end, row_begin, groups, bias, y, ystride); break;
        default: FloatPrefillColumns<F32Weights>(w, x, xstride, t0, tiles_end, row_begin, groups, bias, y, ystride); break;
      }
      for (int64_t t = tiles_end; t < t1; ++t) {  // tokens past the last whole tile
        const std::byte* xp = prepared + static_cast<size_t>(t) * prow;
        RowSweep<4, 1>(w, row_begin, row_begin + 4 * groups, xp, prow, bias, y + t * ystride, ystride, vnni);
      }
      r_begin = row_begin + 4 * groups;
    }
    for (int64_t r = r_begin; r < row_end; r += 4) {
      const int64_t rows = std::min<int64_t>(4, row_end - r);
      int64_t t = t0;
      for (; t + T <= t1; t += T) {
        const std::byte* xp = prepared + static_cast<size_t>(t) * prow;
        float* yt = y + t * ystride;
        if (rows == 4) Tile<4, 3>(w, r, xp, prow, bias, yt, ystride, vnni);
        else RowSweep<4, 3>(w, r, r + rows, xp, prow, bias, yt, ystride, vnni);
      }
      for (; t < t1; ++t) {
        const std::byte* xp = prepared + static_cast<size_t>(t) * prow;
        RowSweep<4, 1>(w, r, r + rows, xp, prow, bias, y + t * ystride, ystride, vnni);
      }
    }
  }
}

template <WeightType Type>
void DecodeRowOf(const WeightMatrix& w, int64_t r, float* out) {
  const int64_t values = traits(Type).block_values;
  const size_t bytes = traits(Type).block_bytes;
  for (int64_t b = 0; b < w.cols / values; ++b)
    DecodeBlockTo<Type>(w.row(r) + static_cast<size_t>(b) * bytes, out + b * values);
}

void DecodeRow(const WeightMatrix& w, int64_t r, float* out) {
  WithDecodedType(w.type, [&](auto type) { DecodeRowOf<decltype(type)::value>(w, r, out); });
}


// R decoded rows x T tokens over columns [c0, c1): the accumulators live in `acc` (rows
// of `tokens` vectors) between column chunks, so every output takes the FMAs of
// TileDecoded in the same order.
template <int R, int T>
HWY_INLINE void DecodedMicroTile(const float* rows, int64_t cols, const float* x, int64_t xstride, int64_t c0,
                                 int64_t c1, VF* acc, int64_t tokens) {
  const DF df;
  const auto L = static_cast<int64_t>(hn::Lanes(df));
  VF a[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) a[r][t] = acc[r * tokens + t];
  for (int64_t c = c0; c < c1; c += L) {
    VF wv[R];
    for (int r = 0; r < R; ++r) wv[r] = hn::Load(df, rows + r * cols + c);
    for (int t = 0; t < T; ++t) {
      const VF xv = hn::LoadU(df, x + t * xstride + c);
      for (int r = 0; r < R; ++r) a[r][t] = hn::MulAdd(wv[r], xv, a[r][t]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r * tokens + t] = a[r][t];
}

// Tokens per micro tile: 4 rows x 6 tokens of accumulators fit AVX-512's 32 registers,
// 4 x 2 AVX2's 16.
constexpr int kDecodedTileTokens = HWY_TARGET <= HWY_AVX3 ? 6 : 2;

template <int R>
HWY_INLINE void DecodedMicroRow(const float* rows, int64_t cols, const float* x, int64_t xstride, int64_t c0,
                                int64_t c1, VF* acc, int64_t tokens) {
  constexpr int T = kDecodedTileTokens;
  int64_t t = 0;
  for (; t + T <= tokens; t += T) DecodedMicroTile<R, T>(rows, cols, x + t * xstride, xstride, c0, c1, acc + t, tokens);
  for (; t < tokens; ++t) DecodedMicroTile<R, 1>(rows, cols, x + t * xstride, xstride, c0, c1, acc + t, tokens);
}

// Prefill of a decoded type: a group of rows is decoded once, then multiplied with a block
// of tokens a column chunk at a time (the chunk of the rows and of the tokens stays in L1),
// the accumulators kept between chunks. Each output is the same sum, in the same order, as
// TileDecoded computes for one token, so a token's results do not depend on its batch.
void DecodedPrefillRows(const WeightMatrix& w, const float* x, int64_t n, int64_t row_begin, int64_t row_end,
                        const float* bias, float* y) {
  const DF df;
  const auto L = static_cast<int64_t>(hn::Lanes(df));
  constexpr int64_t kGroup = 16, kTokens = 24, kChunk = 256;
  const int64_t cols = w.cols;
  auto decoded = hwy::AllocateAligned<float>(static_cast<size_t>(kGroup * cols));
  auto acc = hwy::AllocateAligned<float>(static_cast<size_t>(kGroup * kTokens * L));
  VF* a = reinterpret_cast<VF*>(acc.get());
  for (int64_t g = row_begin; g < row_end; g += kGroup) {
    const int64_t m = std::min(kGroup, row_end - g);
    for (int64_t i = 0; i < m; ++i) DecodeRow(w, g + i, decoded.get() + i * cols);
    for (int64_t t0 = 0; t0 < n; t0 += kTokens) {
      const int64_t tokens = std::min(kTokens, n - t0);
      for (int64_t i = 0; i < m * tokens; ++i) a[i] = hn::Zero(df);
      const float* xt = x + t0 * cols;
      for (int64_t c0 = 0; c0 < cols; c0 += kChunk) {
        const int64_t c1 = std::min(cols, c0 + kChunk);
        int64_t r = 0;
        for (; r + 4 <= m; r += 4)
          DecodedMicroRow<4>(decoded.get() + r * cols, cols, xt, cols, c0, c1, a + r * tokens, tokens);
        for (; r < m; ++r) DecodedMicroRow<1>(decoded.get() + r * cols, cols, xt, cols, c0, c1, a + r * tokens, tokens);
      }
      for (int64_t i = 0; i < m; ++i)
        for (int64_t t = 0; t < tokens; ++t)
          y[(t0 + t) * w.rows + g + i] = Finish(df, a[i * tokens + t], 0.0f, bias, g + i);
    }
  }
}

void MatmulRows(const WeightMatrix& w, const std::byte* prepared, int64_t n, int64_t row_begin, int64_t row_end,
                const float* bias, float* y, bool vnni) {
  const size_t prow = PreparedRowBytes(activation_format(w), w.cols);
  if (row_begin < w.interleaved_rows()) {
    const int64_t end = std::min(row_end, w.interleaved_rows());
    const auto* x = reinterpret_cast<const ActBlock*>(prepared);
    const auto xstride = static_cast<int64_t>(prow / sizeof(ActBlock));
    const bool q8 = w.type == WeightType::Q8_0;
    if (vnni && GLASS_HAVE_VNNI256) {
      if (q8) InterleavedRows<WeightType::Q8_0, true>(w, x, xstride, n, row_begin, end, bias, y);
      else InterleavedRows<WeightType::Q4_0, true>(w, x, xstride, n, row_begin, end, bias, y);
    } else {
      if (q8) InterleavedRows<WeightType::Q8_0, false>(w, x, xstride, n, row_begin, end, bias, y);
      else InterleavedRows<WeightType::Q4_0, false>(w, x, xstride, n, row_begin, end, bias, y);
    }
    row_begin = end;
    if (row_begin >= row_end) return;
  }
  if (traits(w.type).activation == ActivationFormat::Int12x256) {
    KQuantMatmulRows(w, prepared, n, row_begin, row_end, bias, y, vnni);
    return;
  }
  if (w.block_lanes) {
    LaneMatmulRows(w, prepared, n, row_begin, row_end, bias, y, vnni);
    return;
  }
  if (n == 1) {  // decode: memory-bound. On AVX-512 the float types read one row at a time, so
                 // that the matrix is one sequential stream the hardware prefetcher keeps up
                 // with: 4 rows at once (bf16; 8 for f16) with the next tile fetched in software
                 // decoded the 0.5B shape at 27-30 tok/s against 28-36 (bf16) and 24-30 against
                 // 30-41 (f16), the binaries alternated. A row is one chain of FMAs, 64 bytes
                 // of weights per FMA's latency there; with ymm (AVX2, 16-32 bytes, and the
                 // AVX2 machine's 2 GHz) one chain could not keep up with memory, so AVX2 keeps
                 // several rows in flight, as do the other types (4 for the decoded ones, whose
                 // decoding needs registers; 4 for bf16, whose 8-row tile spills).
    constexpr bool kOneRow = HWY_TARGET <= HWY_AVX3;
    const bool float_type = w.type == WeightType::BF16 || w.type == WeightType::F16 || w.type == WeightType::F32;
    if (IsDecoded(w.type)) RowSweep<4, 1>(w, row_begin, row_end, prepared, prow, bias, y, w.rows, vnni);
    else if (float_type && kOneRow) RowSweep<1, 1>(w, row_begin, row_end, prepared, prow, bias, y, w.rows, vnni);
    else if (w.type == WeightType::BF16) RowSweep<4, 1>(w, row_begin, row_end, prepared, prow, bias, y, w.rows, vnni);
    else RowSweep<8, 1>(w, row_begin, row_end, prepared, prow, bias, y, w.rows, vnni);
  } else if (IsDecoded(w.type)) {
    DecodedPrefillRows(w, reinterpret_cast<const float*>(prepared), n, row_begin, row_end, bias, y);
  } else {
    PrefillRows(w, prepared, prow, n, row_begin, row_end, bias, y, w.rows, vnni);
  }
}

// ---------------------------------------------------------------- elementwise

void RmsNorm(const float* x, const float* weight, int64_t n, int64_t dim, float eps, float* y) {
  const DF df;
  const auto L = static_cast<int64_t>(hn::Lanes(df));
  const int64_t whole = dim / L * L;
  for (int64_t t = 0; t < n; ++t) {
    const float* xt = x + t * dim;
    float* yt = y + t * dim;
    VF ss = hn::Zero(df);
    for (int64_t i = 0; i < whole; i += L) {
      const VF v = hn::LoadU(df, xt + i);
      ss = hn::MulAdd(v, v, ss);
    }
    float sum = hn::GetLane(hn::SumOfLanes(df, ss));
    for (int64_t i = whole; i < dim; ++i) sum += xt[i] * xt[i];
    const float inv = 1.0f / std::sqrt(sum / static_cast<float>(dim) + eps);
    const VF vinv = hn::Set(df, inv);
    for (int64_t i = 0; i < whole; i += L)
      hn::StoreU(hn::Mul(hn::Mul(hn::LoadU(df, xt + i), vinv), hn::LoadU(df, weight + i)), df, yt + i);
    for (int64_t i = whole; i < dim; ++i) yt[i] = xt[i] * inv * weight[i];
  }
}

// exp(x) as ggml's ggml_v_expf computes it (Arm's optimized-routines expf: x = n ln2 + b,
// a degree-5 polynomial in b, scaled by 2^n), with its coefficients, so that SiLU is
// llama.cpp's bit for bit: the int8 kernels quantize what follows it, and a last-bit
// difference occasionally rounds an activation the other way. ggml has two forms: its
// AVX-512 build adds the 1 inside the polynomial and scales, its AVX2 build scales 1 + j.
// Valid where |n| <= 126 (|x| < 87); beyond, +inf or 0 as the sign says.
HWY_INLINE VF ExpAsGgml(DF df, VF x) {
  const hn::RebindToSigned<DF> di;
  const VF r = hn::Set(df, 0x1.8p23f);
  const VF z = hn::MulAdd(x, hn::Set(df, 0x1.715476p+0f), r);
  const VF n = hn::Sub(z, r);
  const VF b = hn::NegMulAdd(n, hn::Set(df, 0x1.7f7d1cp-20f), hn::NegMulAdd(n, hn::Set(df, 0x1.62e4p-1f), x));
  const VF u = hn::Mul(b, b);
  const VF high = hn::MulAdd(hn::MulAdd(hn::Set(df, 0x1.0e4020p-7f), b, hn::Set(df, 0x1.573e2ep-5f)), u,
                             hn::MulAdd(hn::Set(df, 0x1.555e66p-3f), b, hn::Set(df, 0x1.fffdb6p-2f)));
  // 2^n from its exponent bits.
  const VF scale = hn::BitCast(df, hn::ShiftLeft<23>(hn::Add(hn::ConvertTo(di, n), hn::Set(di, 127))));
#if HWY_TARGET <= HWY_AVX3
  const VF j = hn::MulAdd(high, u, hn::MulAdd(hn::Set(df, 0x1.ffffecp-1f), b, hn::Set(df, 1.0f)));
  const VF res = hn::Mul(j, scale);
#else
  const VF j = hn::MulAdd(high, u, hn::Mul(hn::Set(df, 0x1.ffffecp-1f), b));
  const VF res = hn::MulAdd(j, scale, scale);
#endif
  const auto out_of_range = hn::Gt(hn::Abs(n), hn::Set(df, 126.0f));
  const VF limit = hn::IfThenElseZero(hn::Gt(n, hn::Zero(df)), hn::Set(df, std::numeric_limits<float>::infinity()));
  return hn::IfThenElse(out_of_range, limit, res);
}

void SiluMul(const float* gate, const float* up, int64_t count, float* out) {
  const DF df;
  const auto L = static_cast<int64_t>(hn::Lanes(df));
  const VF one = hn::Set(df, 1.0f);
  int64_t i = 0;
  for (; i + L <= count; i += L) {
    const VF g = hn::LoadU(df, gate + i);
    const VF silu = hn::Div(g, hn::Add(one, ExpAsGgml(df, hn::Sub(hn::Zero(df), g))));
    hn::StoreU(hn::Mul(silu, hn::LoadU(df, up + i)), df, out + i);
  }
  for (; i < count; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void Add(float* x, const float* y, int64_t count) {
  const DF df;
  const auto L = static_cast<int64_t>(hn::Lanes(df));
  int64_t i = 0;
  for (; i + L <= count; i += L) hn::StoreU(hn::Add(hn::LoadU(df, x + i), hn::LoadU(df, y + i)), df, x + i);
  for (; i < count; ++i) x[i] += y[i];
}

void Rope(float* x, int64_t n, int64_t heads, int64_t head_dim, const float* cos, const float* sin) {
  const DF df;
  const auto L = static_cast<int64_t>(hn::Lanes(df));
  const int64_t half = head_dim / 2;
  for (int64_t t = 0; t < n; ++t) {
    const float* c = cos + t * half;
    const float* s = sin + t * half;
    for (int64_t h = 0; h < heads; ++h) {
      float* v = x + (t * heads + h) * head_dim;
      int64_t i = 0;
      for (; i + L <= half; i += L) {
        const VF a = hn::LoadU(df, v + i), b = hn::LoadU(df, v + half + i);
        const VF vc = hn::LoadU(df, c + i), vs = hn::LoadU(df, s + i);
        hn::StoreU(hn::NegMulAdd(b, vs, hn::Mul(a, vc)), df, v + i);
        hn::StoreU(hn::MulAdd(a, vs, hn::Mul(b, vc)), df, v + half + i);
      }
      for (; i < half; ++i) {
        const float a = v[i], b = v[i + half];
        v[i] = a * c[i] - b * s[i];
        v[i + half] = b * c[i] + a * s[i];
      }
    }
  }
}

// ---------------------------------------------------------------- attention

// L values of a KV row starting at element i, as float.
template <KVType Type>
HWY_INLINE VF LoadKV(DF df, const std::byte* row, int64_t i) {
  if constexpr (Type == KVType::BF16) {
    const hn::Rebind<hwy::bfloat16_t, DF> db;
    return hn::PromoteTo(df, hn::LoadU(db, reinterpret_cast<const hwy::bfloat16_t*>(row) + i));
  } else if constexpr (Type == KVType::F16) {
    const hn::Rebind<hwy::float16_t, DF> dh;
    return hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(row) + i));
  } else {
    return hn::LoadU(df, reinterpret_cast<const float*>(row) + i);
  }
}

template <KVType Type>
HWY_INLINE float KVScalar(const std::byte* row, int64_t i) {
  if constexpr (Type == KVType::BF16) return bf16_to_f32(reinterpret_cast<const uint16_t*>(row)[i]);
  else if constexpr (Type == KVType::F16) return f16_to_f32(reinterpret_cast<const uint16_t*>(row)[i]);
  else return reinterpret_cast<const float*>(row)[i];
}

int64_t AttentionScratchFloats(const AttentionArgs& a, int64_t heads_per_task) {
  const DF df;
  const auto L = static_cast<int64_t>(hn::Lanes(df));
  const int64_t padded = (a.block_size + L - 1) / L * L;
  // Per row and query head of a task: its accumulator, its block's scores, its running
  // max and sum, its block's correction and sum; then the block's keys and values as
  // floats, shared by the task's rows and heads.
  return kMaxAttentionTileRows * heads_per_task * (a.head_dim + padded + 4) + 2 * padded * a.head_dim;
}

// SumOfLanes of L vectors at once: lane q of the result is SumOfLanes(df, vector q), bit
// for bit, by the same tree of adds (Highway's: the upper half folded onto the lower,
// again and again), run on all the vectors together with shuffles. That costs about
// three operations a vector, where a reduction of each takes two per level. The vectors
// go in a shuffled order: vector q in d[SlotOfVector(q)].
HWY_INLINE constexpr size_t SlotOfVector(size_t q) {
#if HWY_TARGET <= HWY_AVX3
  return 4 * (q % 4) + q / 4;
#elif HWY_TARGET == HWY_AVX2
  return 2 * (q % 4) + q / 4;
#else
  return q;
#endif
}
HWY_INLINE VF SumOfEachVector(DF df, const VF* d) {
#if HWY_TARGET <= HWY_AVX3
  (void)df;
  __m512 t[8], u[4], v[2];
  for (int k = 0; k < 8; ++k)  // lanes i + 8 onto i: slots 2k, 2k + 1 in the lower and upper 256 bits
    t[k] = _mm512_add_ps(_mm512_shuffle_f32x4(d[2 * k].raw, d[2 * k + 1].raw, 0x44),
                         _mm512_shuffle_f32x4(d[2 * k].raw, d[2 * k + 1].raw, 0xEE));
  for (int k = 0; k < 4; ++k)  // i + 4 onto i: slot 4k + m in 128-bit lane m
    u[k] = _mm512_add_ps(_mm512_shuffle_f32x4(t[2 * k], t[2 * k + 1], 0x88),
                         _mm512_shuffle_f32x4(t[2 * k], t[2 * k + 1], 0xDD));
  for (int k = 0; k < 2; ++k) {  // i + 2 onto i
    const __m512d a = _mm512_castps_pd(u[2 * k]), b = _mm512_castps_pd(u[2 * k + 1]);
    v[k] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)), _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
  }
  // i + 1 onto i: lane 4m + k holds slot 4k + m, which SlotOfVector made vector 4m + k.
  return VF{_mm512_add_ps(_mm512_shuffle_ps(v[0], v[1], 0x88), _mm512_shuffle_ps(v[0], v[1], 0xDD))};
#elif HWY_TARGET == HWY_AVX2
  (void)df;
  __m256 t[4], u[2];
  for (int k = 0; k < 4; ++k)  // lanes i + 4 onto i
    t[k] = _mm256_add_ps(_mm256_permute2f128_ps(d[2 * k].raw, d[2 * k + 1].raw, 0x20),
                         _mm256_permute2f128_ps(d[2 * k].raw, d[2 * k + 1].raw, 0x31));
  for (int k = 0; k < 2; ++k) {  // i + 2 onto i
    const __m256d a = _mm256_castps_pd(t[2 * k]), b = _mm256_castps_pd(t[2 * k + 1]);
    u[k] = _mm256_add_ps(_mm256_castpd_ps(_mm256_unpacklo_pd(a, b)), _mm256_castpd_ps(_mm256_unpackhi_pd(a, b)));
  }
  // i + 1 onto i: lane 4h + k holds slot 2k + h, which SlotOfVector made vector 4h + k.
  return VF{_mm256_add_ps(_mm256_shuffle_ps(u[0], u[1], 0x88), _mm256_shuffle_ps(u[0], u[1], 0xDD))};
#else
  HWY_ALIGN float sums[HWY_MAX_BYTES / sizeof(float)];
  for (size_t j = 0; j < hn::Lanes(df); ++j) sums[j] = hn::GetLane(hn::SumOfLanes(df, d[j]));
  return hn::Load(df, sums);
#endif
}

// acc[i] = acc[i] * correction + sum over j < nb of p[j] * v[j * hd + i] for i < whole,
// kChains vectors of acc at a time in registers: each is a chain of FMAs over j, and the
// chains run side by side instead of one after another (every lane keeps its order).
template <int kChains>
HWY_INLINE void AccumulateValueChains(DF df, const float* p, const float* v, int64_t nb, int64_t hd, int64_t i0,
                                      VF vcorr, float* acc) {
  const auto L = static_cast<int64_t>(hn::Lanes(df));
  VF r[kChains];
  for (int u = 0; u < kChains; ++u) r[u] = hn::Mul(hn::LoadU(df, acc + i0 + u * L), vcorr);
  for (int64_t j = 0; j < nb; ++j) {
    const VF pj = hn::Set(df, p[j]);
    const float* vj = v + j * hd + i0;
    for (int u = 0; u < kChains; ++u) r[u] = hn::MulAdd(pj, hn::LoadU(df, vj + u * L), r[u]);
  }
  for (int u = 0; u < kChains; ++u) hn::StoreU(r[u], df, acc + i0 + u * L);
}
HWY_INLINE void AccumulateValues(DF df, const float* p, const float* v, int64_t nb, int64_t hd, int64_t whole,
                                 float correction, float* acc) {
  const auto L = static_cast<int64_t>(hn::Lanes(df));
  const VF vcorr = hn::Set(df, correction);
  int64_t i = 0;
  for (; i + 8 * L <= whole; i += 8 * L) AccumulateValueChains<8>(df, p, v, nb, hd, i, vcorr, acc);
  if (i + 4 * L <= whole) AccumulateValueChains<4>(df, p, v, nb, hd, i, vcorr, acc), i += 4 * L;
  if (i + 2 * L <= whole) AccumulateValueChains<2>(df, p, v, nb, hd, i, vcorr, acc), i += 2 * L;
  if (i < whole) AccumulateValueChains<1>(df, p, v, nb, hd, i, vcorr, acc);
}

// AccumulateValues for two heads at once (p and acc of the second head p_stride and hd
// floats after the first's): twice the chains side by side, each head's the same
// operations in the same order as AccumulateValues gives it alone.
template <int kChains>
HWY_INLINE void AccumulateValueChainPair(DF df, const float* p0, const float* p1, const float* v, int64_t nb,
                                         int64_t hd, const float* correction, float* acc0, float* acc1) {
  const auto L = static_cast<int64_t>(hn::Lanes(df));
  VF r0[kChains], r1[kChains];
  const VF c0 = hn::Set(df, correction[0]), c1 = hn::Set(df, correction[1]);
  for (int u = 0; u < kChains; ++u) {
    r0[u] = hn::Mul(hn::LoadU(df, acc0 + u * L), c0);
    r1[u] = hn::Mul(hn::LoadU(df, acc1 + u * L), c1);
  }
  for (int64_t j = 0; j < nb; ++j) {
    const VF q0 = hn::Set(df, p0[j]), q1 = hn::Set(df, p1[j]);
    const float* vj = v + j * hd;
    for (int u = 0; u < kChains; ++u) {
      const VF vu = hn::LoadU(df, vj + u * L);
      r0[u] = hn::MulAdd(q0, vu, r0[u]);
      r1[u] = hn::MulAdd(q1, vu, r1[u]);
    }
  }
  for (int u = 0; u < kChains; ++u) {
    hn::StoreU(r0[u], df, acc0 + u * L);
    hn::StoreU(r1[u], df, acc1 + u * L);
  }
}
HWY_INLINE void AccumulateValuePair(DF df, const float* p, int64_t p_stride, const float* v, int64_t nb, int64_t hd,
                                    int64_t whole, const float* correction, float* acc) {
  const auto L = static_cast<int64_t>(hn::Lanes(df));
  switch (whole / L) {
    case 4: AccumulateValueChainPair<4>(df, p, p + p_stride, v, nb, hd, correction, acc, acc + hd); return;
    case 2: AccumulateValueChainPair<2>(df, p, p + p_stride, v, nb, hd, correction, acc, acc + hd); return;
    case 1: AccumulateValueChainPair<1>(df, p, p + p_stride, v, nb, hd, correction, acc, acc + hd); return;
    default:
      AccumulateValues(df, p, v, nb, hd, whole, correction[0], acc);
      AccumulateValues(df, p + p_stride, v, nb, hd, whole, correction[1], acc + hd);
  }
}

// One task is a tile of rows of one sequence, a KV head and up to heads_per_task of the
// query heads that read it: they go through the cached keys together, a block at a time,
// the block's keys and values converted to floats once for all of them. Scores come L keys
// at a time: each key's dot-product vector, then SumOfEachVector for the L of them. The
// FMAs of the dot products and of the values' sums run as independent chains side by side.
// Every row's and query head's result is computed by the same operations in the same order
// whatever the task holds, so the tiling and the split do not change it. (A row shorter than
// the tile's longest reads keys past its end in the block's last vector of scores: those
// scores are set to -inf and weigh 0, as the zeros past a block's end do.)
template <KVType Type>
HWY_INLINE void AttentionTasksOf(const AttentionArgs& a, const AttentionTile* tiles, int64_t heads_per_task,
                                 int64_t task_begin, int64_t task_end, float* scratch) {
  const DF df;
  const auto L = static_cast<int64_t>(hn::Lanes(df));
  const int64_t hd = a.head_dim;
  const int64_t whole = hd / L * L;
  const int64_t group_size = a.heads / a.kv_heads;
  const int64_t chunks = (group_size + heads_per_task - 1) / heads_per_task;
  const int64_t kv_dim = a.kv_heads * hd;
  const size_t esz = kv_type_size(Type);
  const size_t pos_bytes = static_cast<size_t>(kv_dim) * esz;
  const int64_t padded = (a.block_size + L - 1) / L * L;
  const float minus_infinity = -std::numeric_limits<float>::infinity();
  // Per (row of the tile, head of the chunk), at index r * group + g:
  const int64_t states = kMaxAttentionTileRows * heads_per_task;
  float* acc = scratch;                      // [states][hd]
  float* scores = acc + states * hd;         // [states][padded]: a block's
  float* m = scores + states * padded;       // [states]
  float* l = m + states;                     // [states]
  float* correction = l + states;            // [states]: a block's rescaling
  float* block_sums = correction + states;   // [states]: a block's sum of weights
  float* kf = block_sums + states;           // [padded][hd]: the block's keys as floats
  float* vf = kf + padded * hd;              // [padded][hd]: its values
  constexpr size_t kLanes = hn::MaxLanes(DF());
  constexpr size_t kBatch = kLanes < 8 ? kLanes : 8;
  VF d[kLanes];                              // the keys' dot-product vectors
  for (int64_t task = task_begin; task < task_end; ++task) {
    const AttentionTile& tile = tiles[task / (a.kv_heads * chunks)];
    const int64_t kvh = task / chunks % a.kv_heads, chunk = task % chunks;
    const int64_t first = kvh * group_size + chunk * heads_per_task;  // a group's query heads are consecutive
    const int64_t group = std::min(heads_per_task, group_size - chunk * heads_per_task);
    const int32_t* block_ids = a.rows[tile.first_row].block_ids;  // shared by the tile's rows
    int64_t longest = 0;
    for (int64_t r = 0; r < tile.rows; ++r) longest = std::max(longest, a.rows[tile.first_row + r].length);
    std::fill(acc, acc + tile.rows * group * hd, 0.0f);
    for (int64_t s = 0; s < tile.rows * group; ++s) m[s] = minus_infinity, l[s] = 0;
    for (int64_t p0 = 0; p0 < longest; p0 += a.block_size) {
      const int64_t block_keys = std::min(a.block_size, longest - p0);
      const int64_t block_chunked = (block_keys + L - 1) / L * L;
      const size_t block_off = static_cast<size_t>(block_ids[p0 / a.block_size]) * a.block_stride +
                               static_cast<size_t>(kvh * hd) * esz;
      for (int64_t j = 0; j < block_keys; ++j) {
        const std::byte* k = a.k_base + block_off + static_cast<size_t>(j) * pos_bytes;
        const std::byte* v = a.v_base + block_off + static_cast<size_t>(j) * pos_bytes;
        float* kj = kf + j * hd;
        float* vj = vf + j * hd;
        for (int64_t i = 0; i < whole; i += L) {
          hn::StoreU(LoadKV<Type>(df, k, i), df, kj + i);
          hn::StoreU(LoadKV<Type>(df, v, i), df, vj + i);
        }
        for (int64_t c = whole; c < hd; ++c) kj[c] = KVScalar<Type>(k, c), vj[c] = KVScalar<Type>(v, c);
      }
      std::fill(kf + block_keys * hd, kf + block_chunked * hd, 0.0f);  // rows past the block's end are zeros
      std::fill(vf + block_keys * hd, vf + block_chunked * hd, 0.0f);
      for (int64_t r = 0; r < tile.rows; ++r) {
        const int64_t t = tile.first_row + r;
        const int64_t length = a.rows[t].length;
        if (p0 >= length) continue;
        const int64_t nb = std::min(a.block_size, length - p0);
        const int64_t chunked = (nb + L - 1) / L * L;  // whole vectors of scores
        const float* q = a.q + (t * a.heads + first) * hd;
        float* row_scores = scores + r * group * padded;
        float* row_m = m + r * group;
        float* row_l = l + r * group;
        float* row_correction = correction + r * group;
        float* row_block_sums = block_sums + r * group;
        float* row_acc = acc + r * group * hd;
        for (int64_t g = 0; g < group; ++g) {
          // Scores q·k / sqrt(hd), L keys at a time, their vectors summed together at the end.
          const float* qg = q + g * hd;
          float* sg = row_scores + g * padded;
          VF vmax = hn::Set(df, minus_infinity);
          for (int64_t j0 = 0; j0 < chunked; j0 += L) {
            // Each key's dot product: two partial sums (over the even and the odd vectors of
            // the head), added; kBatch keys side by side, all L of them summed across their
            // lanes together.
            for (size_t j1 = 0; j1 < kLanes; j1 += kBatch) {
              VF even[kBatch], odd[kBatch];
              for (size_t jj = 0; jj < kBatch; ++jj) even[jj] = odd[jj] = hn::Zero(df);
              const float* kj = kf + (j0 + static_cast<int64_t>(j1)) * hd;
              int64_t i = 0;
              for (; i + 2 * L <= whole; i += 2 * L) {
                const VF q0 = hn::LoadU(df, qg + i), q1 = hn::LoadU(df, qg + i + L);
                for (size_t jj = 0; jj < kBatch; ++jj) {
                  even[jj] = hn::MulAdd(q0, hn::LoadU(df, kj + jj * hd + i), even[jj]);
                  odd[jj] = hn::MulAdd(q1, hn::LoadU(df, kj + jj * hd + i + L), odd[jj]);
                }
              }
              if (i < whole) {
                const VF q0 = hn::LoadU(df, qg + i);
                for (size_t jj = 0; jj < kBatch; ++jj) even[jj] = hn::MulAdd(q0, hn::LoadU(df, kj + jj * hd + i), even[jj]);
              }
              for (size_t jj = 0; jj < kBatch; ++jj) d[SlotOfVector(j1 + jj)] = hn::Add(even[jj], odd[jj]);
            }
            VF sum = SumOfEachVector(df, d);
            if (whole < hd) {
              hn::StoreU(sum, df, sg + j0);
              for (int64_t jj = 0; jj < L; ++jj)
                for (int64_t c = whole; c < hd; ++c) sg[j0 + jj] += qg[c] * kf[(j0 + jj) * hd + c];
              sum = hn::LoadU(df, sg + j0);
            }
            // Positions past the row's end score -inf (and weigh 0), masked here in the
            // register: scalar stores read back as a vector stall the load.
            const VF scaled = hn::IfThenElse(hn::FirstN(df, static_cast<size_t>(std::min(L, nb - j0))),
                                             hn::Mul(sum, hn::Set(df, a.scale)), hn::Set(df, minus_infinity));
            hn::StoreU(scaled, df, sg + j0);
            vmax = hn::Max(vmax, scaled);
          }
          // Online softmax: rescale what was accumulated to the new maximum, by
          // exp(m - m_new), which is taken for all the heads at once below.
          const float m_new = std::max(row_m[g], hn::GetLane(hn::MaxOfLanes(df, vmax)));
          row_correction[g] = row_m[g] - m_new;  // -inf on the first block
          const VF vm = hn::Set(df, m_new);
          // The block's weights summed as vectors, then across the lanes (a chain of scalar
          // adds over the block's keys took a fifth of the time).
          VF vsum = hn::Zero(df);
          for (int64_t j = 0; j < chunked; j += L) {
            const VF e = hn::IfThenElseZero(hn::FirstN(df, static_cast<size_t>(std::min(L, nb - j))),
                                            hn::Exp(df, hn::Sub(hn::LoadU(df, sg + j), vm)));
            hn::StoreU(e, df, sg + j);
            vsum = hn::Add(vsum, e);
          }
          row_block_sums[g] = hn::GetLane(hn::SumOfLanes(df, vsum));
          row_m[g] = m_new;
        }
        // The heads' rescalings in vectors (a scalar expf per block and head took 5% of a
        // prefill at 4096 tokens of context): exp(-inf) is 0 on the first block.
        for (int64_t g0 = 0; g0 < group; g0 += L) {
          const auto count = static_cast<size_t>(std::min(L, group - g0));
          HWY_ALIGN float lanes[kLanes] = {};
          std::copy_n(row_correction + g0, count, lanes);
          hn::Store(hn::Exp(df, hn::Load(df, lanes)), df, lanes);
          std::copy_n(lanes, count, row_correction + g0);
        }
        for (int64_t g = 0; g < group; ++g) row_l[g] = row_l[g] * row_correction[g] + row_block_sums[g];
        // acc = acc * correction + sum_j p_j v_j, two heads at a time where their chains fit
        // in the registers.
        int64_t g = 0;
        if (whole <= 4 * L && HWY_TARGET <= HWY_AVX3) {
          for (; g + 2 <= group; g += 2)
            AccumulateValuePair(df, row_scores + g * padded, padded, vf, nb, hd, whole, row_correction + g,
                                row_acc + g * hd);
        }
        for (; g < group; ++g)
          AccumulateValues(df, row_scores + g * padded, vf, nb, hd, whole, row_correction[g], row_acc + g * hd);
        for (g = 0; g < group && whole < hd; ++g) {
          const float* sg = row_scores + g * padded;
          float* ag = row_acc + g * hd;
          for (int64_t c = whole; c < hd; ++c) {
            float x = ag[c] * row_correction[g];
            for (int64_t j = 0; j < nb; ++j) x += sg[j] * vf[j * hd + c];
            ag[c] = x;
          }
        }
      }
    }
    for (int64_t r = 0; r < tile.rows; ++r) {
      const int64_t t = tile.first_row + r;
      for (int64_t g = 0; g < group; ++g) {
        float* out = a.out + (t * a.heads + first + g) * hd;
        const float inv = 1.0f / l[r * group + g];
        const float* ag = acc + (r * group + g) * hd;
        for (int64_t i = 0; i < hd; ++i) out[i] = ag[i] * inv;
      }
    }
  }
}

void AttentionTasks(const AttentionArgs& a, const AttentionTile* tiles, int64_t heads_per_task, int64_t task_begin,
                    int64_t task_end, float* scratch) {
  switch (a.kv_type) {
    case KVType::F32: AttentionTasksOf<KVType::F32>(a, tiles, heads_per_task, task_begin, task_end, scratch); return;
    case KVType::F16: AttentionTasksOf<KVType::F16>(a, tiles, heads_per_task, task_begin, task_end, scratch); return;
    case KVType::BF16: AttentionTasksOf<KVType::BF16>(a, tiles, heads_per_task, task_begin, task_end, scratch); return;
  }
}

float SumFloats(const float* p, int64_t count) {
  const DF df;
  const auto L = static_cast<int64_t>(hn::Lanes(df));
  VF a0 = hn::Zero(df), a1 = hn::Zero(df), a2 = hn::Zero(df), a3 = hn::Zero(df);
  int64_t i = 0;
  for (; i + 4 * L <= count; i += 4 * L) {
    a0 = hn::Add(a0, hn::LoadU(df, p + i));
    a1 = hn::Add(a1, hn::LoadU(df, p + i + L));
    a2 = hn::Add(a2, hn::LoadU(df, p + i + 2 * L));
    a3 = hn::Add(a3, hn::LoadU(df, p + i + 3 * L));
  }
  float s = hn::GetLane(hn::SumOfLanes(df, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
  for (; i < count; ++i) s += p[i];
  return s;
}

const char* TargetName() { return hwy::TargetName(HWY_TARGET); }
bool KQuantInLanes() { return kKQuantLanes; }

}  // namespace HWY_NAMESPACE
}  // namespace glass::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace glass::simd {

HWY_EXPORT(TargetName);
HWY_EXPORT(PreparedRowBytes);
HWY_EXPORT(PrepareRows);
HWY_EXPORT(MatmulRows);
HWY_EXPORT(RmsNorm);
HWY_EXPORT(SiluMul);
HWY_EXPORT(Add);
HWY_EXPORT(Rope);
HWY_EXPORT(AttentionScratchFloats);
HWY_EXPORT(SumFloats);
HWY_EXPORT(AttentionTasks);
HWY_EXPORT(KQuantInLanes);

const char* target_name() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }
bool kquant_activations_in_lanes() { return HWY_DYNAMIC_DISPATCH(KQuantInLanes)(); }
// Position 64k + 4j + b takes value 16j + 4k + b (kquant_lane_value): runs of 4 values keep
// together, run 4j + k moving to 16k + j.
void kquant_act_to_lane_order(KActBlock& a) {
  int16_t x[256];
  int8_t hi[256], lo[256];
  std::memcpy(x, a.x, sizeof x);
  std::memcpy(hi, a.hi, sizeof hi);
  std::memcpy(lo, a.lo, sizeof lo);
  for (int j = 0; j < 16; ++j)
    for (int k = 0; k < 4; ++k) {
      std::memcpy(a.x + 64 * k + 4 * j, x + 16 * j + 4 * k, 8);
      std::memcpy(a.hi + 64 * k + 4 * j, hi + 16 * j + 4 * k, 4);
      std::memcpy(a.lo + 64 * k + 4 * j, lo + 16 * j + 4 * k, 4);
    }
}
std::vector<int64_t> available_targets() { return hwy::SupportedAndGeneratedTargets(); }
void force_target(int64_t target) { hwy::SetSupportedTargetsForTest(target); }
const char* name_of_target(int64_t target) { return hwy::TargetName(target); }
size_t prepared_row_bytes(ActivationFormat format, int64_t cols) {
  return HWY_DYNAMIC_DISPATCH(PreparedRowBytes)(format, cols);
}
void prepare_rows(WeightType type, const float* x, int64_t n, int64_t cols, std::byte* out) {
  HWY_DYNAMIC_DISPATCH(PrepareRows)(type, x, n, cols, out);
}
void matmul_rows(const WeightMatrix& w, const std::byte* prepared, int64_t n, int64_t row_begin, int64_t row_end,
                 const float* bias, float* y, bool vnni) {
  HWY_DYNAMIC_DISPATCH(MatmulRows)(w, prepared, n, row_begin, row_end, bias, y, vnni);
}

bool cpu_has_avx512_vnni() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}
bool cpu_has_avx_vnni() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avxvnni");
#else
  return false;
#endif
}
void rmsnorm(const float* x, const float* weight, int64_t n, int64_t dim, float eps, float* y) {
  HWY_DYNAMIC_DISPATCH(RmsNorm)(x, weight, n, dim, eps, y);
}
void silu_mul(const float* gate, const float* up, int64_t count, float* out) {
  HWY_DYNAMIC_DISPATCH(SiluMul)(gate, up, count, out);
}
void add(float* x, const float* y, int64_t count) { HWY_DYNAMIC_DISPATCH(Add)(x, y, count); }
void rope(float* x, int64_t n, int64_t heads, int64_t head_dim, const float* cos, const float* sin) {
  HWY_DYNAMIC_DISPATCH(Rope)(x, n, heads, head_dim, cos, sin);
}
float sum_floats(const float* p, int64_t count) { return HWY_DYNAMIC_DISPATCH(SumFloats)(p, count); }
int64_t attention_scratch_floats(const AttentionArgs& args, int64_t heads_per_task) {
  return HWY_DYNAMIC_DISPATCH(AttentionScratchFloats)(args, heads_per_task);
}
void attention_tasks(const AttentionArgs& args, const AttentionTile* tiles, int64_t heads_per_task, int64_t task_begin,
                     int64_t task_end, float* scratch) {
  HWY_DYNAMIC_DISPATCH(AttentionTasks)(args, tiles, heads_per_task, task_begin, task_end, scratch);
}

}  // namespace glass::simd
#endif
