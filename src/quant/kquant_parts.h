// The k-quant reference quantizers (Q2_K to Q6_K) in two halves: each sub-block's scale
// search, then the rest (the sub-block scales quantized against the largest, the values
// re-quantized with the stored scales, the packing). The search is nearly all the time;
// the vectorized quantizers (kernels/simd_quantize.cpp) run it for many sub-blocks at once
// and finish each super-block with these functions, so both give the same bytes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace glass::codecs {

// The search of the types with a min (Q2_K, Q4_K, Q5_K; ggml's make_qkx2_quants): codes
// 0..nmax, value ~ scale * code - min. Starting from the plain [min(x, 0), max(x)] mapping,
// it tries steps + 1 scales ((rmin + rdelta * step + nmax) / range), fits scale and min to
// each by weighted least squares and keeps the one of least weighted error (absolute or
// squared).
struct ScaleMinSearch {
  int nmax;
  float rmin, rdelta;
  int steps;
  bool absolute_error;
};
inline constexpr ScaleMinSearch kQ2KSearch{3, -0.5f, 0.1f, 15, true};   // 16 sub-blocks of 16, weights |x|
inline constexpr ScaleMinSearch kQ4KSearch{15, -1.0f, 0.1f, 20, false};  // 8 of 32, weights rms + |x|
inline constexpr ScaleMinSearch kQ5KSearch{31, -0.5f, 0.1f, 15, false};  // 8 of 32, weights rms + |x|

// One super-block (256 values `x`) from its sub-blocks' searches: scales[s] and mins[s]
// (the min as a non-negative amount to subtract; Q3_K and Q6_K have none) and the
// search's codes (256, in value order; Q3_K's stored + 4, Q6_K's + 32), which the
// sub-blocks whose stored scale is 0 keep. `codes` is scratch afterwards.
void finish_q2_K(const float* x, const float* scales, const float* mins, uint8_t* codes, std::byte* block);
void finish_q3_K(const float* x, const float* scales, int8_t* codes, std::byte* block);
void finish_q4_K(const float* x, const float* scales, const float* mins, uint8_t* codes, std::byte* block);
void finish_q5_K(const float* x, const float* scales, const float* mins, uint8_t* codes, std::byte* block);
void finish_q6_K(const float* x, const float* scales, int8_t* codes, std::byte* block);

}  // namespace glass::codecs
