// The float types and llama.cpp's 32-value blocks Q8_0 and Q4_0.
#include "quant/codecs.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/half.h"
#include "quant/blocks.h"
#include "quant/weight_type.h"

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

void dequantize_q8_0(const std::byte* src, float* out, int64_t blocks) {
  const auto* b = reinterpret_cast<const BlockQ8_0*>(src);
  for (int64_t i = 0; i < blocks; ++i) {
    const float d = f16_to_f32(b[i].scale);
    for (int j = 0; j < 32; ++j) out[i * 32 + j] = static_cast<float>(b[i].q[j]) * d;
  }
}

void quantize_q8_0(const float* in, std::byte* out, int64_t blocks) {
  auto* b = reinterpret_cast<BlockQ8_0*>(out);
  for (int64_t i = 0; i < blocks; ++i) {
    const float* x = in + i * 32;
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    b[i].scale = f32_to_f16(d);
    for (int j = 0; j < 32; ++j) b[i].q[j] = static_cast<int8_t>(round_half_away(x[j] * id));
  }
}

void dequantize_q4_0(const std::byte* src, float* out, int64_t blocks) {
  const auto* b = reinterpret_cast<const BlockQ4_0*>(src);
  for (int64_t i = 0; i < blocks; ++i) {
    const float d = f16_to_f32(b[i].scale);
    for (int j = 0; j < 16; ++j) {
      out[i * 32 + j] = static_cast<float>((b[i].q[j] & 0x0f) - 8) * d;
      out[i * 32 + j + 16] = static_cast<float>((b[i].q[j] >> 4) - 8) * d;
    }
  }
}

void quantize_q4_0(const float* in, std::byte* out, int64_t blocks) {
  auto* b = reinterpret_cast<BlockQ4_0*>(out);
  for (int64_t i = 0; i < blocks; ++i) {
    const float* x = in + i * 32;
    float amax = 0, max = 0;  // the value of largest magnitude, with its sign
    for (int j = 0; j < 32; ++j) {
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    b[i].scale = f32_to_f16(d);
    for (int j = 0; j < 16; ++j) {
      const int lo = std::min(15, static_cast<int>(x[j] * id + 8.5f));
      const int hi = std::min(15, static_cast<int>(x[j + 16] * id + 8.5f));
      b[i].q[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

}  // namespace glass::codecs
