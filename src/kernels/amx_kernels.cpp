#include "kernels/amx_kernels.h"

#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/half.h"
#include "kernels/amx_tile_emulation.h"
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

// bf16: 32 values (a chunk) per activation line, 16 lines of pairs per weight tile. With
// fewer than 16 tokens the tiles hold only their lines (a decode step multiplies one line,
// not sixteen); every line's products and sums are the same whatever the line count.
constexpr TileConfig make_bf16_config(uint8_t tokens) {
  TileConfig c = make_config(tokens, 64, 16);
  if (tokens < 16) c.rows[6] = tokens;  // tile 6 holds the third activation part
  return c;
}
struct Bf16Configs {
  TileConfig by_tokens[17];
};
constexpr Bf16Configs make_bf16_configs() {
  Bf16Configs all;
  for (int t = 1; t <= 16; ++t) all.by_tokens[t] = make_bf16_config(static_cast<uint8_t>(t));
  return all;
}
alignas(64) constexpr Bf16Configs kBf16Configs = make_bf16_configs();
// int8: one 32-value block per activation line (each block has its own scales), 8 lines of
// quads per weight tile.
alignas(64) constexpr TileConfig kInt8Config = make_config(16, 32, 8);

constexpr int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

int checked_parts(int bf16_parts) {
  if (bf16_parts != 1 && bf16_parts != kBf16Parts)
    fail("amx: ", bf16_parts, " bf16 parts per activation; 1 or ", kBf16Parts, " expected");
  return bf16_parts;
}

// The int8 kernels' activations of `padded` tokens (a multiple of 16), nb blocks of 32 values
// each, as prepare_rows writes them: the int8 values tile-major (per 16 tokens and block,
// one 512-byte tile of 16 lines), each block's scale and sum of values in [block][token]
// tables.
struct Int8Activations {
  const int8_t* q;
  const float* scales;
  const int32_t* sums;
  int64_t nb, padded;
  const int8_t* tile(int64_t t, int64_t b) const { return q + ((t / 16 * nb + b) * 16 + t % 16) * 32; }
  float scale(int64_t t, int64_t b) const { return scales[b * padded + t]; }
  int32_t sum(int64_t t, int64_t b) const { return sums[b * padded + t]; }
};

Int8Activations int8_view(const std::byte* prepared, int64_t n, int64_t cols) {
  Int8Activations a;
  a.nb = cols / kQuantBlock;
  a.padded = round_up(n, 16);
  a.q = reinterpret_cast<const int8_t*>(prepared);
  a.scales = reinterpret_cast<const float*>(prepared + static_cast<size_t>(a.padded * a.nb) * 32);
  a.sums = reinterpret_cast<const int32_t*>(a.scales + a.padded * a.nb);
  return a;
}

// ---- k-quants (q4_K, q5_K, q6_K): their tile kernel and its layouts (MatmulKQuantTiles).

constexpr int kKSteps = static_cast<int>(kSuperBlock / 64);  // tile steps of 64 values per super-block
constexpr int kKSumPairs = 8;                                 // a super-block's 16 sums of 16 values, as word pairs

// The k-quant tiles' activations, as prepare_rows writes them for `padded` tokens (a multiple
// of 16) and nb super-blocks: the 12-bit values X of the vector kernels (simd::KActBlock) in
// two signed parts, X = 64 xh + xl, tile-major (per 16 tokens, super-block, step of 64 values
// and part, one 1 KiB tile whose line j is token j's 64 bytes); per super-block and token,
// d_x and the 16 sums of 16 values as 8 pairs of words, in [super-block][...][token] tables.
struct KQuantActivations {
  const int8_t* parts;
  const float* d;
  const int32_t* sum_pairs;
  int64_t nb, padded;
  // Token t's line of (step s, part p) of super-block b.
  const int8_t* line(int64_t t, int64_t b, int s, int p) const {
    return parts + (((t / 16 * nb + b) * kKSteps + s) * 2 + p) * 1024 + t % 16 * 64;
  }
  float dx(int64_t t, int64_t b) const { return d[b * padded + t]; }
  int32_t sum_pair(int64_t t, int64_t b, int k) const { return sum_pairs[(b * kKSumPairs + k) * padded + t]; }
};
constexpr size_t kKQuantBytesPerValue = 2;  // xh and xl
constexpr size_t kKQuantBytesPerBlock =
    kSuperBlock * kKQuantBytesPerValue + sizeof(float) + kKSumPairs * sizeof(int32_t);

KQuantActivations kquant_view(const std::byte* prepared, int64_t n, int64_t cols) {
  KQuantActivations a;
  a.nb = cols / kSuperBlock;
  a.padded = round_up(n, 16);
  const auto blocks = static_cast<size_t>(a.padded * a.nb);
  a.parts = reinterpret_cast<const int8_t*>(prepared);
  a.d = reinterpret_cast<const float*>(prepared + blocks * kSuperBlock * kKQuantBytesPerValue);
  a.sum_pairs = reinterpret_cast<const int32_t*>(a.d + blocks);
  return a;
}

bool kquant_tile_type(WeightType t) { return traits(t).activation == ActivationFormat::Int12x256; }

}  // namespace

bool cpu_has_amx() {
#if defined(__x86_64__)
  // CPUID.(7,0): EDX 22 AMX-BF16, 24 AMX-TILE, 25 AMX-INT8; XCR0 17/18 the OS manages tile state.
  if (!cpuid_bit(7, 0, kEdx, 22) || !cpuid_bit(7, 0, kEdx, 24) || !cpuid_bit(7, 0, kEdx, 25)) return false;
  if (!cpuid_bit(1, 0, kEcx, 27)) return false;  // OSXSAVE, for xgetbv
  unsigned lo, hi;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if (((lo >> 17) & 3) != 3) return false;
  return cpu_can_emulate_tiles();  // and the AVX-512 subsets the code around the tiles uses
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

bool cpu_can_emulate_tiles() {
#if defined(__x86_64__)
  return cpu_has_vnni512() && cpuid_bit(7, 0, kEbx, 17) /*avx512dq*/ && cpuid_bit(7, 1, 0 /*eax*/, 5) /*avx512bf16*/;
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

size_t prepared_bytes(WeightType t, int bf16_parts, int64_t n, int64_t cols) {
  const auto padded = static_cast<size_t>(padded_tokens(n));
  if (t == WeightType::BF16) return padded * static_cast<size_t>(checked_parts(bf16_parts) * round_up(cols, kTileChunk)) * 2;
  if (kquant_tile_type(t)) return padded * static_cast<size_t>(cols / kSuperBlock) * kKQuantBytesPerBlock;
  return padded * static_cast<size_t>(cols / kQuantBlock) * (32 + sizeof(float) + sizeof(int32_t));
}

int64_t padded_tokens(int64_t n) { return round_up(n, 16); }

namespace {

// Tiles of one KV head of one KV block: K in chunks of 32 dimensions (1 KiB tiles: 16 lines
// of dimension pairs x 16 positions), V in groups of 16 dimensions (512-byte tiles: 8 lines
// of position pairs x 16 dimensions), each per part.
struct AttentionGeometry {
  int64_t head_dim, chunks, dim_tiles;
  int kv_parts;
  size_t k_bytes, head_bytes;
};

int kv_parts(KVType t) { return t == KVType::F32 ? 3 : t == KVType::F16 ? 2 : 1; }

AttentionGeometry attention_geometry(const AttentionArgs& a) {
  AttentionGeometry g;
  g.head_dim = a.head_dim;
  g.chunks = (a.head_dim + 31) / 32;
  g.dim_tiles = (a.head_dim + 15) / 16;
  g.kv_parts = kv_parts(a.kv_type);
  g.k_bytes = static_cast<size_t>(g.chunks * g.kv_parts) * 1024;
  g.head_bytes = g.k_bytes + static_cast<size_t>(g.dim_tiles * g.kv_parts) * 512;
  return g;
}

// attention_rows' scratch: the rows' query parts, S, P's parts, PV, O, and per row m, l and
// the correction.
struct AttentionScratch {
  size_t q_parts, scores, p_parts, pv, out, stats, total;
};
AttentionScratch attention_scratch_layout(const AttentionGeometry& g) {
  AttentionScratch s;
  s.q_parts = 0;
  s.scores = s.q_parts + static_cast<size_t>(g.chunks * 3) * 1024;
  s.p_parts = s.scores + 1024;
  s.pv = s.p_parts + 3 * 512;
  s.out = s.pv + 2 * 1024;
  s.stats = s.out + static_cast<size_t>(g.dim_tiles) * 1024;
  s.total = s.stats + 3 * 64;
  return s;
}

}  // namespace

bool attention_supported(const AttentionArgs& a) { return a.block_size == 16 && a.head_dim > 0; }

size_t attention_block_bytes(const AttentionArgs& a) {
  return static_cast<size_t>(a.kv_heads) * attention_geometry(a).head_bytes;
}

size_t attention_rows_scratch_bytes(const AttentionArgs& a) {
  return attention_scratch_layout(attention_geometry(a)).total;
}

// ---------------------------------------------------------------- AMX and AVX-512 code

#pragma GCC push_options
#pragma GCC target("amx-tile,amx-int8,amx-bf16,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512bf16,f16c,fma")
// GCC 12 reports the self-initialised placeholders of its own AVX-512 intrinsics
// (_mm512_undefined_ps) as maybe uninitialised.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace {

// The CPU's tile unit. GCC's tile intrinsics paste their tile numbers into the instruction
// text, so they cannot take a template argument; these are the same asm statements (loads,
// as theirs, without a memory operand: see tile_input_barrier) with the numbers as constant
// operands. The kernels below are templates on the tile unit, so that EmulatedTiles
// (amx_tile_emulation.h) runs them too.
struct HardwareTiles {
  void config(const TileConfig* c) { _tile_loadconfig(c); }
  void release() { _tile_release(); }
  template <int T>
  void zero() {
    __asm__ volatile("tilezero\t%%tmm%c0" ::"i"(T));
  }
  template <int T>
  void load(const void* base, int64_t stride) {
    __asm__ volatile("{tileloadd\t(%0,%1,1), %%tmm%c2|tileloadd\t%%tmm%c2, [%0+%1*1]}" ::"r"(base), "r"(stride), "i"(T));
  }
  template <int T>
  void store(void* base, int64_t stride) const {
    __asm__ volatile("{tilestored\t%%tmm%c2, (%0,%1,1)|tilestored\t[%0+%1*1], %%tmm%c2}"
                     :
                     : "r"(base), "r"(stride), "i"(T)
                     : "memory");
  }
  template <int C, int A, int B>
  void dpbf16ps() {
    __asm__ volatile("{tdpbf16ps\t%%tmm%c2, %%tmm%c1, %%tmm%c0|tdpbf16ps\t%%tmm%c0, %%tmm%c1, %%tmm%c2}" ::"i"(C), "i"(A), "i"(B));
  }
  template <int C, int A, int B>
  void dpbssd() {
    __asm__ volatile("{tdpbssd\t%%tmm%c2, %%tmm%c1, %%tmm%c0|tdpbssd\t%%tmm%c0, %%tmm%c1, %%tmm%c2}" ::"i"(C), "i"(A), "i"(B));
  }
};

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

// Chunks ahead whose weight tiles a decode step prefetches while it multiplies.
constexpr int64_t kBf16FetchAhead = 1;

// The prepared activations (`parts` per value) of token tile `tile` (16 tokens), chunk c,
// part p: one 1 KiB tile.
inline const std::byte* Bf16Tile(const std::byte* x, int64_t chunks, int parts, int64_t tile, int64_t c, int p) {
  return x + static_cast<size_t>((tile * chunks + c) * parts + p) * 1024;
}

// Tokens [16 t0, 16 (t0 + MT)) (MT activation tiles) against groups [g0, g0 + NG), chunks
// [c0, c1). The accumulators start from zero (c0 == 0) or from `partial` (the sums over the
// chunks before, stored there by the previous call), and go back to `partial` unless c1 is
// the last chunk, when they are written to y (+ bias). Every output is summed the same way
// in every variant and split: chunk by chunk, each chunk's parts in order, one tdpbf16ps each
// (the fp32 partial sums go through memory unchanged). Parts: the bf16 parts of each
// activation, 3 (every float exactly) or 1 (activations already rounded to bf16).
template <class Tiles, int Parts, int MT, int NG>
inline void Bf16Block(Tiles& unit, const WeightMatrix& w, const std::byte* x, int64_t tile0, int64_t n, int64_t g0,
                      int64_t c0, int64_t c1, float (*partial)[16][16], int64_t row_begin, int64_t row_end,
                      const float* bias, float* y) {
  static_assert((MT == 1 && NG <= 4) || (MT == 2 && NG <= 2));
  static_assert(Parts == 1 || Parts == kBf16Parts);
  const int64_t chunks = (w.cols + kTileChunk - 1) / kTileChunk;
  const size_t group_bytes = tiled_group_bytes(WeightType::BF16, w.cols);
  const std::byte* b = tile_group(w, g0);
  constexpr int kAccumulators = MT * NG;
  if (c0 == 0) {
    unit.template zero<0>();
    if constexpr (kAccumulators > 1) unit.template zero<1>();
    if constexpr (kAccumulators > 2) unit.template zero<2>();
    if constexpr (kAccumulators > 3) unit.template zero<3>();
  } else {
    unit.template load<0>(partial[0], 64);
    if constexpr (kAccumulators > 1) unit.template load<1>(partial[1], 64);
    if constexpr (kAccumulators > 2) unit.template load<2>(partial[2], 64);
    if constexpr (kAccumulators > 3) unit.template load<3>(partial[3], 64);
  }
  for (int64_t c = c0; c < c1; ++c) {
    const std::byte* bc = b + static_cast<size_t>(c) * 1024;
    if constexpr (MT == 1) {
      // Every part of the tokens stays loaded (tiles 4, 5, 6, or 4 alone); the groups' weight tiles
      // stream past them through tile 7. Decode reads the weights from memory, and a tile
      // load from memory brings its 16 lines slower than they arrive when asked for
      // together: the next chunk's lines are prefetched (one chunk ahead measured best; 4
      // to 8 chunks, with or without L2 hints, 20-40% slower).
      if (c + kBf16FetchAhead < c1) {
        for (int gi = 0; gi < NG; ++gi) {
          const std::byte* ahead = bc + gi * group_bytes + kBf16FetchAhead * 1024;
          for (int l = 0; l < 16; ++l) __builtin_prefetch(ahead + 64 * l);
        }
      }
      unit.template load<4>(Bf16Tile(x, chunks, Parts, tile0, c, 0), 64);
      if constexpr (Parts == 3) {
        unit.template load<5>(Bf16Tile(x, chunks, Parts, tile0, c, 1), 64);
        unit.template load<6>(Bf16Tile(x, chunks, Parts, tile0, c, 2), 64);
      }
#define GLASS_BF16_GROUP(ACC, GI)                          \
  do {                                                     \
    unit.template load<7>(bc + (GI) * group_bytes, 64);   \
    unit.template dpbf16ps<ACC, 4, 7>();                  \
    if constexpr (Parts == 3) {                            \
      unit.template dpbf16ps<ACC, 5, 7>();                \
      unit.template dpbf16ps<ACC, 6, 7>();                \
    }                                                      \
  } while (0)
      GLASS_BF16_GROUP(0, 0);
      if constexpr (NG > 1) GLASS_BF16_GROUP(1, 1);
      if constexpr (NG > 2) GLASS_BF16_GROUP(2, 2);
      if constexpr (NG > 3) GLASS_BF16_GROUP(3, 3);
#undef GLASS_BF16_GROUP
    } else {
      unit.template load<6>(bc, 64);
      if constexpr (NG > 1) unit.template load<7>(bc + group_bytes, 64);
      for (int p = 0; p < Parts; ++p) {
        unit.template load<4>(Bf16Tile(x, chunks, Parts, tile0, c, p), 64);
        unit.template load<5>(Bf16Tile(x, chunks, Parts, tile0 + 1, c, p), 64);
        unit.template dpbf16ps<0, 4, 6>();
        unit.template dpbf16ps<1, 5, 6>();
        if constexpr (NG > 1) {
          unit.template dpbf16ps<2, 4, 7>();
          unit.template dpbf16ps<3, 5, 7>();
        }
      }
    }
  }
  unit.template store<0>(partial[0], 64);
  if constexpr (kAccumulators > 1) unit.template store<1>(partial[1], 64);
  if constexpr (kAccumulators > 2) unit.template store<2>(partial[2], 64);
  if constexpr (kAccumulators > 3) unit.template store<3>(partial[3], 64);
  if (c1 < chunks) return;
  // Accumulator i holds (token tile, group): MT == 1: (0, i); MT == 2: (i % 2, i / 2).
  for (int i = 0; i < kAccumulators; ++i) {
    const int m = MT == 1 ? 0 : i % 2, gi = MT == 1 ? i : i / 2;
    const int64_t first = (g0 + gi) * kTileRows;
    const int64_t lo = std::max<int64_t>(row_begin, first), hi = std::min<int64_t>(row_end, first + kTileRows);
    if (lo >= hi) continue;
    const __mmask16 mask = row_mask(lo - first, hi - first);
    const __m512 vbias = bias_of(bias, first, mask);
    for (int r = 0; r < 16; ++r) {
      const int64_t t = 16 * (tile0 + m) + r;
      if (t >= n) break;
      const __m512 acc = _mm512_loadu_ps(partial[i][r]);
      const __m512 v = bias != nullptr ? _mm512_add_ps(acc, vbias) : acc;
      _mm512_mask_storeu_ps(y + t * w.rows + first, mask, v);
    }
  }
}

// Chunks a pass over the groups takes: the activations of 32 tokens for that many chunks
// (3 KiB each per 16 tokens) stay in L1 while the groups' weight tiles stream past.
constexpr int64_t kBf16PassChunks = 4;

template <class Tiles, int Parts>
void MatmulBf16(Tiles& unit, const WeightMatrix& w, const std::byte* x, int64_t n, int64_t row_begin, int64_t row_end,
                const float* bias, float* y) {
  const int64_t g_begin = row_begin / kTileRows, g_end = (row_end + kTileRows - 1) / kTileRows;
  const int64_t chunks = (w.cols + kTileChunk - 1) / kTileChunk;
  const int64_t tiles = padded_tokens(n) / 16;
  if (tiles == 1) {
    // Decode and small batches: the tokens against 2 groups at a time, all chunks (streaming
    // the weights from memory, 2 groups read about 20 GB/s on 2 threads here, 1 or 4 groups
    // 15-17 GB/s, the vector kernels 19-20).
    alignas(64) float partial[4][16][16];
    int64_t g = g_begin;
    for (; g + 2 <= g_end; g += 2)
      Bf16Block<Tiles, Parts, 1, 2>(unit, w, x, 0, n, g, 0, chunks, partial, row_begin, row_end, bias, y);
    if (g < g_end) Bf16Block<Tiles, Parts, 1, 1>(unit, w, x, 0, n, g, 0, chunks, partial, row_begin, row_end, bias, y);
    return;
  }
  // Prefill: 32 tokens at a time; for each pass of kBf16PassChunks chunks, every pair of
  // groups of the range, their partial sums kept per pair between passes.
  const int64_t pairs = (g_end - g_begin + 1) / 2;
  std::vector<float> partial_sums(static_cast<size_t>(pairs) * 4 * 256);
  auto* partial = reinterpret_cast<float(*)[16][16]>(partial_sums.data());
  for (int64_t t = 0; t < tiles; t += 2) {
    const bool two = t + 1 < tiles;
    for (int64_t c0 = 0; c0 < chunks; c0 += kBf16PassChunks) {
      const int64_t c1 = std::min(chunks, c0 + kBf16PassChunks);
      for (int64_t p = 0; p < pairs; ++p) {
        const int64_t g = g_begin + 2 * p;
        float(*mine)[16][16] = partial + 4 * p;
        if (g + 1 < g_end) {
          if (two) Bf16Block<Tiles, Parts, 2, 2>(unit, w, x, t, n, g, c0, c1, mine, row_begin, row_end, bias, y);
          else Bf16Block<Tiles, Parts, 1, 2>(unit, w, x, t, n, g, c0, c1, mine, row_begin, row_end, bias, y);
        } else {
          if (two) Bf16Block<Tiles, Parts, 2, 1>(unit, w, x, t, n, g, c0, c1, mine, row_begin, row_end, bias, y);
          else Bf16Block<Tiles, Parts, 1, 1>(unit, w, x, t, n, g, c0, c1, mine, row_begin, row_end, bias, y);
        }
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
    _mm512_storeu_si512(tile + 128 * s, _mm512_sub_epi8(_mm512_and_si512(packed, low), eight));
    _mm512_storeu_si512(tile + 128 * s + 64, _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(packed, 4), low), eight));
  }
}

// The int8 weight tiles of one group: block b's at quants + b * stride (q8_0: the tiled
// matrix itself; q4_0: unpacked once per group into a buffer), its 16 fp16 scales at
// scales + b * scale_stride.
struct GroupTiles {
  const std::byte* quants;
  size_t stride;
  const std::byte* scales;
  size_t scale_stride;
};

// 16 MT tokens (from x: rows of prepared activations, those past the last token zero)
// against NG groups, all blocks. Block b: the tiles give its exact int32 dots (accumulator
// tile 2 m + group for token tile m), stored to `dots` after block b + 1's tiles are loaded
// (a store waits for its dot product), while the vector units scale block b - 2's:
// acc = fma(float(dot), d_w * d_x, acc), the float steps every int8 kernel takes, block by
// block.
template <class Tiles, int MT, int NG>
inline void Int8Block(Tiles& unit, const GroupTiles* g, const Int8Activations& x, int64_t t0, int64_t tokens, float* y,
                      int64_t ystride, const __mmask16* mask, const __m512* vbias) {
  static_assert(MT <= 2 && NG <= 2);
  const int64_t nb = x.nb;
  alignas(64) float acc[MT][NG][16][16];
  alignas(64) int32_t dots[2][4][16][16];
  for (int m = 0; m < MT; ++m)
    for (int gi = 0; gi < NG; ++gi)
      for (int r = 0; r < 16; ++r) _mm512_store_ps(acc[m][gi][r], _mm512_setzero_ps());
  const int8_t* a0 = x.tile(t0, 0);  // block b's tile at + 512 b, contiguous
  const int8_t* a1 = MT > 1 ? x.tile(t0 + 16, 0) : a0;
  for (int64_t b = 0; b < nb + 2; ++b) {
    if (b < nb) {
      unit.template load<4>(a0 + 512 * b, 32);
      if constexpr (MT > 1) unit.template load<5>(a1 + 512 * b, 32);
      unit.template load<6>(g[0].quants + b * static_cast<int64_t>(g[0].stride), 64);
      if constexpr (NG > 1) unit.template load<7>(g[1].quants + b * static_cast<int64_t>(g[1].stride), 64);
    }
    if (b >= 1 && b <= nb) {
      int32_t(*d)[16][16] = dots[(b - 1) % 2];
      unit.template store<0>(d[0], 64);
      if constexpr (NG > 1) unit.template store<1>(d[1], 64);
      if constexpr (MT > 1) unit.template store<2>(d[2], 64);
      if constexpr (MT > 1 && NG > 1) unit.template store<3>(d[3], 64);
    }
    if (b < nb) {
      unit.template zero<0>();
      unit.template dpbssd<0, 4, 6>();
      if constexpr (NG > 1) {
        unit.template zero<1>();
        unit.template dpbssd<1, 4, 7>();
      }
      if constexpr (MT > 1) {
        unit.template zero<2>();
        unit.template dpbssd<2, 5, 6>();
      }
      if constexpr (MT > 1 && NG > 1) {
        unit.template zero<3>();
        unit.template dpbssd<3, 5, 7>();
      }
    }
    if (b >= 2) {
      const int64_t e = b - 2;
      int32_t(*d)[16][16] = dots[e % 2];
      const float* xs = x.scales + e * x.padded + t0;  // the tokens' scales of block e
      for (int gi = 0; gi < NG; ++gi) {
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(g[gi].scales + e * static_cast<int64_t>(g[gi].scale_stride))));
        for (int m = 0; m < MT; ++m) {
#pragma GCC unroll 16
          for (int r = 0; r < 16; ++r) {
            const __m512 dot = _mm512_cvtepi32_ps(_mm512_load_si512(d[2 * m + gi][r]));
            const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(xs[16 * m + r]));
            _mm512_store_ps(acc[m][gi][r], _mm512_fmadd_ps(dot, scale, _mm512_load_ps(acc[m][gi][r])));
          }
        }
      }
    }
  }
  for (int m = 0; m < MT; ++m)
    for (int gi = 0; gi < NG; ++gi)
      for (int64_t r = 0; r < std::min<int64_t>(16, tokens - 16 * m); ++r)
        store_row(y + (16 * m + r) * ystride + 16 * gi, _mm512_load_ps(acc[m][gi][r]), vbias[gi], mask[gi]);
}

template <class Tiles, WeightType Type>
void MatmulInt8Tiles(Tiles& unit, const WeightMatrix& w, const Int8Activations& x, int64_t n, int64_t row_begin,
                     int64_t row_end, const float* bias, float* y) {
  const int64_t nb = x.nb;
  const int64_t g_begin = row_begin / kTileRows, g_end = (row_end + kTileRows - 1) / kTileRows;
  std::vector<int8_t> unpacked(Type == WeightType::Q4_0 ? static_cast<size_t>(2 * nb) * 512 : 0);
  for (int64_t g0 = g_begin; g0 < g_end; g0 += 2) {
    const int groups = g0 + 1 < g_end ? 2 : 1;
    GroupTiles g[2];
    __mmask16 mask[2];
    __m512 vbias[2];
    for (int gi = 0; gi < groups; ++gi) {
      const int64_t gr = g0 + gi;
      g[gi] = {tile_block(w, gr, 0), tiled_quant_bytes(Type), tile_scales(w, gr, 0), 2 * kTileRows};
      if constexpr (Type == WeightType::Q4_0) {  // the weight tiles unpacked once, for every token
        int8_t* out = unpacked.data() + gi * nb * 512;
        for (int64_t b = 0; b < nb; ++b)
          UnpackQ4Tile(reinterpret_cast<const uint8_t*>(g[gi].quants + b * g[gi].stride), out + b * 512);
        g[gi].quants = reinterpret_cast<const std::byte*>(out);
        g[gi].stride = 512;
      }
      const int64_t first = gr * kTileRows;
      const int64_t lo = std::max<int64_t>(row_begin, first), hi = std::min<int64_t>(row_end, first + kTileRows);
      mask[gi] = lo < hi ? row_mask(lo - first, hi - first) : 0;
      vbias[gi] = bias_of(bias, first, mask[gi]);
    }
    if constexpr (Type == WeightType::Q4_0) tile_input_barrier();
    // The groups' weights stay in L1 / L2 while every token meets them, 32 at a time.
    float* yg = y + g0 * kTileRows;
    for (int64_t t = 0; t < n; t += 32) {
      const int64_t tokens = std::min<int64_t>(32, n - t);
      float* yt = yg + t * w.rows;
      if (tokens > 16) {
        if (groups == 2) Int8Block<Tiles, 2, 2>(unit, g, x, t, tokens, yt, w.rows, mask, vbias);
        else Int8Block<Tiles, 2, 1>(unit, g, x, t, tokens, yt, w.rows, mask, vbias);
      } else {
        if (groups == 2) Int8Block<Tiles, 1, 2>(unit, g, x, t, tokens, yt, w.rows, mask, vbias);
        else Int8Block<Tiles, 1, 1>(unit, g, x, t, tokens, yt, w.rows, mask, vbias);
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

// Block b of one group (its quants q, its scales dw) against T tokens: acc[t] += the block's
// exact int32 dot, scaled, as every int8 kernel does.
template <WeightType Type, int T>
inline void VnniBlock(const uint8_t* q, __m512 dw, const Int8Activations& x, int64_t t0, int64_t b, __m512* acc) {
  // Two or four partial sums per token so consecutive vpdpbusd do not wait on each other.
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
        dot[s % C][t] = _mm512_dpbusd_epi32(dot[s % C][t], wu, Broadcast4Bytes(x.tile(t0 + t, b) + 4 * s));
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
        const int8_t* xq = x.tile(t0 + t, b) + 8 * s;
        dot[(2 * s) % C][t] = _mm512_dpbusd_epi32(dot[(2 * s) % C][t], lo, Broadcast4Bytes(xq));
        dot[(2 * s + 1) % C][t] = _mm512_dpbusd_epi32(dot[(2 * s + 1) % C][t], hi, Broadcast4Bytes(xq + 4));
      }
    }
    excess = 8;
  }
  for (int c = 1; c < C; ++c)
    for (int t = 0; t < T; ++t) dot[0][t] = _mm512_add_epi32(dot[0][t], dot[c][t]);
  for (int t = 0; t < T; ++t) {
    const __m512i exact = _mm512_sub_epi32(dot[0][t], _mm512_set1_epi32(excess * x.sum(t0 + t, b)));
    acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(exact), _mm512_mul_ps(dw, _mm512_set1_ps(x.scale(t0 + t, b))), acc[t]);
  }
}

// Groups [g, g + NG) (16 rows each, one per lane) against T tokens, block by block.
// vpdpbusd multiplies unsigned weights by signed activations: q8_0 weights are made unsigned
// by adding 128, q4_0 are their nibbles (value + 8), and the excess (128 or 8 times the
// block's activation sum) is subtracted, so the block's int32 dot is exact, as the tiles'.
// Decode (one token) streams NG = 2 groups at a time, fetching a few blocks ahead.
template <WeightType Type, int T, int NG = 1>
inline void GroupVnni(const WeightMatrix& w, int64_t g, const Int8Activations& x, int64_t t0, int64_t row_begin,
                      int64_t row_end, const float* bias, float* y) {
  const int64_t nb = w.cols / kQuantBlock;
  __m512 acc[NG][T];
  for (int gi = 0; gi < NG; ++gi)
    for (int t = 0; t < T; ++t) acc[gi][t] = _mm512_setzero_ps();
  constexpr auto kQuantBytes = static_cast<int64_t>(Type == WeightType::Q8_0 ? 512 : 256);
  const uint8_t* quants[NG];
  const std::byte* scales[NG];
  for (int gi = 0; gi < NG; ++gi) {
    quants[gi] = reinterpret_cast<const uint8_t*>(tile_block(w, g + gi, 0));
    scales[gi] = tile_scales(w, g + gi, 0);
  }
  for (int64_t b = 0; b < nb; ++b) {
    for (int gi = 0; gi < NG; ++gi) {
      const uint8_t* q = quants[gi] + b * kQuantBytes;
      if (T == 1) {
        const uint8_t* ahead = q + 4 * kQuantBytes;
        for (int64_t l = 0; l < kQuantBytes; l += 64) __builtin_prefetch(ahead + l);
      }
      const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales[gi] + 32 * b)));
      VnniBlock<Type, T>(q, dw, x, t0, b, acc[gi]);
    }
  }
  for (int gi = 0; gi < NG; ++gi) {
    const int64_t first = (g + gi) * kTileRows;
    const int64_t lo = std::max<int64_t>(row_begin, first), hi = std::min<int64_t>(row_end, first + kTileRows);
    const __mmask16 mask = row_mask(lo - first, hi - first);
    const __m512 vbias = bias_of(bias, first, mask);
    for (int t = 0; t < T; ++t) store_row(y + (t0 + t) * w.rows + first, acc[gi][t], vbias, mask);
  }
}

template <WeightType Type>
void MatmulInt8Vnni(const WeightMatrix& w, const Int8Activations& x, int64_t n, int64_t row_begin, int64_t row_end,
                    const float* bias, float* y) {
  const int64_t g_begin = row_begin / kTileRows, g_end = (row_end + kTileRows - 1) / kTileRows;
  if (n == 1) {
    int64_t g = g_begin;
    for (; g + 2 <= g_end; g += 2) GroupVnni<Type, 1, 2>(w, g, x, 0, row_begin, row_end, bias, y);
    if (g < g_end) GroupVnni<Type, 1>(w, g, x, 0, row_begin, row_end, bias, y);
    return;
  }
  for (int64_t g = g_begin; g < g_end; ++g) {
    for (int64_t t = 0; t < n; t += 8) {
      switch (std::min<int64_t>(8, n - t)) {
        case 1: GroupVnni<Type, 1>(w, g, x, t, row_begin, row_end, bias, y); break;
        case 2: GroupVnni<Type, 2>(w, g, x, t, row_begin, row_end, bias, y); break;
        case 3: GroupVnni<Type, 3>(w, g, x, t, row_begin, row_end, bias, y); break;
        case 4: GroupVnni<Type, 4>(w, g, x, t, row_begin, row_end, bias, y); break;
        case 5: GroupVnni<Type, 5>(w, g, x, t, row_begin, row_end, bias, y); break;
        case 6: GroupVnni<Type, 6>(w, g, x, t, row_begin, row_end, bias, y); break;
        case 7: GroupVnni<Type, 7>(w, g, x, t, row_begin, row_end, bias, y); break;
        default: GroupVnni<Type, 8>(w, g, x, t, row_begin, row_end, bias, y); break;
      }
    }
  }
}

// ------------------------------------------------ k-quants (q4_K, q5_K, q6_K)
//
// The vector kernels (simd_kquant_dot.inc) reach the exact int32 dot of every super-block,
// dot = sum_i w_i X_i with w_i = sub-block scale x code (q6_K: code - 32) and X the 12-bit
// activations, then take fixed float steps per super-block. tdpbssd multiplies bytes, so both
// sides go in as two signed parts, w = 64 wh + wl (wh in [-64, 64]) and X = 64 xh + xl (xh in
// [-32, 31]; wl and xl in [0, 63]):
//   dot = 4096 (xh . wh) + 64 (xh . wl + xl . wh) + xl . wl,
// three accumulator tiles of wrapping int32 sums, combined in wrapping int32 arithmetic. The
// true dot fits int32 (simd::KActBlock), so what comes out is it, the vector kernels' integer
// bit for bit, and the float steps after it are theirs (AddSuperBlock), lane by lane: the
// tiles give the vector kernels' outputs bit for bit, for any batch and any split.
//
// The rows are in the lane layout (weight_matrix.h), as the model lays them out for the
// AVX-512 paths, and the activations in its lane order (simd::KActBlock); each group of 16
// rows is unpacked once per matmul into weight tiles (KQuantGroupBlock) that every 16 tokens
// then meet. A tile's positions are lane positions; each super-block's sum is the same.

// Tile registers: 0-2 accumulators (16 tokens x 16 weight rows of int32: xh.wh, the two
// middle products, xl.wl), 4-5 the activations' parts (16 tokens x 64 values), 6-7 the
// weights' parts (16 lines of 4-value quads x 16 rows).
alignas(64) constexpr TileConfig kKQuantConfig = make_config(16, 64, 16);

// One super-block of a group of 16 weight rows as the tiles read it: per step s and part (wh,
// wl) a weight tile whose line k holds the 16 rows' values 64 s + 4 k .. 64 s + 4 k + 3 (4
// bytes a row); per row its float scales and (q4_K, q5_K) its 8 mins as word pairs (m_j, m_j),
// which multiply the activations' pairs of sums of 16 values.
struct alignas(64) KQuantGroupBlock {
  int8_t tiles[kKSteps][2][16][64];
  float d[16];
  float dmin[16];
  int32_t min_pairs[kKSumPairs][16];
};

// The 16 x 16 dwords of v, transposed: out[c] lane r = v[r] lane c. (GCC 12 at -O2 with the
// sanitizers reports the unpack intrinsics' own placeholder, _mm512_undefined_epi32, as
// uninitialised.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
inline void TransposeDwords16(const __m512i* v, __m512i* out) {
  __m512i a[16], b[16];
  for (int i = 0; i < 8; ++i) {  // per 128-bit lane: pairs of rows interleaved by dword
    a[2 * i] = _mm512_unpacklo_epi32(v[2 * i], v[2 * i + 1]);
    a[2 * i + 1] = _mm512_unpackhi_epi32(v[2 * i], v[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {  // b[4 i + e], lane L: rows 4 i .. 4 i + 3 of column 4 L + e
    b[4 * i] = _mm512_unpacklo_epi64(a[4 * i], a[4 * i + 2]);
    b[4 * i + 1] = _mm512_unpackhi_epi64(a[4 * i], a[4 * i + 2]);
    b[4 * i + 2] = _mm512_unpacklo_epi64(a[4 * i + 1], a[4 * i + 3]);
    b[4 * i + 3] = _mm512_unpackhi_epi64(a[4 * i + 1], a[4 * i + 3]);
  }
  for (int e = 0; e < 4; ++e) {  // out[4 L + e], lane i: b[4 i + e], lane L
    const __m512i c0 = _mm512_shuffle_i32x4(b[e], b[4 + e], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512i c1 = _mm512_shuffle_i32x4(b[e], b[4 + e], _MM_SHUFFLE(3, 2, 3, 2));
    const __m512i c2 = _mm512_shuffle_i32x4(b[8 + e], b[12 + e], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512i c3 = _mm512_shuffle_i32x4(b[8 + e], b[12 + e], _MM_SHUFFLE(3, 2, 3, 2));
    out[e] = _mm512_shuffle_i32x4(c0, c2, _MM_SHUFFLE(2, 0, 2, 0));
    out[4 + e] = _mm512_shuffle_i32x4(c0, c2, _MM_SHUFFLE(3, 1, 3, 1));
    out[8 + e] = _mm512_shuffle_i32x4(c1, c3, _MM_SHUFFLE(2, 0, 2, 0));
    out[12 + e] = _mm512_shuffle_i32x4(c1, c3, _MM_SHUFFLE(3, 1, 3, 1));
  }
}
#pragma GCC diagnostic pop

// Bits [shift, shift + width) of each of the 32 bytes at p.
inline __m256i KByteBits(const uint8_t* p, int shift, int width) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm256_and_si256(_mm256_srli_epi16(v, shift), _mm256_set1_epi8(static_cast<char>((1 << width) - 1)));
}
// The 32 words of v as bytes at p.
inline void StoreBytes(int8_t* p, __m512i v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi16_epi8(v));
}

// Row i's lane-laid super-block: its weights w = scale x code as the two byte parts into
// rows[step][part][i] (row-major), its float scales and min pairs into g's row i.
template <WeightType Type>
inline void UnpackKQuantRow(const std::byte* block, int i, int8_t (*rows)[2][16][64], KQuantGroupBlock& g) {
  const auto& b = *reinterpret_cast<const KQuantBlock<Type>*>(block);
  int16_t scale[16] = {};  // of the sub-blocks (8 of 32 values, or q6_K's 16 of 16)
  if constexpr (kquant_has_mins(Type)) {
    for (int j = 0; j < 8; ++j) {
      const ScaleMin sm = unpack_scale_min(b.scales, j);
      scale[j] = sm.scale;
      g.min_pairs[j][i] = static_cast<int32_t>(sm.min | (uint32_t{sm.min} << 16));
    }
    g.d[i] = f16_to_f32(b.scale);
    g.dmin[i] = f16_to_f32(b.min_scale);
  } else {
    for (int j = 0; j < 16; ++j) scale[j] = b.scales[j];
    g.d[i] = f16_to_f32(b.scale);
    g.dmin[i] = 0.0f;
  }
  // Lane position 64 s + 32 u + m is in run j = 8 u + m / 4 (weight_matrix.h): its scale is
  // sub-block j / 2's (q4_K, q5_K) or j's (q6_K).
  const __m512i scale_words = _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scale)));
  const __m512i m = _mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11,
                                     10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  __m512i scales[2];  // the same for every step
  for (int u = 0; u < 2; ++u) {
    const __m512i run = _mm512_add_epi16(_mm512_set1_epi16(static_cast<int16_t>(8 * u)), _mm512_srli_epi16(m, 2));
    scales[u] = _mm512_permutexvar_epi16(kquant_has_mins(Type) ? _mm512_srli_epi16(run, 1) : run, scale_words);
  }
  for (int s = 0; s < kKSteps; ++s) {
    for (int u = 0; u < 2; ++u) {  // lane positions 64 s + 32 u .. + 31
      __m256i codes;
      if constexpr (kquant_has_mins(Type)) {
        // The low 4 bits in q[64 (s / 2) + 32 u ..], nibble s % 2; q5_K's fifth bits are bits
        // 64 s + 32 u .. of high_bits.
        codes = KByteBits(b.q + 64 * (s / 2) + 32 * u, 4 * (s % 2), 4);
        if constexpr (Type == WeightType::Q5_K) {
          uint32_t fifth;
          std::memcpy(&fifth, b.high_bits + 8 * s + 4 * u, 4);
          codes = _mm256_mask_add_epi8(codes, _cvtu32_mask32(fifth), codes, _mm256_set1_epi8(0x10));
        }
      } else {  // the low 4 bits as q4_K's, the high 2 at bits 2 s of high[32 u ..]
        const __m256i low = KByteBits(b.low + 64 * (s / 2) + 32 * u, 4 * (s % 2), 4);
        codes = _mm256_or_si256(low, _mm256_slli_epi16(KByteBits(b.high + 32 * u, 2 * s, 2), 4));
      }
      __m512i words = _mm512_cvtepu8_epi16(codes);
      if constexpr (!kquant_has_mins(Type)) words = _mm512_sub_epi16(words, _mm512_set1_epi16(32));
      const __m512i w = _mm512_mullo_epi16(words, scales[u]);  // |w| <= 63 x 31 or 128 x 32
      StoreBytes(rows[s][0][i] + 32 * u, _mm512_srai_epi16(w, 6));
      StoreBytes(rows[s][1][i] + 32 * u, _mm512_and_si512(w, _mm512_set1_epi16(63)));
    }
  }
}

// Rows [r0, r0 + 16) of w (those from row_end on: zero) into nb KQuantGroupBlocks.
template <WeightType Type>
void UnpackKQuantGroup(const WeightMatrix& w, int64_t r0, int64_t row_end, KQuantGroupBlock* g) {
  const int64_t nb = w.cols / kSuperBlock;
  const int rows = static_cast<int>(std::min<int64_t>(16, row_end - r0));
  alignas(64) int8_t by_row[kKSteps][2][16][64] = {};  // rows past `rows` stay zero
  for (int64_t b = 0; b < nb; ++b) {
    KQuantGroupBlock& blk = g[b];
    if (rows < 16) std::memset(&blk, 0, sizeof blk);
    for (int i = 0; i < rows; ++i)
      UnpackKQuantRow<Type>(w.row(r0 + i) + static_cast<size_t>(b) * sizeof(KQuantBlock<Type>), i, by_row, blk);
    for (int s = 0; s < kKSteps; ++s) {
      for (int p = 0; p < 2; ++p) {
        __m512i v[16], t[16];
        for (int i = 0; i < 16; ++i) v[i] = _mm512_load_si512(by_row[s][p][i]);
        TransposeDwords16(v, t);
        for (int k = 0; k < 16; ++k) _mm512_store_si512(blk.tiles[s][p][k], t[k]);
      }
    }
  }
}

// `tokens` tokens from t0 (16 lines of activations; those past the last token are read and
// their products never stored) against one group's nb super-blocks g; writes y[j * ystride
// + lane] (+ bias) for the lanes of `mask`. Per super-block: the three tiles of exact sums,
// combined, then the float steps of every (token, row) as the vector kernels take them:
// acc = fma(d_x d, dot, acc), then acc = fma(-(d_x dmin), mins, acc) (q4_K, q5_K).
template <class Tiles, WeightType Type>
inline void KQuantBlock16(Tiles& unit, const KQuantGroupBlock* g, const KQuantActivations& x, int64_t t0,
                          int64_t tokens, float* y, int64_t ystride, __mmask16 mask, __m512 vbias) {
  alignas(64) float acc[16][16];
  alignas(64) int32_t sums[3][16][16];
  for (int j = 0; j < 16; ++j) _mm512_store_ps(acc[j], _mm512_setzero_ps());
  for (int64_t b = 0; b < x.nb; ++b) {
    const KQuantGroupBlock& blk = g[b];
    unit.template zero<0>();
    unit.template zero<1>();
    unit.template zero<2>();
    for (int s = 0; s < kKSteps; ++s) {
      unit.template load<4>(x.line(t0, b, s, 0), 64);
      unit.template load<5>(x.line(t0, b, s, 1), 64);
      unit.template load<6>(blk.tiles[s][0], 64);
      unit.template load<7>(blk.tiles[s][1], 64);
      unit.template dpbssd<0, 4, 6>();  // xh . wh
      unit.template dpbssd<1, 4, 7>();  // xh . wl
      unit.template dpbssd<1, 5, 6>();  // xl . wh
      unit.template dpbssd<2, 5, 7>();  // xl . wl
    }
    unit.template store<0>(sums[0], 64);
    unit.template store<1>(sums[1], 64);
    unit.template store<2>(sums[2], 64);
    const __m512 d = _mm512_load_ps(blk.d), dmin = _mm512_load_ps(blk.dmin);
    for (int64_t j = 0; j < tokens; ++j) {
      const __m512i high = _mm512_slli_epi32(_mm512_load_si512(sums[0][j]), 12);
      const __m512i middle = _mm512_slli_epi32(_mm512_load_si512(sums[1][j]), 6);
      const __m512i dot = _mm512_add_epi32(_mm512_add_epi32(high, middle), _mm512_load_si512(sums[2][j]));
      const __m512 dx = _mm512_set1_ps(x.dx(t0 + j, b));
      __m512 a = _mm512_fmadd_ps(_mm512_mul_ps(dx, d), _mm512_cvtepi32_ps(dot), _mm512_load_ps(acc[j]));
      if constexpr (kquant_has_mins(Type)) {
        __m512i mins = _mm512_setzero_si512();
        for (int k = 0; k < kKSumPairs; ++k)
          mins = _mm512_dpwssd_epi32(mins, _mm512_load_si512(blk.min_pairs[k]),
                                     _mm512_set1_epi32(x.sum_pair(t0 + j, b, k)));
        a = _mm512_fnmadd_ps(_mm512_mul_ps(dx, dmin), _mm512_cvtepi32_ps(mins), a);
      }
      _mm512_store_ps(acc[j], a);
    }
  }
  for (int64_t j = 0; j < tokens; ++j) store_row(y + j * ystride, _mm512_load_ps(acc[j]), vbias, mask);
}

template <class Tiles, WeightType Type>
void MatmulKQuantTiles(Tiles& unit, const WeightMatrix& w, const KQuantActivations& x, int64_t n, int64_t row_begin,
                       int64_t row_end, const float* bias, float* y) {
  const int64_t nb = x.nb;
  const int64_t groups = (row_end - row_begin + 15) / 16;
  // Groups unpacked at a time: their weight tiles (about 9 KiB per super-block) stay in L2
  // while every 16 tokens meet them.
  const auto group_bytes = static_cast<int64_t>(nb * sizeof(KQuantGroupBlock));
  const int64_t per_pass = std::clamp<int64_t>((int64_t{1} << 20) / group_bytes, 1, 4);
  std::vector<KQuantGroupBlock> unpacked(static_cast<size_t>(per_pass * nb));
  for (int64_t g0 = 0; g0 < groups; g0 += per_pass) {
    const int64_t count = std::min(per_pass, groups - g0);
    for (int64_t gi = 0; gi < count; ++gi)
      UnpackKQuantGroup<Type>(w, row_begin + 16 * (g0 + gi), row_end, unpacked.data() + gi * nb);
    tile_input_barrier();
    for (int64_t t = 0; t < n; t += 16) {
      for (int64_t gi = 0; gi < count; ++gi) {
        const int64_t r0 = row_begin + 16 * (g0 + gi);
        const __mmask16 mask = row_mask(0, std::min<int64_t>(16, row_end - r0));
        KQuantBlock16<Tiles, Type>(unit, unpacked.data() + gi * nb, x, t, std::min<int64_t>(16, n - t),
                                   y + t * w.rows + r0, w.rows, mask, bias_of(bias, r0, mask));
      }
    }
  }
}

template <class Tiles>
void MatmulKQuant(Tiles& unit, const WeightMatrix& w, const KQuantActivations& x, int64_t n, int64_t row_begin,
                  int64_t row_end, const float* bias, float* y) {
  if (!w.block_lanes) {  // a row-major matrix (the kernel tests'; the model lays them out): laid out first
    std::vector<std::byte> bytes(w.bytes());
    MatmulKQuant(unit, lane_block_rows(w, bytes.data()), x, n, row_begin, row_end, bias, y);
    return;
  }
  switch (w.type) {
    case WeightType::Q4_K: return MatmulKQuantTiles<Tiles, WeightType::Q4_K>(unit, w, x, n, row_begin, row_end, bias, y);
    case WeightType::Q5_K: return MatmulKQuantTiles<Tiles, WeightType::Q5_K>(unit, w, x, n, row_begin, row_end, bias, y);
    default: return MatmulKQuantTiles<Tiles, WeightType::Q6_K>(unit, w, x, n, row_begin, row_end, bias, y);
  }
}

// Tokens [begin, end) of the k-quant tiles' activations (KQuantActivations): simd::prepare_rows's
// blocks (the vector kernels' X and d_x, bit for bit), X split into its two parts.
void PrepareKQuant(WeightType type, const float* x, int64_t n, int64_t begin, int64_t end, int64_t cols,
                   std::byte* out) {
  const KQuantActivations a = kquant_view(out, n, cols);
  std::vector<simd::KActBlock> blocks(static_cast<size_t>(a.nb));  // one token's (a 7B row: 80 KB)
  auto* d = const_cast<float*>(a.d);
  auto* pairs = const_cast<int32_t*>(a.sum_pairs);
  for (int64_t t = begin; t < end; ++t) {
    simd::prepare_rows(type, x + t * cols, 1, cols, reinterpret_cast<std::byte*>(blocks.data()));
    // The weight tiles are lane-laid; so must the values be whatever target prepared them (a
    // test may force one without lanes).
    if (!simd::kquant_activations_in_lanes())
      for (simd::KActBlock& k : blocks) simd::kquant_act_to_lane_order(k);
    for (int64_t b = 0; b < a.nb; ++b) {
      const simd::KActBlock& k = blocks[static_cast<size_t>(b)];
      for (int s = 0; s < kKSteps; ++s) {
        for (int u = 0; u < 2; ++u) {
          const __m512i v = _mm512_loadu_si512(k.x + 64 * s + 32 * u);
          auto* high = const_cast<int8_t*>(a.line(t, b, s, 0)) + 32 * u;
          auto* low = const_cast<int8_t*>(a.line(t, b, s, 1)) + 32 * u;
          StoreBytes(high, _mm512_srai_epi16(v, 6));
          StoreBytes(low, _mm512_and_si512(v, _mm512_set1_epi16(63)));
        }
      }
      d[b * a.padded + t] = k.d;
      for (int p = 0; p < kKSumPairs; ++p)
        std::memcpy(&pairs[(b * kKSumPairs + p) * a.padded + t], k.sums + 2 * p, sizeof(int32_t));
    }
  }
}

// ------------------------------------------------ attention

// Tile registers of attention: 0-1 accumulators (S, or PV for 2 groups of 16 dimensions), 2, 3
// and 7 V tiles, 4 a query part (rows x 32 dimensions), 5 a part of P (rows x 16 positions),
// 6 a K tile.
constexpr TileConfig make_attention_config(uint8_t rows) {
  TileConfig c;
  for (int i = 0; i < 2; ++i) c.rows[i] = rows, c.colsb[i] = 64;
  for (int i : {2, 3, 7}) c.rows[i] = 8, c.colsb[i] = 64;
  c.rows[4] = rows, c.colsb[4] = 64;
  c.rows[5] = rows, c.colsb[5] = 32;
  c.rows[6] = 16, c.colsb[6] = 64;
  return c;
}
struct AttentionConfigs {
  TileConfig by_rows[17];
};
constexpr AttentionConfigs make_attention_configs() {
  AttentionConfigs all;
  for (int r = 1; r <= 16; ++r) all.by_rows[r] = make_attention_config(static_cast<uint8_t>(r));
  return all;
}
alignas(64) constexpr AttentionConfigs kAttentionConfigs = make_attention_configs();

// e^x for x <= 0 (and -inf -> 0 where the caller masks it): 2^n e^r, |r| <= ln 2 / 2, a degree-7
// polynomial (error below 1e-8 relative).
inline __m512 Exp(__m512 x) {
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

// 16 values of a KV row starting at element i (those past `count` zero), as floats.
inline __m512 LoadKV(KVType type, const std::byte* row, int64_t i, int64_t count) {
  const auto mask = static_cast<__mmask16>(count >= 16 ? 0xffff : count <= 0 ? 0 : (1u << count) - 1);
  switch (type) {
    case KVType::F32: return _mm512_maskz_loadu_ps(mask, reinterpret_cast<const float*>(row) + i);
    case KVType::F16:
      return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, reinterpret_cast<const uint16_t*>(row) + i));
    case KVType::BF16:
      return _mm512_castsi512_ps(_mm512_slli_epi32(
          _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, reinterpret_cast<const uint16_t*>(row) + i)), 16));
  }
  return _mm512_setzero_ps();
}

// `parts` bf16 parts of 16 floats (round to nearest even, what each leaves to the next): exact
// for the KV types' values.
inline void SplitParts(__m512 v, int parts, uint16_t (*out)[16]) {
  for (int p = 0; p < parts; ++p) {
    const __m256bh part = _mm512_cvtneps_pbh(v);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[p]), (__m256i)part);
    v = _mm512_sub_ps(v, _mm512_cvtpbh_ps(part));
  }
}

void AttentionPrepareBlock(const AttentionArgs& a, int32_t block_id, int64_t valid, std::byte* out) {
  const AttentionGeometry g = attention_geometry(a);
  const int parts = g.kv_parts;
  const size_t esz = kv_type_size(a.kv_type);
  const size_t pos_bytes = static_cast<size_t>(a.kv_heads * a.head_dim) * esz;
  const std::byte* kb = a.k_base + static_cast<size_t>(block_id) * a.block_stride;
  const std::byte* vb = a.v_base + static_cast<size_t>(block_id) * a.block_stride;
  const int64_t padded = g.dim_tiles * 16, padded_k = g.chunks * 32;
  // Per part, position and (padded) dimension: the parts of K and of V.
  std::vector<uint16_t> kp(static_cast<size_t>(parts * 16 * padded_k)), vp(static_cast<size_t>(parts * 16 * padded));
  auto kp_at = [&](int p, int64_t j) { return kp.data() + (p * 16 + j) * padded_k; };
  auto vp_at = [&](int p, int64_t j) { return vp.data() + (p * 16 + j) * padded; };
  for (int64_t kh = 0; kh < a.kv_heads; ++kh) {
    std::byte* head = out + static_cast<size_t>(kh) * g.head_bytes;
    for (int64_t j = 0; j < 16; ++j) {
      const std::byte* krow = kb + static_cast<size_t>(j) * pos_bytes + static_cast<size_t>(kh * a.head_dim) * esz;
      const std::byte* vrow = vb + static_cast<size_t>(j) * pos_bytes + static_cast<size_t>(kh * a.head_dim) * esz;
      for (int64_t d = 0; d < padded_k; d += 16) {
        const __m512 v = j < valid ? LoadKV(a.kv_type, krow, d, a.head_dim - d) : _mm512_setzero_ps();
        uint16_t split[3][16];
        SplitParts(v, parts, split);
        for (int p = 0; p < parts; ++p) std::memcpy(kp_at(p, j) + d, split[p], 32);
      }
      for (int64_t d = 0; d < padded; d += 16) {
        const __m512 v = j < valid ? LoadKV(a.kv_type, vrow, d, a.head_dim - d) : _mm512_setzero_ps();
        uint16_t split[3][16];
        SplitParts(v, parts, split);
        for (int p = 0; p < parts; ++p) std::memcpy(vp_at(p, j) + d, split[p], 32);
      }
    }
    // K tile (chunk c, part p): line k2, dword j = K's dimensions c 32 + 2 k2, + 1 at position j.
    for (int64_t c = 0; c < g.chunks; ++c)
      for (int p = 0; p < parts; ++p) {
        auto* tile = reinterpret_cast<uint32_t*>(head + static_cast<size_t>(c * parts + p) * 1024);
        for (int64_t j = 0; j < 16; ++j) {
          const uint16_t* src = kp_at(p, j) + c * 32;
          for (int64_t k2 = 0; k2 < 16; ++k2) {
            uint32_t pair;
            std::memcpy(&pair, src + 2 * k2, 4);
            tile[k2 * 16 + j] = pair;
          }
        }
      }
    // V tile (dimensions 16 dt.., part p): line i, dword n = V's dimension 16 dt + n at
    // positions 2 i and 2 i + 1.
    for (int64_t dt = 0; dt < g.dim_tiles; ++dt)
      for (int p = 0; p < parts; ++p) {
        auto* tile = reinterpret_cast<uint16_t*>(head + g.k_bytes + static_cast<size_t>(dt * parts + p) * 512);
        for (int64_t i = 0; i < 8; ++i)
          for (int64_t n = 0; n < 16; ++n) {
            tile[i * 32 + 2 * n] = vp_at(p, 2 * i)[dt * 16 + n];
            tile[i * 32 + 2 * n + 1] = vp_at(p, 2 * i + 1)[dt * 16 + n];
          }
      }
  }
}

// The part products of S and PV, largest first: the pairs (query or P part, K or V part)
// whose parts' orders sum to at most 2 (the others are below 2^-24 of the product).
template <class F>
inline void ForPartPairs(int kv_parts, F&& f) {
  for (int sum = 0; sum <= 2; ++sum)
    for (int first = 0; first <= sum; ++first)
      if (sum - first < kv_parts) f(first, sum - first);
}

template <class Tiles>
void AttentionRows(Tiles& unit, const AttentionArgs& a, int64_t kv_head, const int64_t* rows, int count,
                   const std::byte* const* block_tiles, std::byte* scratch) {
  const AttentionGeometry g = attention_geometry(a);
  const AttentionScratch layout = attention_scratch_layout(g);
  auto* q_parts = scratch + layout.q_parts;                        // [chunk][part][16 rows][32]
  auto* scores = reinterpret_cast<float(*)[16]>(scratch + layout.scores);
  auto* p_parts = scratch + layout.p_parts;                        // [part][16 rows][16]
  auto* pv = reinterpret_cast<float(*)[16][16]>(scratch + layout.pv);  // [2][16 rows][16]
  auto* out = reinterpret_cast<float*>(scratch + layout.out);      // [16 rows][dim_tiles * 16]
  auto* m = reinterpret_cast<float*>(scratch + layout.stats);
  float* l = m + 16;
  float* correction = l + 16;
  const int64_t padded = g.dim_tiles * 16;
  unit.config(&kAttentionConfigs.by_rows[count]);
  int64_t length[16], longest = 0;
  for (int r = 0; r < count; ++r) {
    const float* q = a.q + rows[r] * a.head_dim;
    for (int64_t c = 0; c < g.chunks; ++c)
      for (int64_t h = 0; h < 2; ++h) {
        const int64_t d = 32 * c + 16 * h;
        const int64_t valid = std::clamp<int64_t>(a.head_dim - d, 0, 16);
        __m512 v = _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << valid) - 1), q + d);
        for (int p = 0; p < 3; ++p) {
          const __m256bh part = _mm512_cvtneps_pbh(v);
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(q_parts + (c * 3 + p) * 1024 + r * 64 + 32 * h), (__m256i)part);
          v = _mm512_sub_ps(v, _mm512_cvtpbh_ps(part));
        }
      }
    for (int64_t i = 0; i < padded; i += 16) _mm512_storeu_ps(out + r * padded + i, _mm512_setzero_ps());
    m[r] = -std::numeric_limits<float>::infinity();
    l[r] = 0;
    length[r] = a.rows[rows[r] / a.heads].length;
    longest = std::max(longest, length[r]);
  }
  tile_input_barrier();
  const __m512 scale = _mm512_set1_ps(a.scale);
  for (int64_t blk = 0; blk * 16 < longest; ++blk) {
    const std::byte* kv = block_tiles[blk] + static_cast<size_t>(kv_head) * g.head_bytes;
    // S = Q K^T, chunk by chunk, the part products largest first.
    unit.template zero<0>();
    for (int64_t c = 0; c < g.chunks; ++c) {
      ForPartPairs(g.kv_parts, [&](int qp, int kp) {
        unit.template load<4>(q_parts + (c * 3 + qp) * 1024, 64);
        unit.template load<6>(kv + static_cast<size_t>(c * g.kv_parts + kp) * 1024, 64);
        unit.template dpbf16ps<0, 4, 6>();
      });
    }
    unit.template store<0>(scores, 64);
    // Online softmax, per row over its own positions of the block.
    for (int r = 0; r < count; ++r) {
      const int64_t valid = std::clamp<int64_t>(length[r] - 16 * blk, 0, 16);
      const auto mask = static_cast<__mmask16>((1u << valid) - 1);
      const __m512 sc = _mm512_mask_mov_ps(_mm512_set1_ps(-std::numeric_limits<float>::infinity()), mask,
                                           _mm512_mul_ps(_mm512_loadu_ps(scores[r]), scale));
      const float block_max = _mm512_reduce_max_ps(sc);
      const float m_new = std::max(m[r], block_max);
      const float corr = m[r] == -std::numeric_limits<float>::infinity()
                             ? 0.0f
                             : _mm512_cvtss_f32(Exp(_mm512_set1_ps(m[r] - m_new)));
      const __m512 p = _mm512_maskz_mov_ps(mask, Exp(_mm512_sub_ps(sc, _mm512_set1_ps(m_new))));
      l[r] = l[r] * corr + _mm512_reduce_add_ps(p);
      m[r] = m_new;
      correction[r] = corr;
      __m512 rest = p;
      for (int pp = 0; pp < 3; ++pp) {
        const __m256bh part = _mm512_cvtneps_pbh(rest);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(p_parts + pp * 512 + r * 32), (__m256i)part);
        rest = _mm512_sub_ps(rest, _mm512_cvtpbh_ps(part));
      }
    }
    tile_input_barrier();
    // PV, 2 groups of 16 dimensions at a time (accumulators 0, 1), the V tiles through tiles 2,
    // 3 and 7 in turn (a tile load waits for the products still reading its register); then
    // O = O * correction + PV.
    int next_v = 0;
    for (int64_t dt0 = 0; dt0 < g.dim_tiles; dt0 += 2) {
      const int64_t tiles = std::min<int64_t>(2, g.dim_tiles - dt0);
      unit.template zero<0>();
      if (tiles > 1) unit.template zero<1>();
      ForPartPairs(g.kv_parts, [&](int pp, int vp) {
        unit.template load<5>(p_parts + pp * 512, 32);
        for (int64_t t = 0; t < tiles; ++t) {
          const std::byte* v = kv + g.k_bytes + static_cast<size_t>((dt0 + t) * g.kv_parts + vp) * 512;
#define GLASS_PV(R)                                  \
  do {                                               \
    unit.template load<R>(v, 64);                           \
    if (t == 0) unit.template dpbf16ps<0, 5, R>();             \
    else unit.template dpbf16ps<1, 5, R>();                    \
  } while (0)
          switch (next_v) {
            case 0: GLASS_PV(2); break;
            case 1: GLASS_PV(3); break;
            default: GLASS_PV(7); break;
          }
#undef GLASS_PV
          next_v = (next_v + 1) % 3;
        }
      });
      unit.template store<0>(pv[0], 64);
      if (tiles > 1) unit.template store<1>(pv[1], 64);
      for (int r = 0; r < count; ++r) {
        const __m512 corr = _mm512_set1_ps(correction[r]);
        for (int64_t t = 0; t < tiles; ++t) {
          float* o = out + r * padded + (dt0 + t) * 16;
          _mm512_storeu_ps(o, _mm512_fmadd_ps(_mm512_loadu_ps(o), corr, _mm512_loadu_ps(pv[t][r])));
        }
      }
    }
  }
  unit.release();
  for (int r = 0; r < count; ++r) {
    const float inv = 1.0f / l[r];
    float* dst = a.out + rows[r] * a.head_dim;
    for (int64_t d = 0; d < a.head_dim; ++d) dst[d] = out[r * padded + d] * inv;
  }
}

// ------------------------------------------------ entry points (compiled for AMX)

// Tokens [begin, end) of the bf16 tiles' activations (tile-major: Bf16Tile).
void PrepareBf16(const float* x, int64_t begin, int64_t end, int64_t cols, int parts, std::byte* out) {
  const int64_t chunks = (cols + kTileChunk - 1) / kTileChunk;
  for (int64_t t = begin; t < end; ++t) {
    const float* src = x + t * cols;
    for (int64_t c = 0; c < chunks; ++c) {
      for (int64_t h = 0; h < 2; ++h) {  // two halves of 16 values
        const int64_t first = c * kTileChunk + 16 * h;
        const int64_t valid = std::clamp<int64_t>(cols - first, 0, 16);
        __m512 rest = _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << valid) - 1), src + first);
        for (int p = 0; p < parts; ++p) {
          // Round to nearest even; what the part leaves is exact in fp32 and goes to the next.
          const __m256bh part = _mm512_cvtneps_pbh(rest);
          auto* line = const_cast<std::byte*>(Bf16Tile(out, chunks, parts, t / 16, c, p)) + (t % 16) * 64 + 32 * h;
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(line), (__m256i)part);
          rest = _mm512_sub_ps(rest, _mm512_cvtpbh_ps(part));
        }
      }
    }
  }
}

// Tokens [begin, end) of the int8 kernels' activations (Int8Activations): the blocks simd::prepare_rows makes, bit for bit (the same float operations as ggml's
// quantize_row_q8_0: values times 127 / amax rounded to nearest even, the scale amax / 127 rounded to f16).
void PrepareInt8(const float* x, int64_t n, int64_t begin, int64_t end, int64_t cols, std::byte* out) {
  const Int8Activations a = int8_view(out, n, cols);
  auto* scales = const_cast<float*>(a.scales);
  auto* sums = const_cast<int32_t*>(a.sums);
  const __m512 sign = _mm512_set1_ps(-0.0f);
  for (int64_t t = begin; t < end; ++t) {
    for (int64_t b = 0; b < a.nb; ++b) {
      auto* q = const_cast<int8_t*>(a.tile(t, b));
      const float* v = x + t * cols + b * kQuantBlock;
      const __m512 v0 = _mm512_loadu_ps(v), v1 = _mm512_loadu_ps(v + 16);
      const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_andnot_ps(sign, v0), _mm512_andnot_ps(sign, v1)));
      const float id = amax != 0 ? 127.0f / amax : 0.0f;
      const __m512 vid = _mm512_set1_ps(id);
      constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
      const __m512i q0 = _mm512_cvtps_epi32(_mm512_roundscale_ps(_mm512_mul_ps(v0, vid), kNearest));
      const __m512i q1 = _mm512_cvtps_epi32(_mm512_roundscale_ps(_mm512_mul_ps(v1, vid), kNearest));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm512_cvtepi32_epi8(q0));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16), _mm512_cvtepi32_epi8(q1));
      scales[b * a.padded + t] = f16_to_f32(f32_to_f16(amax / 127.0f));
      sums[b * a.padded + t] = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
    }
  }
}

template <class Tiles>
void MatmulTiles(Tiles& unit, const WeightMatrix& w, const std::byte* prepared, int bf16_parts, int64_t n,
                 int64_t row_begin, int64_t row_end, const float* bias, float* y) {
  const Int8Activations x = int8_view(prepared, n, w.cols);
  switch (w.type) {
    case WeightType::BF16:
      unit.config(&kBf16Configs.by_tokens[std::min<int64_t>(n, 16)]);
      if (bf16_parts == 1) MatmulBf16<Tiles, 1>(unit, w, prepared, n, row_begin, row_end, bias, y);
      else MatmulBf16<Tiles, kBf16Parts>(unit, w, prepared, n, row_begin, row_end, bias, y);
      break;
    case WeightType::Q8_0:
      unit.config(&kInt8Config);
      MatmulInt8Tiles<Tiles, WeightType::Q8_0>(unit, w, x, n, row_begin, row_end, bias, y);
      break;
    case WeightType::Q4_0:
      unit.config(&kInt8Config);
      MatmulInt8Tiles<Tiles, WeightType::Q4_0>(unit, w, x, n, row_begin, row_end, bias, y);
      break;
    case WeightType::Q4_K:
    case WeightType::Q5_K:
    case WeightType::Q6_K:
      unit.config(&kKQuantConfig);
      MatmulKQuant(unit, w, kquant_view(prepared, n, w.cols), n, row_begin, row_end, bias, y);
      break;
    default: return;
  }
  unit.release();  // the tile state returns to its initial form: cheaper context switches
}

void MatmulVnni(const WeightMatrix& w, const std::byte* prepared, int64_t n, int64_t row_begin, int64_t row_end,
                const float* bias, float* y) {
  const Int8Activations x = int8_view(prepared, n, w.cols);
  if (w.type == WeightType::Q8_0) MatmulInt8Vnni<WeightType::Q8_0>(w, x, n, row_begin, row_end, bias, y);
  else MatmulInt8Vnni<WeightType::Q4_0>(w, x, n, row_begin, row_end, bias, y);
}

}  // namespace

#pragma GCC diagnostic pop
#pragma GCC pop_options

void prepare_rows(WeightType t, int bf16_parts, const float* x, int64_t n, int64_t begin, int64_t end, int64_t cols,
                  std::byte* out) {
  if (t == WeightType::BF16) PrepareBf16(x, begin, end, cols, checked_parts(bf16_parts), out);
  else if (kquant_tile_type(t)) PrepareKQuant(t, x, n, begin, end, cols, out);
  else PrepareInt8(x, n, begin, end, cols, out);
}

void matmul_tiles(TileUnit unit, const WeightMatrix& w, const std::byte* prepared, int bf16_parts, int64_t n,
                  int64_t row_begin, int64_t row_end, const float* bias, float* y) {
  if (!w.tiled && !kquant_tile_type(w.type))
    fail("amx::matmul_tiles needs a tiled matrix, or a q4_K, q5_K or q6_K one");
  checked_parts(bf16_parts);
  if (unit == TileUnit::Emulated) {
    EmulatedTiles unit;
    MatmulTiles(unit, w, prepared, bf16_parts, n, row_begin, row_end, bias, y);
  } else {
    HardwareTiles unit;
    MatmulTiles(unit, w, prepared, bf16_parts, n, row_begin, row_end, bias, y);
  }
}

void matmul_vnni(const WeightMatrix& w, const std::byte* prepared, int64_t n, int64_t row_begin, int64_t row_end,
                 const float* bias, float* y) {
  if (!w.tiled || !interleavable(w.type)) fail("amx::matmul_vnni needs a tiled q8_0 or q4_0 matrix");
  MatmulVnni(w, prepared, n, row_begin, row_end, bias, y);
}

void attention_prepare_block(const AttentionArgs& a, int32_t block_id, int64_t valid, std::byte* out) {
  AttentionPrepareBlock(a, block_id, valid, out);
}

void attention_rows(TileUnit unit, const AttentionArgs& a, int64_t kv_head, const int64_t* rows, int count,
                    const std::byte* const* block_tiles, std::byte* scratch) {
  if (count < 1 || count > 16) fail("amx::attention_rows: ", count, " rows; 1 to 16 expected");
  if (unit == TileUnit::Emulated) {
    EmulatedTiles unit;
    AttentionRows(unit, a, kv_head, rows, count, block_tiles, scratch);
  } else {
    HardwareTiles unit;
    AttentionRows(unit, a, kv_head, rows, count, block_tiles, scratch);
  }
}

}  // namespace glass::amx
