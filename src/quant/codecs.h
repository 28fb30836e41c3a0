// Each type's block codecs, the functions the weight-type table (weight_type.h) points at.
// Signatures as DequantizeBlocks / QuantizeBlocks. The float types are in codecs.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

namespace glass::codecs {

void dequantize_f32(const std::byte* src, float* out, int64_t n);
void quantize_f32(const float* in, std::byte* out, int64_t n);
void dequantize_f16(const std::byte* src, float* out, int64_t n);
void quantize_f16(const float* in, std::byte* out, int64_t n);
void dequantize_bf16(const std::byte* src, float* out, int64_t n);
void quantize_bf16(const float* in, std::byte* out, int64_t n);

// 32-value blocks (codecs_legacy.cpp).
void dequantize_q8_0(const std::byte* src, float* out, int64_t blocks);
void quantize_q8_0(const float* in, std::byte* out, int64_t blocks);
void dequantize_q4_0(const std::byte* src, float* out, int64_t blocks);
void quantize_q4_0(const float* in, std::byte* out, int64_t blocks);
void dequantize_q4_1(const std::byte* src, float* out, int64_t blocks);
void quantize_q4_1(const float* in, std::byte* out, int64_t blocks);
void dequantize_q5_0(const std::byte* src, float* out, int64_t blocks);
void quantize_q5_0(const float* in, std::byte* out, int64_t blocks);
void dequantize_q5_1(const std::byte* src, float* out, int64_t blocks);
void quantize_q5_1(const float* in, std::byte* out, int64_t blocks);

// 256-value super-blocks, the k-quants (codecs_kquants.cpp).
void dequantize_q2_K(const std::byte* src, float* out, int64_t blocks);
void quantize_q2_K(const float* in, std::byte* out, int64_t blocks);
void dequantize_q3_K(const std::byte* src, float* out, int64_t blocks);
void quantize_q3_K(const float* in, std::byte* out, int64_t blocks);
void dequantize_q4_K(const std::byte* src, float* out, int64_t blocks);
void quantize_q4_K(const float* in, std::byte* out, int64_t blocks);
void dequantize_q5_K(const std::byte* src, float* out, int64_t blocks);
void quantize_q5_K(const float* in, std::byte* out, int64_t blocks);
void dequantize_q6_K(const std::byte* src, float* out, int64_t blocks);
void quantize_q6_K(const float* in, std::byte* out, int64_t blocks);

}  // namespace glass::codecs
