// Float-to-integer conversions of llama.cpp's reference quantizers, defined for every input.
// The quantizers must give ggml's bytes, and ggml's C casts compile on x86-64 to
// cvttss2si, which turns NaN and out-of-range values into INT32_MIN; a static_cast would
// be undefined behaviour there. Internal to src/quant.
#pragma once

#include <bit>
#include <cstdint>
#include <limits>

namespace glass::quant {

// Both are written without branches on the value: rounding random data through
// data-dependent branches costs a misprediction every other value.

// Toward zero, as a C cast on x86-64: NaN and values outside int32 give INT32_MIN.
inline int32_t truncate_to_int(float v) {
  const bool in_range = v >= -2147483648.0f && v < 2147483648.0f;  // false for NaN
  const auto i = static_cast<int32_t>(in_range ? v : 0.0f);
  return in_range ? i : std::numeric_limits<int32_t>::min();
}

// roundf (halves away from zero), then the C cast: what `int8_t q = roundf(v)` stores.
inline int32_t round_to_int(float v) {
  const bool in_range = v >= -2147483648.0f && v < 2147483648.0f;
  const float safe = in_range ? v : 0.0f;
  const auto i = static_cast<int32_t>(safe);  // toward zero; safe - i is exact
  const float frac = safe - static_cast<float>(i);
  const int32_t rounded = i + static_cast<int32_t>(frac >= 0.5f) - static_cast<int32_t>(frac <= -0.5f);
  return in_range ? rounded : std::numeric_limits<int32_t>::min();
}

// ggml's nearest_int: round to nearest, ties to even, by adding 1.5 * 2^23 so that the
// integer lands in the low mantissa bits. Exact for |v| <= 2^22 - 1, which the k-quant
// searches respect for finite input; for other input it gives ggml's same garbage.
inline int nearest_int(float v) {
  const float shifted = v + 12582912.0f;
  return static_cast<int>(std::bit_cast<uint32_t>(shifted) & 0x007fffffu) - 0x00400000;
}

}  // namespace glass::quant
