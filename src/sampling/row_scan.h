// Internal: fast scans of a vocabulary-sized logit row. Each tests blocks of 16 at once
// (SSE2 where available; GCC does not vectorize the scalar form) and does scalar work
// only in blocks that can matter: a value above the current best, a finite value in a
// row that top-k has mostly set to -inf. Results are the scalar loop's, bit for bit.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace glass::detail {

inline constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
// What sampling writes into a logit it removes.
inline constexpr float kRemoved = kMinusInf;
inline constexpr size_t kScanBlock = 16;

// True when some value in row[begin, begin + kScanBlock) is > `bound`.
inline bool block_has_greater(const float* block, float bound) {
#if defined(__SSE2__)
  const __m128 b = _mm_set1_ps(bound);
  __m128 any = _mm_cmpgt_ps(_mm_loadu_ps(block), b);
  any = _mm_or_ps(any, _mm_cmpgt_ps(_mm_loadu_ps(block + 4), b));
  any = _mm_or_ps(any, _mm_cmpgt_ps(_mm_loadu_ps(block + 8), b));
  any = _mm_or_ps(any, _mm_cmpgt_ps(_mm_loadu_ps(block + 12), b));
  return _mm_movemask_ps(any) != 0;
#else
  bool any = false;
  for (size_t j = 0; j < kScanBlock; ++j) any |= block[j] > bound;
  return any;
#endif
}

// True when some value is NaN or +inf.
inline bool row_has_nan_or_plus_inf(std::span<const float> row) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  size_t i = 0;
#if defined(__SSE2__)
  const __m128 inf = _mm_set1_ps(kInf);
  __m128 bad = _mm_setzero_ps();
  for (; i + 4 <= row.size(); i += 4) bad = _mm_or_ps(bad, _mm_cmpnlt_ps(_mm_loadu_ps(&row[i]), inf));
  if (_mm_movemask_ps(bad) != 0) return true;
#endif
  bool any = false;
  for (; i < row.size(); ++i) any |= !(row[i] < kInf);
  return any;
}

// The largest value (-inf for an empty or all -inf row). No NaN.
inline float row_max(std::span<const float> row) {
  float best = kMinusInf;
  size_t i = 0;
  for (; i + kScanBlock <= row.size(); i += kScanBlock)
    if (block_has_greater(&row[i], best))
      for (size_t j = i; j < i + kScanBlock; ++j) best = row[j] > best ? row[j] : best;
  for (; i < row.size(); ++i) best = row[i] > best ? row[i] : best;
  return best;
}

// Calls f(index) for every entry of `row` that is not -inf, in index order; stops early
// when f returns true (f may also return void). Returns whether it stopped early.
template <class F>
bool for_each_finite(std::span<const float> row, F&& f) {
  auto call = [&](size_t j) {
    if constexpr (std::is_void_v<decltype(f(j))>) {
      f(j);
      return false;
    } else {
      return static_cast<bool>(f(j));
    }
  };
  size_t i = 0;
  for (; i + kScanBlock <= row.size(); i += kScanBlock)
    if (block_has_greater(&row[i], kMinusInf))
      for (size_t j = i; j < i + kScanBlock; ++j)
        if (row[j] != kMinusInf && call(j)) return true;
  for (; i < row.size(); ++i)
    if (row[i] != kMinusInf && call(i)) return true;
  return false;
}

}  // namespace glass::detail
