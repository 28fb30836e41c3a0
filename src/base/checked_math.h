// Size arithmetic on values that come from input (config.json fields, command-line
// flags, request parameters). Signed overflow is undefined behaviour and a wrapped size
// is a wrong allocation or a wrong admission decision, so every sum and product that
// input reaches goes through these: an overflow is an error naming what was computed.
#pragma once

#include <concepts>
#include <limits>
#include <string_view>

#include "base/error.h"

namespace glass {

// a + b; glass::Error "<what>: a + b does not fit in N bits" when it overflows T.
template <std::integral T>
T checked_add(T a, T b, std::string_view what) {
  T sum;
  if (__builtin_add_overflow(a, b, &sum))
    fail(what, ": ", +a, " + ", +b, " does not fit in ", std::numeric_limits<T>::digits + std::is_signed_v<T>, " bits");
  return sum;
}

// a * b; glass::Error "<what>: a x b does not fit in N bits" when it overflows T.
template <std::integral T>
T checked_mul(T a, T b, std::string_view what) {
  T product;
  if (__builtin_mul_overflow(a, b, &product))
    fail(what, ": ", +a, " x ", +b, " does not fit in ", std::numeric_limits<T>::digits + std::is_signed_v<T>, " bits");
  return product;
}

// a + b, or T's largest (smallest) value when the sum would pass it: for worst cases that
// a smaller bound caps right after (prompt + max_tokens, capped by the context length).
template <std::integral T>
T saturating_add(T a, T b) {
  T sum;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<T>::max() : std::numeric_limits<T>::min();
}

}  // namespace glass
