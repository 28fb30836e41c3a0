#include "model/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace glass {

namespace {

// The dimension (pair index scaled to head_dim) at which a frequency turns
// `rotations` times over `context` positions (YaRN's find_correction_dim).
double correction_dim(double rotations, double dim, double base, double context) {
  return dim * std::log(context / (rotations * 2 * std::numbers::pi)) / (2 * std::log(base));
}

}  // namespace

RopeTable RopeTable::from_config(const ModelConfig& c) {
  RopeTable r;
  const int64_t dim = c.head_dim, half = dim / 2;
  r.inv_freq.resize(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i)
    r.inv_freq[i] = 1.0 / std::pow(c.rope_theta, static_cast<double>(2 * i) / static_cast<double>(dim));
  const RopeScaling& s = c.rope_scaling;
  switch (s.type) {
    case RopeScalingType::kNone: break;
    case RopeScalingType::kLinear:
      for (double& f : r.inv_freq) f /= s.factor;
      break;
    case RopeScalingType::kYarn: {
      const auto context = static_cast<double>(s.original_max_position_embeddings);
      double low = correction_dim(s.beta_fast, static_cast<double>(dim), c.rope_theta, context);
      double high = correction_dim(s.beta_slow, static_cast<double>(dim), c.rope_theta, context);
      if (s.truncate) low = std::floor(low), high = std::ceil(high);
      low = std::max(low, 0.0);
      high = std::min(high, static_cast<double>(dim - 1));
      r.correction_low = low;
      r.correction_high = high;
      if (low == high) high += 0.001;  // as transformers does, against a zero-width ramp
      for (int64_t i = 0; i < half; ++i) {
        // 0 keeps the extrapolated (original) frequency, 1 takes the interpolated one.
        const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
        const double extrapolated = r.inv_freq[i], interpolated = extrapolated / s.factor;
        r.inv_freq[i] = interpolated * ramp + extrapolated * (1 - ramp);
      }
      r.attention_factor = s.attention_factor;
      break;
    }
  }
  return r;
}

void RopeTable::angles(const int32_t* positions, int64_t n, float* cos, float* sin) const {
  const auto half = static_cast<int64_t>(inv_freq.size());
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const double angle = positions[t] * inv_freq[i];
      cos[t * half + i] = static_cast<float>(std::cos(angle) * attention_factor);
      sin[t * half + i] = static_cast<float>(std::sin(angle) * attention_factor);
    }
  }
}

}  // namespace glass
