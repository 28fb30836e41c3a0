// Summary statistics of a tensor (or of one row of it) for the trace: rms, min and max
// over the finite values, accumulated in double.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>

namespace glass {

struct TensorStats {
  int64_t count = 0;      // finite values seen
  int64_t nonfinite = 0;  // NaN or ±inf values seen (left out of rms/min/max)
  double sum_squares = 0;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();

  void add(float v) {
    if (!std::isfinite(v)) {
      ++nonfinite;
      return;
    }
    ++count;
    sum_squares += static_cast<double>(v) * v;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  void add(std::span<const float> values) {
    for (float v : values) add(v);
  }
  void merge(const TensorStats& o);

  // sqrt(mean(x²)); 0 when there are no finite values.
  double rms() const { return count > 0 ? std::sqrt(sum_squares / static_cast<double>(count)) : 0.0; }
  // min/max are NaN when there are no finite values.
  double min_or_nan() const { return count > 0 ? min : std::numeric_limits<double>::quiet_NaN(); }
  double max_or_nan() const { return count > 0 ? max : std::numeric_limits<double>::quiet_NaN(); }
};

TensorStats tensor_stats(std::span<const float> values);

}  // namespace glass
