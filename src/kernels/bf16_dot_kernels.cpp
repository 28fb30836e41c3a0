#include "kernels/bf16_dot_kernels.h"

#include <immintrin.h>

#include <algorithm>

namespace glass::bf16dot {

bool cpu_has_avx512_bf16() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")
// GCC 12 reports the self-initialised placeholders of its own AVX-512 intrinsics
// (_mm512_undefined_*) as uninitialised.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace {

constexpr int64_t kStep = 32;       // bf16 values per zmm
constexpr int kRows = 8;            // weight rows per prefill tile (a thread's rows are whole groups of 8)
// Decode reads one row at a time: the matrix is then one sequential stream, which the
// hardware prefetcher keeps up with (4 rows at once with software prefetch of the next 4:
// 27-34 against 36-40 tok/s at the 0.5B shape's decode, the two binaries alternated).
constexpr int kDecodeRows = 1;
constexpr int kPrefillTokens = 2;   // tokens per prefill tile: 16 accumulators, one reduction
constexpr int64_t kChunk = 1024;    // columns per pass over long rows: a tile's weights for them stay in L1
constexpr int64_t kMaxBlock = 64;   // tokens whose activations a row group's tiles go through together

// Lane j of the result is the sum of v[j]'s 16 lanes, every vector's added in the same tree:
// ((l0 + l2) + (l1 + l3)) within each 128-bit lane, then (L0 + L1) + (L2 + L3).
inline __m512 ReduceSums16(const __m512 (&v)[16]) {
  __m512 a[8], b[4], c[2];
  for (int i = 0; i < 8; ++i)
    a[i] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]), _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
  for (int i = 0; i < 4; ++i) {
    const __m512d p = _mm512_castps_pd(a[2 * i]), q = _mm512_castps_pd(a[2 * i + 1]);
    b[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(p, q)), _mm512_castpd_ps(_mm512_unpackhi_pd(p, q)));
  }
  for (int i = 0; i < 2; ++i)
    c[i] = _mm512_add_ps(_mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], 0x88),
                         _mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], 0xdd));
  return _mm512_add_ps(_mm512_shuffle_f32x4(c[0], c[1], 0x88), _mm512_shuffle_f32x4(c[0], c[1], 0xdd));
}

// R rows (pointers; those past the tile's rows repeat its last) by T tokens over columns
// [c0, c1): acc[t * R + r] += the products, 32 columns a step.
template <int R, int T>
inline void Columns(const uint16_t* const (&wr)[R], const uint16_t* x, int64_t xstride, int64_t c0, int64_t c1,
                    int64_t cols, __m512 (&acc)[T * R]) {
  const int64_t whole_end = std::min(c1, cols / kStep * kStep);
  int64_t c = c0;
  for (; c < whole_end; c += kStep) {
    __m512bh xv[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) xv[t] = (__m512bh)_mm512_loadu_si512(x + t * xstride + c);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512bh wv = (__m512bh)_mm512_loadu_si512(wr[r] + c);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) acc[t * R + r] = _mm512_dpbf16_ps(acc[t * R + r], wv, xv[t]);
    }
  }
  if (c < c1) {  // the rows' last values, fewer than 32: the rest of the step is zeros (the
                 // activations are padded with them)
    const auto mask = static_cast<__mmask32>((uint64_t{1} << (cols - c)) - 1);
    __m512bh xv[T];
    for (int t = 0; t < T; ++t) xv[t] = (__m512bh)_mm512_loadu_si512(x + t * xstride + c);
    for (int r = 0; r < R; ++r) {
      const __m512bh wv = (__m512bh)_mm512_maskz_loadu_epi16(mask, wr[r] + c);
      for (int t = 0; t < T; ++t) acc[t * R + r] = _mm512_dpbf16_ps(acc[t * R + r], wv, xv[t]);
    }
  }
}

// The tile's sums (+ bias) into y: token t's rows [r0, r0 + m) at y + t * ystride + r0. The
// bias is added lane by lane, the same float addition whichever way it is stored.
template <int R, int T>
inline void Store(const __m512 (&acc)[T * R], int m, int64_t r0, const float* bias, float* y, int64_t ystride) {
  for (int first = 0; first < T * R; first += 16) {
    __m512 v[16];
    for (int i = 0; i < 16; ++i) v[i] = first + i < T * R ? acc[first + i] : _mm512_setzero_ps();
    __m512 sums = ReduceSums16(v);
    if constexpr (R == 8) {  // two tokens' 8 rows a zmm
      const auto rows = static_cast<__mmask8>((1u << m) - 1);
      if (bias != nullptr) {
        const __m256 b = _mm256_maskz_loadu_ps(rows, bias + r0);
        sums = _mm512_add_ps(sums, _mm512_insertf32x8(_mm512_castps256_ps512(b), b, 1));
      }
      const int t = first / R;
      _mm256_mask_storeu_ps(y + t * ystride + r0, rows, _mm512_castps512_ps256(sums));
      if (t + 1 < T) _mm256_mask_storeu_ps(y + (t + 1) * ystride + r0, rows, _mm512_extractf32x8_ps(sums, 1));
    } else {
      alignas(64) float lanes[16];
      _mm512_store_ps(lanes, sums);
      for (int i = first; i < std::min(first + 16, T * R); ++i) {
        const int t = i / R, r = i % R;
        if (r < m) y[t * ystride + r0 + r] = bias != nullptr ? lanes[i - first] + bias[r0 + r] : lanes[i - first];
      }
    }
  }
}

template <int N>
inline void Zero(__m512 (&acc)[N]) {
  for (auto& a : acc) a = _mm512_setzero_ps();
}

// The rows of a tile at r0: m of them, the pointers past them repeating the last.
template <int R>
inline void RowsAt(const WeightMatrix& w, int64_t r0, int m, const uint16_t* (&wr)[R]) {
  for (int r = 0; r < R; ++r) wr[r] = reinterpret_cast<const uint16_t*>(w.row(r0 + std::min(r, m - 1)));
}

// Decode: one token against rows [row_begin, row_end), kDecodeRows a tile.
void DecodeRows(const WeightMatrix& w, const uint16_t* x, int64_t row_begin, int64_t row_end, const float* bias,
                float* y) {
  constexpr int R = kDecodeRows;
  for (int64_t r0 = row_begin; r0 < row_end; r0 += R) {
    const int m = static_cast<int>(std::min<int64_t>(R, row_end - r0));
    const uint16_t* wr[R];
    RowsAt<R>(w, r0, m, wr);
    __m512 acc[R];
    Zero(acc);
    Columns<R, 1>(wr, x, 0, 0, w.cols, w.cols, acc);
    Store<R, 1>(acc, m, r0, bias, y, w.rows);
  }
}

// Prefill, tokens [t0, t1) against the kRows rows of `wr` (m of them real) at r0: kPrefillTokens
// a tile, then one at a time.
void PrefillWhole(const uint16_t* const (&wr)[kRows], int m, int64_t r0, const uint16_t* x, int64_t xstride,
                  int64_t t0, int64_t t1, int64_t cols, const float* bias, float* y, int64_t ystride) {
  constexpr int R = kRows, T = kPrefillTokens;
  int64_t t = t0;
  for (; t + T <= t1; t += T) {
    __m512 acc[T * R];
    Zero(acc);
    Columns<R, T>(wr, x + t * xstride, xstride, 0, cols, cols, acc);
    Store<R, T>(acc, m, r0, bias, y + t * ystride, ystride);
  }
  for (; t < t1; ++t) {
    __m512 acc[R];
    Zero(acc);
    Columns<R, 1>(wr, x + t * xstride, xstride, 0, cols, cols, acc);
    Store<R, 1>(acc, m, r0, bias, y + t * ystride, ystride);
  }
}

// The same for long rows, kChunk columns at a time: every tile goes through a chunk before
// any goes on to the next, the accumulators waiting in `saved` ([token - t0][row]) between.
void PrefillInChunks(const uint16_t* const (&wr)[kRows], int m, int64_t r0, const uint16_t* x, int64_t xstride,
                     int64_t t0, int64_t t1, int64_t cols, const float* bias, float* y, int64_t ystride,
                     __m512 (*saved)[kRows]) {
  constexpr int R = kRows, T = kPrefillTokens;
  for (int64_t t = t0; t < t1; ++t)
    for (int r = 0; r < R; ++r) saved[t - t0][r] = _mm512_setzero_ps();
  const int64_t tiles_end = t0 + (t1 - t0) / T * T;
  for (int64_t c0 = 0; c0 < cols; c0 += kChunk) {
    const int64_t c1 = std::min(cols, c0 + kChunk);
    for (int64_t t = t0; t < tiles_end; t += T) {
      __m512 acc[T * R];
      for (int i = 0; i < T * R; ++i) acc[i] = saved[t - t0 + i / R][i % R];
      Columns<R, T>(wr, x + t * xstride, xstride, c0, c1, cols, acc);
      for (int i = 0; i < T * R; ++i) saved[t - t0 + i / R][i % R] = acc[i];
    }
    for (int64_t t = tiles_end; t < t1; ++t) {
      __m512 acc[R];
      for (int r = 0; r < R; ++r) acc[r] = saved[t - t0][r];
      Columns<R, 1>(wr, x + t * xstride, xstride, c0, c1, cols, acc);
      for (int r = 0; r < R; ++r) saved[t - t0][r] = acc[r];
    }
  }
  for (int64_t t = t0; t < tiles_end; t += T) {
    __m512 acc[T * R];
    for (int i = 0; i < T * R; ++i) acc[i] = saved[t - t0 + i / R][i % R];
    Store<R, T>(acc, m, r0, bias, y + t * ystride, ystride);
  }
  for (int64_t t = tiles_end; t < t1; ++t) {
    __m512 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = saved[t - t0][r];
    Store<R, 1>(acc, m, r0, bias, y + t * ystride, ystride);
  }
}

}  // namespace

void prepare_rows(const float* x, int64_t begin, int64_t end, int64_t cols, uint16_t* out) {
  const int64_t stride = row_values(cols);
  for (int64_t t = begin; t < end; ++t) {
    const float* src = x + t * cols;
    uint16_t* dst = out + t * stride;
    for (int64_t c = 0; c < stride; c += kStep) {
      const int64_t valid = std::min<int64_t>(kStep, cols - c);
      const auto lo = static_cast<__mmask16>(valid >= 16 ? 0xffff : (1u << valid) - 1);
      const auto hi = static_cast<__mmask16>(valid >= 32 ? 0xffff : valid > 16 ? (1u << (valid - 16)) - 1 : 0);
      const __m512 low = _mm512_maskz_loadu_ps(lo, src + c), high = _mm512_maskz_loadu_ps(hi, src + c + 16);
      _mm512_storeu_si512(dst + c, (__m512i)_mm512_cvtne2ps_pbh(high, low));
    }
  }
}

void matmul_rows(const WeightMatrix& w, const uint16_t* x, int64_t n, int64_t row_begin, int64_t row_end,
                 const float* bias, float* y) {
  if (n == 1) {
    DecodeRows(w, x, row_begin, row_end, bias, y);
    return;
  }
  // Blocks of tokens whose activations stay in L2 while the row groups go past, each group's
  // weights staying in L1 while the block's tiles use them.
  const int64_t cols = w.cols, xstride = row_values(cols), ystride = w.rows;
  const int64_t block = std::clamp<int64_t>((256 << 10) / (xstride * 2) / kPrefillTokens * kPrefillTokens,
                                            kPrefillTokens, kMaxBlock);
  alignas(64) __m512 saved[kMaxBlock][kRows];
  for (int64_t t0 = 0; t0 < n; t0 += block) {
    const int64_t t1 = std::min(n, t0 + block);
    for (int64_t r0 = row_begin; r0 < row_end; r0 += kRows) {
      const int m = static_cast<int>(std::min<int64_t>(kRows, row_end - r0));
      const uint16_t* wr[kRows];
      RowsAt<kRows>(w, r0, m, wr);
      if (cols <= kChunk) PrefillWhole(wr, m, r0, x, xstride, t0, t1, cols, bias, y, ystride);
      else PrefillInChunks(wr, m, r0, x, xstride, t0, t1, cols, bias, y, ystride, saved);
    }
  }
}

#pragma GCC diagnostic pop
#pragma GCC pop_options
#else  // never called: cpu_has_avx512_bf16() is false
void prepare_rows(const float*, int64_t, int64_t, int64_t, uint16_t*) {}
void matmul_rows(const WeightMatrix&, const uint16_t*, int64_t, int64_t, int64_t, const float*, float*) {}
#endif

}  // namespace glass::bf16dot
