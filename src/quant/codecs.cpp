// The float types: F32 as is, F16 and BF16 rounded to nearest even.
#include "quant/codecs.h"

#include <cstring>

#include "base/half.h"

namespace glass::codecs {

void dequantize_f32(const std::byte* src, float* out, int64_t n) { std::memcpy(out, src, 4 * static_cast<size_t>(n)); }
void quantize_f32(const float* in, std::byte* out, int64_t n) { std::memcpy(out, in, 4 * static_cast<size_t>(n)); }

void dequantize_f16(const std::byte* src, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    out[i] = f16_to_f32(h);
  }
}
void quantize_f16(const float* in, std::byte* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = f32_to_f16(in[i]);
    std::memcpy(out + 2 * i, &h, 2);
  }
}

void dequantize_bf16(const std::byte* src, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    out[i] = bf16_to_f32(h);
  }
}
void quantize_bf16(const float* in, std::byte* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = f32_to_bf16(in[i]);
    std::memcpy(out + 2 * i, &h, 2);
  }
}

}  // namespace glass::codecs
