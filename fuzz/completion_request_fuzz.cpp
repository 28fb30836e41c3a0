// The OpenAI request body, as the server handles it before anything runs: parsed and
// validated for each endpoint (parse_completion_request), the sampling parameters
// resolved over the checkpoint's defaults, and the prompt made: the messages rendered by
// the Qwen2.5 chat template with the request's chat_template_kwargs and tokenized, or the
// prompt text tokenized.
#include "fuzz_support.h"
#include "runtime/chat_prompt.h"
#include "server/completion_request.h"

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
      (void)resolve_sampling(defaults, r);
      if (endpoint == Endpoint::chat_completions) {
        const jinja::OrderedJson vars = merge_template_vars(jinja::OrderedJson::object(), r.chat_template_kwargs);
        (void)encode_chat(chat_template, tokenizer, r.messages, r.tools, true, vars);
      } else if (r.prompt_text) {
        (void)tokenizer.encode(*r.prompt_text);
      }
    });
  }
  return 0;
}
