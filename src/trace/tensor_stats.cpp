#include "trace/tensor_stats.h"

#include <algorithm>

namespace glass {

void TensorStats::merge(const TensorStats& o) {
  count += o.count;
  nonfinite += o.nonfinite;
  sum_squares += o.sum_squares;
  min = std::min(min, o.min);
  max = std::max(max, o.max);
}

TensorStats tensor_stats(std::span<const float> values) {
  TensorStats s;
  s.add(values);
  return s;
}

}  // namespace glass
