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

// Reply shaping (the demo model, `glass random-model --shape-replies END_ID`): the weights
// stay random, but the embedding, the lm_head and the layers' writes into the residual
// stream are shaped so that a sampled reply is a chain of common words that ends with
// `reply_end` after 20 to 80 tokens (random-model's help says so).
//
// The chain has kReplyStages stages, each a group of kReplyWordsPerStage words. Every
// token is "in" a stage: a chain word in its group's, every other token (prompt text,
// newlines, special tokens) in stage 0. From stage 0 the next token is a stage-1 word;
// from stage k it is a word of stage k (stay) or, a little likelier, of stage k+1
// (advance); from the last stage, a word of it or `reply_end`. A reply therefore walks
// through all the stages: its length is 1 + a sum of kReplyStages geometric stage lengths
// (at least kReplyStages + 1 tokens; 27 to 40 with the demo's sampling settings, 32 to 56
// at temperature 1; greedy: kReplyStages + 1), rather than the single geometric length of
// a constant chance of ending, which ends many replies at once and lets others run long.
// The numbers are in random_checkpoint.cpp (ReplyShape).
inline constexpr int kReplyStages = 26;
inline constexpr int kReplyWordsPerStage = 8;

struct RandomCheckpointOptions {
  DType dtype = DType::BF16;  // BF16, F16 or F32
  uint64_t seed = 0;
  // When >= 0, shape replies (above) to end with this token (<|im_end|>, 151645, for the
  // demo). Needs untied embeddings, a hidden size of at least 64, and `reply_words`.
  int32_t reply_end = -1;
  // The words the chain may use (ids of readable tokens, e.g. " house"; the caller picks
  // them with the tokenizer): kReplyStages * kReplyWordsPerStage of them are drawn by the
  // seed. Distinct, below the vocabulary size, not reply_end.
  std::vector<int32_t> reply_words = {};
};

// The chain's words, stage 1 first (kReplyStages groups of kReplyWordsPerStage ids), that
// write_random_checkpoint draws from options.reply_words with options.seed.
std::vector<std::vector<int32_t>> reply_stages(const RandomCheckpointOptions& options);

// The files write_random_checkpoint writes, and no others.
inline constexpr std::array<const char*, 3> kRandomCheckpointFiles = {"model.safetensors", "config.json",
                                                                      "generation_config.json"};

// Writes config.json, generation_config.json (Qwen2.5-Instruct's or Qwen3's) and model.safetensors
// into `dir` (created if needed). Tokenizer files are the caller's business.
void write_random_checkpoint(const ModelConfig& config, const std::string& dir, const RandomCheckpointOptions& options);

}  // namespace glass
