// The OpenAI request body, as the server handles it before anything runs: parsed and
// validated for each endpoint (parse_completion_request, and parse_responses_request for
// /v1/responses, with one stored response "resp_1" to continue and refer to), the
// sampling parameters resolved over the checkpoint's defaults, and the prompt made: the
// messages rendered by the Qwen2.5 chat template with the request's chat_template_kwargs
// and tokenized, or the prompt text tokenized. The same body is also read as a POST
// /inspect request (parse_inspect_request) against the same tokenizer. A logit_bias that
// passes is applied to a row of the tokenizer's size.
#include <algorithm>
#include <vector>

#include "fuzz_support.h"
#include "runtime/chat_prompt.h"
#include "sampling/logits_processors.h"
#include "server/completion_request.h"
#include "server/inspect_endpoint.h"
#include "server/responses_request.h"

// The fixed inputs load before fuzzing starts, outside the per-input timeout.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)glass::fuzz::qwen_tokenizer();
  (void)glass::fuzz::qwen_chat_template();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace glass;
  using namespace glass::server;
  const Tokenizer& tokenizer = fuzz::qwen_tokenizer();
  const ChatTemplate& chat_template = fuzz::qwen_chat_template();
  static const SamplingParams defaults = [] {
    SamplingParams p;  // Qwen2.5-Instruct's generation_config.json
    p.do_sample = true;
    p.temperature = 0.7;
    p.top_k = 20;
    p.top_p = 0.8;
    p.repetition_penalty = 1.05;
    p.eos_token_ids = {151645, 151643};
    return p;
  }();
  const std::string body(fuzz::as_text(data, size));
  for (Endpoint endpoint : {Endpoint::chat_completions, Endpoint::completions}) {
    fuzz::run_one([&] {
      const CompletionRequest r = parse_completion_request(body, endpoint);
      const SamplingParams params = resolve_sampling(defaults, r);
      check_logit_bias_vocab(params, static_cast<int64_t>(tokenizer.vocab_size()));
      GLASS_FUZZ_CHECK(std::is_sorted(params.logit_bias.begin(), params.logit_bias.end(),
                                       [](const TokenBias& a, const TokenBias& b) { return a.id < b.id; }),
                       "logit_bias in ascending ids");
      // Passed: every id is the tokenizer's, so the processor applies to a row of its size.
      if (!params.logit_bias.empty()) {
        std::vector<float> row(tokenizer.vocab_size(), 0.0f);
        LogitBias(params.logit_bias).apply(row);
      }
      if (endpoint == Endpoint::chat_completions) {
        const jinja::OrderedJson vars = merge_template_vars(jinja::OrderedJson::object(), r.chat_template_kwargs);
        (void)encode_chat(chat_template, tokenizer, r.messages, r.tools, true, vars);
      } else if (r.prompt_text) {
        (void)tokenizer.encode(*r.prompt_text);
      }
    });
  }
  fuzz::run_one([&] {
    const ServedModel served{"qwen", &tokenizer, &chat_template, defaults, {}, std::nullopt};
    const InspectRequest r = parse_inspect_request(body, served, 4096);
    GLASS_FUZZ_CHECK(!r.tokens.empty() && r.tokens.size() <= 4096, "the context fits");
    GLASS_FUZZ_CHECK(r.prompt_tokens >= 0 && r.prompt_tokens <= static_cast<int64_t>(r.tokens.size()), "prompt_tokens");
    for (int32_t id : r.tokens) GLASS_FUZZ_CHECK(tokenizer.has_token(id), std::to_string(id));
  });
  static const nlohmann::ordered_json stored = nlohmann::ordered_json::parse(R"([
      {"type": "message", "id": "msg_0", "role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
      {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"},
      {"type": "function_call_output", "id": "fco_1", "call_id": "call_1", "output": "4 C"},
      {"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "output_text", "text": "Cold."}]}])");
  fuzz::run_one([&] {
    ResponsesLookup lookup;
    lookup.conversation = [](const std::string& id) -> std::optional<nlohmann::ordered_json> {
      if (id == "resp_1") return stored;
      return std::nullopt;
    };
    lookup.item = [](const std::string& id) -> std::optional<nlohmann::ordered_json> {
      for (const auto& item : stored)
        if (item["id"] == id) return item;
      return std::nullopt;
    };
    size_t made = 0;
    const ResponsesRequest r = parse_responses_request(body, lookup, [&](const std::string& type) {
      return type + "_" + std::to_string(made++);
    });
    GLASS_FUZZ_CHECK(r.completion.endpoint == Endpoint::chat_completions, "a Responses request runs as chat");
    for (const auto& item : r.items) GLASS_FUZZ_CHECK(item.contains("id") && item.contains("type"), item.dump());
    (void)resolve_sampling(defaults, r.completion);
    const jinja::OrderedJson vars = merge_template_vars(jinja::OrderedJson::object(), r.completion.chat_template_kwargs);
    (void)encode_chat(chat_template, tokenizer, r.completion.messages, r.completion.tools, true, vars);
  });
  return 0;
}
