// One generation step taken apart: given the context a model saw, what it predicted next
// and why. The candidates before and after each logits processor (what `glass run
// --show-top` prints, with every stage's own top list and where the chosen token stood),
// the logit lens over the layers, the attention weights of every head over the context,
// and the experts a mixture-of-experts model chose. The web UI's token inspector and the
// server's POST /inspect read it.
//
// The context runs as a prefill (in chunks) and its last token as a one-row step with
// the trace on, as generation runs a decode step: the traced attention is one row of
// weights per head, not a square over the whole context. An InspectionCache keeps the
// KV of the last context, so that inspecting the next token of the same reply computes
// only the tokens that differ.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "model/decoder_model.h"
#include "model/kv_cache.h"
#include "sampling/sampling_params.h"
#include "trace/expert_routing.h"
#include "trace/logit_lens.h"

namespace glass {

struct InspectOptions {
  int64_t top = 10;  // candidates per stage and tokens per lens layer
  bool lens = true;
  bool attention = true;
  bool experts = true;          // only for models with sparse layers
  int64_t prefill_chunk = 512;  // context tokens per forward pass
  KVType kv_type = KVType::F32;
  // Ids from here on (the embedding's padding rows past the tokenizer) are never drawn:
  // the processors remove them, as in generation.
  size_t tokenizer_vocab = SIZE_MAX;
};

struct CandidateStage {
  std::string name;     // "logits", then processor_name() of each step
  std::string setting;  // "logits", then describe() of each step ("top_k=20")
  int64_t surviving = 0;  // finite logits after the stage
  int64_t removed = 0;    // of those before it
  std::vector<LensToken> top;
  std::optional<TokenStanding> chosen;  // when a chosen token was given
};

struct AttentionWeights {
  int64_t layers = 0, heads = 0, keys = 0;
  std::vector<float> weights;  // [layers, heads, keys]: the last position's softmax weights
};

struct StepInspection {
  int32_t position = 0;  // of the context's last token: the step predicts position + 1
  int64_t reused = 0;    // context tokens whose KV came from the InspectionCache
  std::string chain;     // ProcessorChain::describe()
  std::vector<CandidateStage> stages;
  std::optional<LogitLens> lens;  // at the last position, watching the chosen token
  std::optional<AttentionWeights> attention;
  std::optional<ExpertRouting> experts;
};

// The KV cache of the last context inspected, with its tokens. It grows to the longest
// context inspected (in steps of 256 tokens) and is kept; one inspection at a time.
class InspectionCache {
 public:
  // Context tokens whose KV the last inspection left (the positions a next one reuses).
  int64_t reusable(std::span<const int32_t> context) const;

 private:
  friend struct InspectionCacheAccess;
  std::unique_ptr<KVCache> kv_;
  int32_t sequence_ = -1;
  std::vector<int32_t> tokens_;  // at positions 0..tokens_.size()-1
};

// `context`: the tokens the model saw (non-empty, ids < the model's vocabulary); the first
// `prompt_tokens` of them are the prompt and the rest were generated (presence and
// frequency penalties count those). `chosen`: the token the step produced, if known.
// glass::Error on bad arguments.
// `cache` (optional) carries the KV from one inspection to the next.
StepInspection inspect_step(const DecoderModel& model, Kernels& kernels, std::span<const int32_t> context,
                            int64_t prompt_tokens, std::optional<int32_t> chosen, const SamplingParams& params,
                            const InspectOptions& options, const TokenText& text = {}, InspectionCache* cache = nullptr);

}  // namespace glass
