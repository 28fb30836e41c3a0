// Rotary position embedding of a model, computed once from its config as transformers'
// modeling_rope_utils computes it: the inverse frequency of each dimension pair and the
// factor cos and sin are multiplied by (YaRN's attention scaling).
#pragma once

#include <cstdint>
#include <vector>

#include "io/model_config.h"

namespace glass {

struct RopeTable {
  std::vector<double> inv_freq;  // head_dim / 2 values
  double attention_factor = 1.0;
  // YaRN: the dimension pairs between which the frequencies blend from extrapolated
  // (below low) to interpolated (above high); {0, 0} otherwise.
  double correction_low = 0, correction_high = 0;

  static RopeTable from_config(const ModelConfig& config);

  // cos/sin[t * half + i] = cos/sin(positions[t] * inv_freq[i]) * attention_factor, for
  // the n rows of a batch.
  void angles(const int32_t* positions, int64_t n, float* cos, float* sin) const;
};

}  // namespace glass
