// One generation step taken apart: given the context a model saw, what it predicted next
// and why. The candidates before and after each logits processor (what `glass run
// --show-top` prints, with every stage's own top list and where the chosen token stood),
// the logit lens over the layers, the attention weights of every head over the context,
// and the experts a mixture-of-experts model chose. The web UI's token inspector and the
// server's POST /inspect read it.
//
// The context runs as a prefill (in chunks) and its last token as a one-row step with
// the trace on, as generation runs a decode step: the traced attention is one row of
// weights per head, not a square over the whole context. Given a KV cache with prefix
// caching (the server's), the inspection runs in a sequence of its own there: the cached
// blocks of the generation that wrote the reply (or of an earlier inspection) hold most of
// the context already, so only its last partial block is computed again.
#pragma once

#include <cstdint>
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
  KVType kv_type = KVType::F32;  // of a cache made for the inspection without a shared one
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
  int64_t reused = 0;    // context tokens whose KV came from the shared cache's prefixes
  std::string chain;     // ProcessorChain::describe()
  std::vector<CandidateStage> stages;
  std::optional<LogitLens> lens;  // at the last position, watching the chosen token
  std::optional<AttentionWeights> attention;
  std::optional<ExpertRouting> experts;
};

// `context`: the tokens the model saw (non-empty, ids < the model's vocabulary); the first
// `prompt_tokens` of them are the prompt and the rest were generated (presence and
// frequency penalties count those). `chosen`: the token the step produced, if known.
// glass::Error on bad arguments.
// `shared` (optional): a cache to run in, as above, when it has prefix caching and room
// for the context (its promises to running sequences kept); its sequence is published
// and dropped at the end. Otherwise, and without it, a cache of the context's size is
// made for the inspection (of type options.kv_type).
StepInspection inspect_step(const DecoderModel& model, Kernels& kernels, std::span<const int32_t> context,
                            int64_t prompt_tokens, std::optional<int32_t> chosen, const SamplingParams& params,
                            const InspectOptions& options, const TokenText& text = {}, KVCache* shared = nullptr);

}  // namespace glass
