// Sampling and stopping flags shared by `glass run` and `glass chat`; they override
// the checkpoint's generation_config.json field by field.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "sampling/sampling_params.h"

namespace glass::cli {

struct GenerationOptions {
  SamplingOverrides overrides;
  bool greedy = false;
  bool sample = false;
  bool ignore_eos = false;
  std::string chain_order;

  void add_to(CLI::App* sub);
  // generation_config.json of `model_dir` (transformers' defaults without one), eos ids
  // from config.json when it lists none, then the flags. Errors name the flag or file.
  SamplingParams resolve(const std::string& model_dir) const;
};

}  // namespace glass::cli
