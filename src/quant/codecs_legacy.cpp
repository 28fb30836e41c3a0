// llama.cpp's 32-value block types: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 (layouts in blocks.h).
// Dequantization computes ggml's dequantize_row_* expressions in the same order; the
// quantizers follow quantize_row_*_ref (ggml-quants.c), float operation for operation, so
// that their bytes are llama-quantize's. This file is compiled without FMA contraction
// (src/quant/CMakeLists.txt): ggml's reference code is, on x86-64.
#include <cmath>
#include <cstring>

#include "base/half.h"
#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/rounding.h"

namespace glass::codecs {

using quant::round_to_int;
using quant::truncate_to_int;

namespace {

// The scale and reciprocal of the symmetric types (Q8_0, Q4_0, Q5_0): `extreme` maps to
// the end of the code range, `divisor` is that end's value (127, or -8 / -16 so that the
// value of largest magnitude becomes the most negative code).
struct SymmetricScale {
  float scale, inverse;
};
SymmetricScale symmetric_scale(float extreme, float divisor) {
  const float scale = extreme / divisor;
  return {scale, scale != 0.0f ? 1.0f / scale : 0.0f};
}

// The value of largest magnitude, with its sign (the first one on ties).
float signed_absmax(const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

// The asymmetric types (Q4_1, Q5_1) map [min, max] onto 0..levels-1.
struct Range {
  float min, max;
};
Range value_range(const float* x) {
  Range r{3.40282347e+38f, -3.40282347e+38f};
  for (int j = 0; j < 32; ++j) {
    if (x[j] < r.min) r.min = x[j];
    if (x[j] > r.max) r.max = x[j];
  }
  return r;
}

// A 4-bit code as ggml stores it: the float truncated to int8, capped at `top`.
uint8_t capped_code(float v, int top) {
  const int code = static_cast<int8_t>(truncate_to_int(v));
  return static_cast<uint8_t>(code < top ? code : top);
}

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

void dequantize_q8_0(const std::byte* src, float* out, int64_t blocks) {
  const auto* b = reinterpret_cast<const BlockQ8_0*>(src);
  for (int64_t i = 0; i < blocks; ++i, out += 32) {
    const float d = f16_to_f32(b[i].scale);
    for (int j = 0; j < 32; ++j) out[j] = static_cast<float>(b[i].q[j]) * d;
  }
}

void quantize_q8_0(const float* in, std::byte* out, int64_t blocks) {
  auto* b = reinterpret_cast<BlockQ8_0*>(out);
  for (int64_t i = 0; i < blocks; ++i, in += 32) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = amax > std::fabs(in[j]) ? amax : std::fabs(in[j]);  // NaN wins, as in ggml
    const SymmetricScale s = symmetric_scale(amax, 127.0f);
    b[i].scale = f32_to_f16(s.scale);
    for (int j = 0; j < 32; ++j) b[i].q[j] = static_cast<int8_t>(round_to_int(in[j] * s.inverse));
  }
}

void dequantize_q4_0(const std::byte* src, float* out, int64_t blocks) {
  const auto* b = reinterpret_cast<const BlockQ4_0*>(src);
  for (int64_t i = 0; i < blocks; ++i, out += 32) {
    const float d = f16_to_f32(b[i].scale);
    for (int j = 0; j < 16; ++j) {
      out[j] = static_cast<float>((b[i].q[j] & 0x0f) - 8) * d;
      out[j + 16] = static_cast<float>((b[i].q[j] >> 4) - 8) * d;
    }
  }
}

void quantize_q4_0(const float* in, std::byte* out, int64_t blocks) {
  auto* b = reinterpret_cast<BlockQ4_0*>(out);
  for (int64_t i = 0; i < blocks; ++i, in += 32) {
    const SymmetricScale s = symmetric_scale(signed_absmax(in), -8.0f);
    b[i].scale = f32_to_f16(s.scale);
    for (int j = 0; j < 16; ++j) {
      const uint8_t lo = capped_code(in[j] * s.inverse + 8.5f, 15);
      const uint8_t hi = capped_code(in[j + 16] * s.inverse + 8.5f, 15);
      b[i].q[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

void dequantize_q4_1(const std::byte* src, float* out, int64_t blocks) {
  const auto* b = reinterpret_cast<const BlockQ4_1*>(src);
  for (int64_t i = 0; i < blocks; ++i, out += 32) {
    const float d = f16_to_f32(b[i].scale);
    const float m = f16_to_f32(b[i].min);
    for (int j = 0; j < 16; ++j) {
      out[j] = static_cast<float>(b[i].q[j] & 0x0f) * d + m;
      out[j + 16] = static_cast<float>(b[i].q[j] >> 4) * d + m;
    }
  }
}

void quantize_q4_1(const float* in, std::byte* out, int64_t blocks) {
  auto* b = reinterpret_cast<BlockQ4_1*>(out);
  for (int64_t i = 0; i < blocks; ++i, in += 32) {
    const Range r = value_range(in);
    const float d = (r.max - r.min) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].scale = f32_to_f16(d);
    b[i].min = f32_to_f16(r.min);
    for (int j = 0; j < 16; ++j) {
      const uint8_t lo = capped_code((in[j] - r.min) * id + 0.5f, 15);
      const uint8_t hi = capped_code((in[j + 16] - r.min) * id + 0.5f, 15);
      b[i].q[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

void dequantize_q5_0(const std::byte* src, float* out, int64_t blocks) {
  const auto* b = reinterpret_cast<const BlockQ5_0*>(src);
  for (int64_t i = 0; i < blocks; ++i, out += 32) {
    const float d = f16_to_f32(b[i].scale);
    const uint32_t high = load_u32(b[i].high_bits);
    for (int j = 0; j < 16; ++j) {
      const int lo = static_cast<int>((b[i].q[j] & 0x0f) | (((high >> j) & 1u) << 4)) - 16;
      const int hi = static_cast<int>((b[i].q[j] >> 4) | (((high >> (j + 16)) & 1u) << 4)) - 16;
      out[j] = static_cast<float>(lo) * d;
      out[j + 16] = static_cast<float>(hi) * d;
    }
  }
}

void quantize_q5_0(const float* in, std::byte* out, int64_t blocks) {
  auto* b = reinterpret_cast<BlockQ5_0*>(out);
  for (int64_t i = 0; i < blocks; ++i, in += 32) {
    const SymmetricScale s = symmetric_scale(signed_absmax(in), -16.0f);
    b[i].scale = f32_to_f16(s.scale);
    uint32_t high = 0;
    for (int j = 0; j < 16; ++j) {
      const uint8_t lo = capped_code(in[j] * s.inverse + 16.5f, 31);
      const uint8_t hi = capped_code(in[j + 16] * s.inverse + 16.5f, 31);
      b[i].q[j] = static_cast<uint8_t>((lo & 0x0f) | ((hi & 0x0f) << 4));
      high |= static_cast<uint32_t>(lo >> 4 & 1) << j;
      high |= static_cast<uint32_t>(hi >> 4 & 1) << (j + 16);
    }
    std::memcpy(b[i].high_bits, &high, 4);
  }
}

void dequantize_q5_1(const std::byte* src, float* out, int64_t blocks) {
  const auto* b = reinterpret_cast<const BlockQ5_1*>(src);
  for (int64_t i = 0; i < blocks; ++i, out += 32) {
    const float d = f16_to_f32(b[i].scale);
    const float m = f16_to_f32(b[i].min);
    const uint32_t high = load_u32(b[i].high_bits);
    for (int j = 0; j < 16; ++j) {
      const uint32_t lo = (b[i].q[j] & 0x0fu) | (((high >> j) & 1u) << 4);
      const uint32_t hi = (b[i].q[j] >> 4) | (((high >> (j + 16)) & 1u) << 4);
      out[j] = static_cast<float>(lo) * d + m;
      out[j + 16] = static_cast<float>(hi) * d + m;
    }
  }
}

void quantize_q5_1(const float* in, std::byte* out, int64_t blocks) {
  auto* b = reinterpret_cast<BlockQ5_1*>(out);
  for (int64_t i = 0; i < blocks; ++i, in += 32) {
    const Range r = value_range(in);
    const float d = (r.max - r.min) / 31.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].scale = f32_to_f16(d);
    b[i].min = f32_to_f16(r.min);
    uint32_t high = 0;
    for (int j = 0; j < 16; ++j) {
      // No cap here, unlike Q4_1: ggml's reference has none (the codes cannot pass 31).
      const auto lo = static_cast<uint8_t>(truncate_to_int((in[j] - r.min) * id + 0.5f));
      const auto hi = static_cast<uint8_t>(truncate_to_int((in[j + 16] - r.min) * id + 0.5f));
      b[i].q[j] = static_cast<uint8_t>((lo & 0x0f) | ((hi & 0x0f) << 4));
      high |= static_cast<uint32_t>(lo >> 4 & 1) << j;
      high |= static_cast<uint32_t>(hi >> 4 & 1) << (j + 16);
    }
    std::memcpy(b[i].high_bits, &high, 4);
  }
}

}  // namespace glass::codecs
