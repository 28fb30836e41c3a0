// Random-weight checkpoints at real Qwen2.5 / Qwen3 / Qwen3-MoE shapes, in the Hugging
// Face layout.
// Benchmarks use them (speed does not depend on values) and the build makes the demo
// model with them. The same seed gives the same bytes on every machine.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "io/model_config.h"
#include "io/safetensors.h"

namespace glass {

// "demo", "qwen2.5-0.5b" ... "qwen2.5-72b" (the "qwen2.5-" prefix is optional),
// "qwen3-0.6b" ... "qwen3-32b", "qwen3-30b-a3b", "qwen3-235b-a22b".
ModelConfig model_preset(const std::string& name);
std::vector<std::string> model_preset_names();

struct RandomCheckpointOptions {
  DType dtype = DType::BF16;  // BF16, F16 or F32
  uint64_t seed = 0;
  // When >= 0: every embedding row shares an offset direction, the layers write less
  // into the residual stream so that direction reaches the end, and this token's
  // lm_head row points along it (`end_token_gain` times an embedding row's length): the
  // token is then always among the likeliest and sampled generations end after some
  // tokens (the demo model does this with <|im_end|>). Needs untied embeddings.
  int32_t end_token = -1;
  float end_token_gain = 0.6f;
};

// The files write_random_checkpoint writes, and no others.
inline constexpr std::array<const char*, 3> kRandomCheckpointFiles = {"model.safetensors", "config.json",
                                                                      "generation_config.json"};

// Writes config.json, generation_config.json (Qwen2.5-Instruct's or Qwen3's) and model.safetensors
// into `dir` (created if needed). Tokenizer files are the caller's business.
void write_random_checkpoint(const ModelConfig& config, const std::string& dir, const RandomCheckpointOptions& options);

}  // namespace glass
