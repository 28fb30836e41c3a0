#include "kernels/amx_kernels.h"

#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "base/error.h"
#include "kernels/simd_kernels.h"

namespace glass::amx {

namespace {

// Linux's arch_prctl codes for the dynamically enabled tile-data state (asm/prctl.h).
constexpr int kArchGetXcompPerm = 0x1022;
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;

bool cpuid_bit(unsigned leaf, unsigned sub, int reg, int bit) {
  unsigned r[4];
  if (__get_cpuid_count(leaf, sub, &r[0], &r[1], &r[2], &r[3]) == 0) return false;
  return (r[reg] >> bit) & 1;
}
constexpr int kEbx = 1, kEcx = 2, kEdx = 3;

// The palette-1 tile configuration ldtilecfg reads: 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

// Tile registers: 0-3 accumulators (16 tokens x 16 weight rows of fp32 or int32), 4-5
// activations (16 tokens each), 6-7 weights (16 rows each).
constexpr TileConfig make_config(uint16_t activation_bytes, uint8_t weight_lines) {
  TileConfig c;
  for (int i = 0; i < 4; ++i) c.rows[i] = 16, c.colsb[i] = 64;
  for (int i = 4; i < 6; ++i) c.rows[i] = 16, c.colsb[i] = activation_bytes;
  for (int i = 6; i < 8; ++i) c.rows[i] = weight_lines, c.colsb[i] = 64;
  return c;
}
// bf16: 32 values (a chunk) per activation line, 16 lines of pairs per weight tile.
alignas(64) constexpr TileConfig kBf16Config = make_config(64, 16);
// int8: one 32-value block per activation line (each block has its own scales), 8 lines of
// quads per weight tile.
alignas(64) constexpr TileConfig kInt8Config = make_config(32, 8);

constexpr int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// Activations kept in L2 while a block of tokens meets every weight row of the thread.
constexpr int64_t kActivationBudget = 768 << 10;

using simd::ActBlock;

}  // namespace

bool cpu_has_amx() {
#if defined(__x86_64__)
  // CPUID.(7,0): EDX 22 AMX-BF16, 24 AMX-TILE, 25 AMX-INT8; XCR0 17/18 the OS manages tile state.
  if (!cpuid_bit(7, 0, kEdx, 22) || !cpuid_bit(7, 0, kEdx, 24) || !cpuid_bit(7, 0, kEdx, 25)) return false;
  if (!cpuid_bit(1, 0, kEcx, 27)) return false;  // OSXSAVE, for xgetbv
  unsigned lo, hi;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if (((lo >> 17) & 3) != 3) return false;
  const bool avx512_bf16 = cpuid_bit(7, 1, 0 /*eax*/, 5);
  return avx512_bf16 && cpu_has_vnni512() && cpuid_bit(7, 0, kEbx, 17) /*avx512dq*/;
#else
  return false;
#endif
}

bool cpu_has_vnni512() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("f16c") &&
         __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

bool request_tile_permission(std::string* reason) {
#if defined(__linux__) && defined(__x86_64__)
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) {
    *reason = str_cat("arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) failed: ", std::strerror(errno));
    return false;
  }
  if (!tile_permission_granted()) {
    *reason = "arch_prctl(ARCH_GET_XCOMP_PERM) does not list XTILEDATA after the request";
    return false;
  }
  return true;
#else
  *reason = "tile permission requests are implemented for Linux on x86-64 only";
  return false;
#endif
}

bool tile_permission_granted() {
#if defined(__linux__) && defined(__x86_64__)
  unsigned long features = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &features) != 0) return false;
  return (features >> kXfeatureXtiledata) & 1;
#else
  return false;
#endif
}

size_t prepared_row_bytes(WeightType t, int64_t cols) {
  if (t == WeightType::BF16) return static_cast<size_t>(kBf16Parts * round_up(cols, kTileChunk)) * 2;
  return static_cast<size_t>(cols / kQuantBlock) * sizeof(ActBlock);
}

int64_t padded_tokens(int64_t n) { return round_up(n, 16); }

// ---------------------------------------------------------------- AMX and AVX-512 code

#pragma GCC push_options
#pragma GCC target("amx-tile,amx-int8,amx-bf16,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512bf16,f16c,fma")
// GCC 12 reports the self-initialised placeholders of its own AVX-512 intrinsics
// (_mm512_undefined_ps) as maybe uninitialised.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace {

// The tileloadd intrinsics are asm statements without a memory operand: this keeps the
// compiler from moving (or dropping) the stores that fill a buffer a tile then loads.
inline void tile_input_barrier() { __asm__ __volatile__("" ::: "memory"); }

// Rows [lo, hi) of a 16-row group as a lane mask.
inline __mmask16 row_mask(int64_t lo, int64_t hi) {
  return static_cast<__mmask16>(((1u << (hi - lo)) - 1) << lo);
}

// 16 weight rows of one token: y = acc + bias (bias a vector, zero without one), lanes of `mask`.
inline void store_row(float* y, __m512 acc, __m512 bias, __mmask16 mask) {
  const __m512 v = _mm512_add_ps(acc, bias);
  if (mask == 0xffff) _mm512_storeu_ps(y, v);
  else _mm512_mask_storeu_ps(y, mask, v);
}

inline __m512 bias_of(const float* bias, int64_t first_row, __mmask16 mask) {
  return bias != nullptr ? _mm512_maskz_loadu_ps(mask, bias + first_row) : _mm512_setzero_ps();
}

// ------------------------------------------------ bf16

// Tokens [t0, t0 + 16 MT) against groups [g0, g0 + NG) with tiles: MT activation tiles of 16
// tokens, NG weight groups. Every output is summed the same way in every variant: chunk by
// chunk, each chunk's parts in order, by one tdpbf16ps each.
template <int MT, int NG>
inline void Bf16Block(const WeightMatrix& w, const std::byte* x, size_t xstride, int64_t t0, int64_t n, int64_t g0,
                      int64_t row_begin, int64_t row_end, const float* bias, float* y) {
  static_assert((MT == 1 && NG <= 4) || (MT == 2 && NG <= 2));
  const int64_t chunks = (w.cols + kTileChunk - 1) / kTileChunk;
  const size_t part_bytes = static_cast<size_t>(chunks * kTileChunk) * 2;
  const std::byte* a0 = x + static_cast<size_t>(t0) * xstride;
  const std::byte* a1 = a0 + 16 * xstride;
  const size_t group_bytes = tiled_group_bytes(WeightType::BF16, w.cols);
  const std::byte* b = tile_group(w, g0);
  const auto stride = static_cast<long>(xstride);
  constexpr int kAccumulators = MT * NG;
  _tile_zero(0);
  if constexpr (kAccumulators > 1) _tile_zero(1);
  if constexpr (kAccumulators > 2) _tile_zero(2);
  if constexpr (kAccumulators > 3) _tile_zero(3);
  for (int64_t c = 0; c < chunks; ++c) {
    const size_t off = static_cast<size_t>(c) * 64;
    const std::byte* bc = b + static_cast<size_t>(c) * 1024;
    if constexpr (MT == 1) {
      // Every part of the 16 tokens stays loaded (tiles 4, 5 and 6 with three parts); the
      // groups' weight tiles stream past them (through tiles 6 and 7 in turn, or 7 alone).
      _tile_loadd(4, a0 + off, stride);
      if constexpr (kBf16Parts > 1) _tile_loadd(5, a0 + part_bytes + off, stride);
      if constexpr (kBf16Parts > 2) _tile_loadd(6, a0 + 2 * part_bytes + off, stride);
#define GLASS_BF16_GROUP(ACC, B, GI)                          \
  do {                                                        \
    _tile_loadd(B, bc + (GI) * group_bytes, 64);              \
    _tile_dpbf16ps(ACC, 4, B);                                \
    if constexpr (kBf16Parts > 1) _tile_dpbf16ps(ACC, 5, B);  \
    if constexpr (kBf16Parts > 2) _tile_dpbf16ps(ACC, 6, B);  \
  } while (0)
      if constexpr (kBf16Parts > 2) {
        GLASS_BF16_GROUP(0, 7, 0);
        if constexpr (NG > 1) GLASS_BF16_GROUP(1, 7, 1);
        if constexpr (NG > 2) GLASS_BF16_GROUP(2, 7, 2);
        if constexpr (NG > 3) GLASS_BF16_GROUP(3, 7, 3);
      } else {
        GLASS_BF16_GROUP(0, 6, 0);
        if constexpr (NG > 1) GLASS_BF16_GROUP(1, 7, 1);
        if constexpr (NG > 2) GLASS_BF16_GROUP(2, 6, 2);
        if constexpr (NG > 3) GLASS_BF16_GROUP(3, 7, 3);
      }
#undef GLASS_BF16_GROUP
    } else {
      _tile_loadd(6, bc, 64);
      if constexpr (NG > 1) _tile_loadd(7, bc + group_bytes, 64);
      for (int p = 0; p < kBf16Parts; ++p) {
        const size_t poff = static_cast<size_t>(p) * part_bytes + off;
        _tile_loadd(4, a0 + poff, stride);
        _tile_loadd(5, a1 + poff, stride);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 5, 6);
        if constexpr (NG > 1) {
          _tile_dpbf16ps(2, 4, 7);
          _tile_dpbf16ps(3, 5, 7);
        }
      }
    }
  }
  // Accumulator i holds (token tile, group): MT == 1: (0, i); MT == 2: (i % 2, i / 2).
  alignas(64) float out[4][16][16];
  _tile_stored(0, out[0], 64);
  if constexpr (kAccumulators > 1) _tile_stored(1, out[1], 64);
  if constexpr (kAccumulators > 2) _tile_stored(2, out[2], 64);
  if constexpr (kAccumulators > 3) _tile_stored(3, out[3], 64);
  for (int i = 0; i < kAccumulators; ++i) {
    const int m = MT == 1 ? 0 : i % 2, gi = MT == 1 ? i : i / 2;
    const int64_t first = (g0 + gi) * kTileRows;
    const int64_t lo = std::max<int64_t>(row_begin, first), hi = std::min<int64_t>(row_end, first + kTileRows);
    if (lo >= hi) continue;
    const __mmask16 mask = row_mask(lo - first, hi - first);
    const __m512 vbias = bias_of(bias, first, mask);
    for (int r = 0; r < 16; ++r) {
      const int64_t t = t0 + 16 * m + r;
      if (t >= n) break;
      const __m512 acc = _mm512_load_ps(out[i][r]);
      const __m512 v = bias != nullptr ? _mm512_add_ps(acc, vbias) : acc;
      _mm512_mask_storeu_ps(y + t * w.rows + first, mask, v);
    }
  }
}

void MatmulBf16(const WeightMatrix& w, const std::byte* x, int64_t n, int64_t row_begin, int64_t row_end,
                const float* bias, float* y) {
  const size_t xstride = prepared_row_bytes(WeightType::BF16, w.cols);
  const int64_t g_begin = row_begin / kTileRows, g_end = (row_end + kTileRows - 1) / kTileRows;
  const int64_t padded = padded_tokens(n);
  if (padded == 16) {  // decode and small batches: 16 tokens against 4 groups at a time
    int64_t g = g_begin;
    for (; g + 4 <= g_end; g += 4) Bf16Block<1, 4>(w, x, xstride, 0, n, g, row_begin, row_end, bias, y);
    switch (g_end - g) {
      case 3: Bf16Block<1, 3>(w, x, xstride, 0, n, g, row_begin, row_end, bias, y); break;
      case 2: Bf16Block<1, 2>(w, x, xstride, 0, n, g, row_begin, row_end, bias, y); break;
      case 1: Bf16Block<1, 1>(w, x, xstride, 0, n, g, row_begin, row_end, bias, y); break;
      default: break;
    }
    return;
  }
  // Prefill: a block of tokens whose activations stay in L2 meets every group of the range,
  // 32 tokens x 2 groups a step.
  const int64_t block =
      std::max<int64_t>(32, kActivationBudget / static_cast<int64_t>(xstride) / 32 * 32);
  for (int64_t b0 = 0; b0 < padded; b0 += block) {
    const int64_t b1 = std::min(padded, b0 + block);
    for (int64_t g = g_begin; g < g_end; g += 2) {
      const bool pair = g + 1 < g_end;
      int64_t t = b0;
      for (; t + 32 <= b1; t += 32) {
        if (pair) Bf16Block<2, 2>(w, x, xstride, t, n, g, row_begin, row_end, bias, y);
        else Bf16Block<2, 1>(w, x, xstride, t, n, g, row_begin, row_end, bias, y);
      }
      if (t < b1) {
        if (pair) Bf16Block<1, 2>(w, x, xstride, t, n, g, row_begin, row_end, bias, y);
        else Bf16Block<1, 1>(w, x, xstride, t, n, g, row_begin, row_end, bias, y);
      }
    }
  }
}

// ------------------------------------------------ int8

// A q4_0 block's weight tile as tdpbssd reads it (8 lines of 64 signed bytes, value - 8)
// from its 4 lines of nibbles.
inline void UnpackQ4Tile(const uint8_t* q, int8_t* tile) {
  const __m512i low = _mm512_set1_epi8(0x0f), eight = _mm512_set1_epi8(8);
  for (int s = 0; s < 4; ++s) {
    const __m512i packed = _mm512_loadu_si512(q + 64 * s);
    _mm512_store_si512(tile + 128 * s, _mm512_sub_epi8(_mm512_and_si512(packed, low), eight));
    _mm512_store_si512(tile + 128 * s + 64, _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(packed, 4), low), eight));
  }
}

// Tokens [t0, t0 + 16 MT) against groups [g0, g0 + NG), block by block: the tiles give each
// block's exact int32 dots, then acc = fma(float(dot), d_w * d_x, acc) as every int8 kernel.
template <WeightType Type, int MT, int NG>
inline void Int8Block(const WeightMatrix& w, const ActBlock* x, int64_t xstride, int64_t t0, int64_t n, int64_t g0,
                      int64_t row_begin, int64_t row_end, const float* bias, float* y) {
  static_assert(MT <= 2 && NG <= 2);
  const int64_t nb = w.cols / kQuantBlock;
  const int64_t tokens = std::min<int64_t>(16 * MT, n - t0);
  alignas(64) float acc[32][2][16];
  alignas(64) int32_t dots[4][16][16];
  alignas(64) int8_t unpacked[2][512];
  for (int64_t r = 0; r < tokens; ++r)
    for (int gi = 0; gi < NG; ++gi) _mm512_store_ps(acc[r][gi], _mm512_setzero_ps());
  const auto stride = static_cast<long>(xstride * static_cast<int64_t>(sizeof(ActBlock)));
  const ActBlock* a0 = x + t0 * xstride;
  const ActBlock* a1 = a0 + 16 * xstride;
  for (int64_t b = 0; b < nb; ++b) {
    const std::byte* blk[2] = {tile_block(w, g0, b), NG > 1 ? tile_block(w, g0 + 1, b) : nullptr};
    if constexpr (Type == WeightType::Q8_0) {
      _tile_loadd(6, blk[0] + 32, 64);
      if constexpr (NG > 1) _tile_loadd(7, blk[1] + 32, 64);
    } else {
      for (int gi = 0; gi < NG; ++gi) UnpackQ4Tile(reinterpret_cast<const uint8_t*>(blk[gi] + 32), unpacked[gi]);
      tile_input_barrier();
      _tile_loadd(6, unpacked[0], 64);
      if constexpr (NG > 1) _tile_loadd(7, unpacked[1], 64);
    }
    _tile_loadd(4, a0[b].q, stride);
    if constexpr (MT > 1) _tile_loadd(5, a1[b].q, stride);
    _tile_zero(0);
    _tile_dpbssd(0, 4, 6);
    if constexpr (NG > 1) {
      _tile_zero(1);
      _tile_dpbssd(1, 4, 7);
    }
    if constexpr (MT > 1) {
      _tile_zero(2);
      _tile_dpbssd(2, 5, 6);
      if constexpr (NG > 1) {
        _tile_zero(3);
        _tile_dpbssd(3, 5, 7);
      }
    }
    _tile_stored(0, dots[0], 64);
    if constexpr (NG > 1) _tile_stored(1, dots[1], 64);
    if constexpr (MT > 1) _tile_stored(2, dots[2], 64);
    if constexpr (MT > 1 && NG > 1) _tile_stored(3, dots[3], 64);
    for (int gi = 0; gi < NG; ++gi) {
      const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk[gi])));
      for (int64_t r = 0; r < tokens; ++r) {
        const int m = static_cast<int>(r / 16);
        const __m512 d = _mm512_cvtepi32_ps(_mm512_load_si512(dots[2 * m + gi][r % 16]));
        const __m512 s = _mm512_mul_ps(dw, _mm512_set1_ps(a0[r * xstride + b].scale));
        _mm512_store_ps(acc[r][gi], _mm512_fmadd_ps(d, s, _mm512_load_ps(acc[r][gi])));
      }
    }
  }
  for (int gi = 0; gi < NG; ++gi) {
    const int64_t first = (g0 + gi) * kTileRows;
    const int64_t lo = std::max<int64_t>(row_begin, first), hi = std::min<int64_t>(row_end, first + kTileRows);
    if (lo >= hi) continue;
    const __mmask16 mask = row_mask(lo - first, hi - first);
    const __m512 vbias = bias_of(bias, first, mask);
    for (int64_t r = 0; r < tokens; ++r) store_row(y + (t0 + r) * w.rows + first, _mm512_load_ps(acc[r][gi]), vbias, mask);
  }
}

template <WeightType Type>
void MatmulInt8Tiles(const WeightMatrix& w, const ActBlock* x, int64_t n, int64_t row_begin, int64_t row_end,
                     const float* bias, float* y) {
  const int64_t xstride = w.cols / kQuantBlock;
  const int64_t g_begin = row_begin / kTileRows, g_end = (row_end + kTileRows - 1) / kTileRows;
  const int64_t padded = padded_tokens(n);
  const int64_t block =
      std::max<int64_t>(32, kActivationBudget / (xstride * static_cast<int64_t>(sizeof(ActBlock))) / 32 * 32);
  for (int64_t b0 = 0; b0 < padded; b0 += block) {
    const int64_t b1 = std::min(padded, b0 + block);
    for (int64_t g = g_begin; g < g_end; g += 2) {
      const bool pair = g + 1 < g_end;
      int64_t t = b0;
      for (; t + 32 <= b1; t += 32) {
        if (pair) Int8Block<Type, 2, 2>(w, x, xstride, t, n, g, row_begin, row_end, bias, y);
        else Int8Block<Type, 2, 1>(w, x, xstride, t, n, g, row_begin, row_end, bias, y);
      }
      if (t < b1) {
        if (pair) Int8Block<Type, 1, 2>(w, x, xstride, t, n, g, row_begin, row_end, bias, y);
        else Int8Block<Type, 1, 1>(w, x, xstride, t, n, g, row_begin, row_end, bias, y);
      }
    }
  }
}

// ------------------------------------------------ int8 with AVX-512 VNNI, on the tiled layout

inline __m512i Broadcast4Bytes(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// Group g (16 rows, one per lane) against T tokens. vpdpbusd multiplies unsigned weights by
// signed activations: q8_0 weights are made unsigned by adding 128, q4_0 are their nibbles
// (value + 8), and the excess (128 or 8 times the block's activation sum) is subtracted, so
// the block's int32 dot is exact, as the tiles'.
template <WeightType Type, int T>
inline void GroupVnni(const WeightMatrix& w, int64_t g, const ActBlock* x, int64_t xstride, int64_t t0,
                      int64_t row_begin, int64_t row_end, const float* bias, float* y) {
  const int64_t nb = w.cols / kQuantBlock;
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  const ActBlock* xt = x + t0 * xstride;
  const size_t block_bytes = tiled_block_bytes(Type);
  const std::byte* blk = tile_block(w, g, 0);
  for (int64_t b = 0; b < nb; ++b, blk += block_bytes) {
    if (T == 1) {  // decode streams the matrix: fetch a few blocks ahead
      __builtin_prefetch(blk + 4 * block_bytes);
      __builtin_prefetch(blk + 4 * block_bytes + 64);
      __builtin_prefetch(blk + 4 * block_bytes + 128);
      __builtin_prefetch(blk + 4 * block_bytes + 192);
      __builtin_prefetch(blk + 4 * block_bytes + 256);
      if constexpr (Type == WeightType::Q8_0) {
        __builtin_prefetch(blk + 4 * block_bytes + 320);
        __builtin_prefetch(blk + 4 * block_bytes + 384);
        __builtin_prefetch(blk + 4 * block_bytes + 448);
        __builtin_prefetch(blk + 4 * block_bytes + 512);
      }
    }
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
    const auto* q = reinterpret_cast<const uint8_t*>(blk + 32);
    // Two partial sums per token so consecutive vpdpbusd do not wait on each other.
    constexpr int C = T <= 2 ? 4 : 2;
    __m512i dot[C][T];
    for (int c = 0; c < C; ++c)
      for (int t = 0; t < T; ++t) dot[c][t] = _mm512_setzero_si512();
    int32_t excess;
    if constexpr (Type == WeightType::Q8_0) {
      const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
#pragma GCC unroll 8
      for (int s = 0; s < 8; ++s) {
        const __m512i wu = _mm512_xor_si512(_mm512_loadu_si512(q + 64 * s), flip);
        for (int t = 0; t < T; ++t)
          dot[s % C][t] = _mm512_dpbusd_epi32(dot[s % C][t], wu, Broadcast4Bytes(xt[t * xstride + b].q + 4 * s));
      }
      excess = 128;
    } else {
      const __m512i low = _mm512_set1_epi8(0x0f);
#pragma GCC unroll 4
      for (int s = 0; s < 4; ++s) {
        const __m512i packed = _mm512_loadu_si512(q + 64 * s);
        const __m512i lo = _mm512_and_si512(packed, low);
        const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(packed, 4), low);
        for (int t = 0; t < T; ++t) {
          const int8_t* xq = xt[t * xstride + b].q + 8 * s;
          dot[(2 * s) % C][t] = _mm512_dpbusd_epi32(dot[(2 * s) % C][t], lo, Broadcast4Bytes(xq));
          dot[(2 * s + 1) % C][t] = _mm512_dpbusd_epi32(dot[(2 * s + 1) % C][t], hi, Broadcast4Bytes(xq + 4));
        }
      }
      excess = 8;
    }
    for (int c = 1; c < C; ++c)
      for (int t = 0; t < T; ++t) dot[0][t] = _mm512_add_epi32(dot[0][t], dot[c][t]);
    for (int t = 0; t < T; ++t) {
      const ActBlock& xb = xt[t * xstride + b];
      const __m512i exact = _mm512_sub_epi32(dot[0][t], _mm512_set1_epi32(excess * xb.sum));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(exact), _mm512_mul_ps(dw, _mm512_set1_ps(xb.scale)), acc[t]);
    }
  }
  const int64_t first = g * kTileRows;
  const int64_t lo = std::max<int64_t>(row_begin, first), hi = std::min<int64_t>(row_end, first + kTileRows);
  const __mmask16 mask = row_mask(lo - first, hi - first);
  const __m512 vbias = bias_of(bias, first, mask);
  for (int t = 0; t < T; ++t) store_row(y + (t0 + t) * w.rows + first, acc[t], vbias, mask);
}

template <WeightType Type>
void MatmulInt8Vnni(const WeightMatrix& w, const ActBlock* x, int64_t n, int64_t row_begin, int64_t row_end,
                    const float* bias, float* y) {
  const int64_t xstride = w.cols / kQuantBlock;
  const int64_t g_begin = row_begin / kTileRows, g_end = (row_end + kTileRows - 1) / kTileRows;
  for (int64_t g = g_begin; g < g_end; ++g) {
    for (int64_t t = 0; t < n; t += 8) {
      switch (std::min<int64_t>(8, n - t)) {
        case 1: GroupVnni<Type, 1>(w, g, x, xstride, t, row_begin, row_end, bias, y); break;
        case 2: GroupVnni<Type, 2>(w, g, x, xstride, t, row_begin, row_end, bias, y); break;
        case 3: GroupVnni<Type, 3>(w, g, x, xstride, t, row_begin, row_end, bias, y); break;
        case 4: GroupVnni<Type, 4>(w, g, x, xstride, t, row_begin, row_end, bias, y); break;
        case 5: GroupVnni<Type, 5>(w, g, x, xstride, t, row_begin, row_end, bias, y); break;
        case 6: GroupVnni<Type, 6>(w, g, x, xstride, t, row_begin, row_end, bias, y); break;
        case 7: GroupVnni<Type, 7>(w, g, x, xstride, t, row_begin, row_end, bias, y); break;
        default: GroupVnni<Type, 8>(w, g, x, xstride, t, row_begin, row_end, bias, y); break;
      }
    }
  }
}

// ------------------------------------------------ entry points (compiled for AMX)

void PrepareBf16Rows(const float* x, int64_t n, int64_t cols, std::byte* out) {
  const int64_t padded = round_up(cols, kTileChunk);
  const size_t row_bytes = prepared_row_bytes(WeightType::BF16, cols);
  for (int64_t t = 0; t < n; ++t) {
    const float* src = x + t * cols;
    auto* parts = reinterpret_cast<uint16_t*>(out + static_cast<size_t>(t) * row_bytes);
    for (int64_t c = 0; c < padded; c += 16) {
      const int64_t valid = std::clamp<int64_t>(cols - c, 0, 16);
      const auto mask = static_cast<__mmask16>((1u << valid) - 1);
      __m512 rest = _mm512_maskz_loadu_ps(mask, src + c);
      for (int p = 0; p < kBf16Parts; ++p) {
        // Round to nearest even; what the part leaves is exact in fp32 and goes to the next.
        const __m256bh part = _mm512_cvtneps_pbh(rest);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(parts + p * padded + c), (__m256i)part);
        rest = _mm512_sub_ps(rest, _mm512_cvtpbh_ps(part));
      }
    }
  }
}

void MatmulTiles(const WeightMatrix& w, const std::byte* prepared, int64_t n, int64_t row_begin, int64_t row_end,
                 const float* bias, float* y) {
  const auto* x = reinterpret_cast<const ActBlock*>(prepared);
  switch (w.type) {
    case WeightType::BF16:
      _tile_loadconfig(&kBf16Config);
      MatmulBf16(w, prepared, n, row_begin, row_end, bias, y);
      break;
    case WeightType::Q8_0:
      _tile_loadconfig(&kInt8Config);
      MatmulInt8Tiles<WeightType::Q8_0>(w, x, n, row_begin, row_end, bias, y);
      break;
    case WeightType::Q4_0:
      _tile_loadconfig(&kInt8Config);
      MatmulInt8Tiles<WeightType::Q4_0>(w, x, n, row_begin, row_end, bias, y);
      break;
    default: return;
  }
  _tile_release();  // the tile state returns to its initial form: cheaper context switches
}

void MatmulVnni(const WeightMatrix& w, const std::byte* prepared, int64_t n, int64_t row_begin, int64_t row_end,
                const float* bias, float* y) {
  const auto* x = reinterpret_cast<const ActBlock*>(prepared);
  if (w.type == WeightType::Q8_0) MatmulInt8Vnni<WeightType::Q8_0>(w, x, n, row_begin, row_end, bias, y);
  else MatmulInt8Vnni<WeightType::Q4_0>(w, x, n, row_begin, row_end, bias, y);
}

}  // namespace

#pragma GCC diagnostic pop
#pragma GCC pop_options

void prepare_bf16_rows(const float* x, int64_t n, int64_t cols, std::byte* out) { PrepareBf16Rows(x, n, cols, out); }

void matmul_tiles(const WeightMatrix& w, const std::byte* prepared, int64_t n, int64_t row_begin, int64_t row_end,
                  const float* bias, float* y) {
  if (!w.tiled) fail("amx::matmul_tiles needs a tiled matrix");
  MatmulTiles(w, prepared, n, row_begin, row_end, bias, y);
}

void matmul_vnni(const WeightMatrix& w, const std::byte* prepared, int64_t n, int64_t row_begin, int64_t row_end,
                 const float* bias, float* y) {
  if (!w.tiled || !interleavable(w.type)) fail("amx::matmul_vnni needs a tiled q8_0 or q4_0 matrix");
  MatmulVnni(w, prepared, n, row_begin, row_end, bias, y);
}

}  // namespace glass::amx
