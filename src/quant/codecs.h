// Each type's block codecs, the functions the weight-type table (weight_type.h) points at.
// Signatures as DequantizeBlocks / QuantizeBlocks.
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

void dequantize_q8_0(const std::byte* src, float* out, int64_t blocks);
void quantize_q8_0(const float* in, std::byte* out, int64_t blocks);
void dequantize_q4_0(const std::byte* src, float* out, int64_t blocks);
void quantize_q4_0(const float* in, std::byte* out, int64_t blocks);

}  // namespace glass::codecs
