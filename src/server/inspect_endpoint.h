// POST /inspect: one generation step taken apart (trace/step_inspection.h), for the web
// UI's token inspector and for scripts. The body:
//   "tokens"         the context, as token ids (required, 1..the context length): the step
//                    predicts the token after the last
//   "prompt_tokens"  how many leading tokens are the prompt (default: all); presence and
//                    frequency penalties count only the tokens after them
//   "token"          the token the step produced, if known: its rank and probability are
//                    reported at every stage and every layer
//   "top"            candidates per stage and tokens per lens layer, 1..100 (default 10)
//   temperature, top_k, top_p, min_p, repetition_penalty, presence_penalty,
//   frequency_penalty: as for chat completions, over the server's defaults (temperature
//                    0: greedy, only the penalties run)
//   "lens", "attention", "experts"  what to compute besides the candidates (default true)
// The answer: {"object": "inspection", "position", "cached_tokens" (context tokens whose
// KV came from the prefix cache: the generation that wrote the reply, or an earlier
// inspection, left them), "context":
// [{"id", "text"}...], "token", "sampling", "stages": [{"name", "setting", "surviving", "removed", "top": [{"id",
// "text", "logit", "prob"}], "token": {"rank", "logit", "prob"}}], "lens": {"layers":
// [{"layer", "top", "token"}]}, "attention": {"layers", "heads", "keys", "weights"
// [layers][heads][keys] (rounded to 1e-5)}, "experts": {"experts", "layers": [{"layer",
// "chosen": [{"expert", "weight"}]}]}}; absent parts are null. docs/webui.md has examples.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sampling/sampling_params.h"
#include "server/openai_server.h"
#include "trace/step_inspection.h"

namespace glass::server {

struct InspectRequest {
  std::vector<int32_t> tokens;
  int64_t prompt_tokens = 0;
  std::optional<int32_t> token;
  SamplingParams sampling;  // the server's defaults with the request's fields
  InspectOptions options;   // top, lens, attention, experts (the rest set by the server)
};

// Throws ApiError 400 naming the field: wrong types, ids outside the vocabulary, a context
// longer than `context_length`, values out of range. A "model" other than the served one is 404.
InspectRequest parse_inspect_request(const std::string& body, const ServedModel& model, int64_t context_length);

// `text`: the token texts (token_text_of the served tokenizer), as the step's candidates have.
nlohmann::ordered_json inspection_json(const StepInspection& step, const InspectRequest& request, const TokenText& text);

}  // namespace glass::server
