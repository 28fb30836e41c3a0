// Float-to-integer conversions of llama.cpp's reference quantizers, defined for every input.
// The quantizers must give ggml's bytes, and ggml's C casts compile on x86-64 to
// cvttss2si, which turns NaN and out-of-range values into INT32_MIN; a static_cast would
// be undefined behaviour there. Internal to src/quant.
#pragma once

#include <bit>
#include <cstdint>
#include <limits>

#include "quant/weight_type.h"

namespace glass::quant {

// Toward zero, as a C cast on x86-64: NaN and values outside int32 give INT32_MIN.
inline int32_t truncate_to_int(float v) {
  if (v >= -2147483648.0f && v < 2147483648.0f) return static_cast<int32_t>(v);
  return std::numeric_limits<int32_t>::min();
}

// roundf (halves away from zero), then the C cast: what `int8_t q = roundf(v)` stores.
inline int32_t round_to_int(float v) {
  if (v >= -2147483648.0f && v < 2147483648.0f) return round_half_away(v);
  return std::numeric_limits<int32_t>::min();
}

// ggml's nearest_int: round to nearest, ties to even, by adding 1.5 * 2^23 so that the
// integer lands in the low mantissa bits. Exact for |v| <= 2^22 - 1, which the k-quant
// searches respect for finite input; for other input it gives ggml's same garbage.
inline int nearest_int(float v) {
  const float shifted = v + 12582912.0f;
  return static_cast<int>(std::bit_cast<uint32_t>(shifted) & 0x007fffffu) - 0x00400000;
}

}  // namespace glass::quant
