// bf16 weights times activations rounded to bf16 (MatmulPrecision::Bf16) with AVX512-BF16's
// vdpbf16ps: 32 products a zmm instruction, each exact in fp32, twice the multiply-adds of
// an fp32 FMA. The code is compiled for AVX-512 BF16 function by function and only called
// after cpu_has_avx512_bf16(), so the binary still runs on CPUs without it.
//
// Results. Every output y[t, r] is one chain of vdpbf16ps over the columns in order, 32 at a
// time (the last 32 padded with zeros), into one zmm accumulator, whose 16 lanes are then
// added in one fixed tree (ReduceSums16 in the .cpp) and the bias added: the same operations
// whatever the tile, the token count, the rows' split between threads or the column chunks,
// so results are batch and thread invariant.
#pragma once

#include <cstdint>

#include "kernels/weight_matrix.h"

namespace glass::bf16dot {

// AVX-512 F, BW, VL, DQ with AVX512-BF16 (and an OS that saves zmm state).
bool cpu_has_avx512_bf16();

// Values per prepared activation row: cols rounded up to 32 (one zmm of bf16).
inline int64_t row_values(int64_t cols) { return (cols + 31) / 32 * 32; }

// Tokens [begin, end) of x[n, cols] rounded to bf16 (f32_to_bf16_flushed, which is what
// vcvtne2ps2bf16 computes) into out[t * row_values(cols) ...], each row padded with zeros.
void prepare_rows(const float* x, int64_t begin, int64_t end, int64_t cols, uint16_t* out);

// y[t * w.rows + r] = dot(w row r, x row t) (+ bias[r]) for rows [row_begin, row_end) of a
// row-major bf16 matrix and all n tokens of x (prepare_rows' layout).
void matmul_rows(const WeightMatrix& w, const uint16_t* x, int64_t n, int64_t row_begin, int64_t row_end,
                 const float* bias, float* y);

}  // namespace glass::bf16dot
