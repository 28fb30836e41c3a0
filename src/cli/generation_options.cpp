#include "cli/generation_options.h"

#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <iostream>

#include "base/error.h"
#include "base/json_fields.h"
#include "cli/help_groups.h"
#include "io/checkpoint.h"
#include "runtime/chat_prompt.h"
#include "runtime/model_files.h"

namespace glass::cli {

namespace {

// ANSI SGR: faint on, and back to normal intensity.
constexpr const char* kFaint = "\x1b[2m";
constexpr const char* kNormal = "\x1b[22m";

template <class T>
void add_override(CLI::App* sub, const std::string& name, std::optional<T>& target, const std::string& help) {
  sub->add_option_function<T>(name, [&target](const T& v) { target = v; }, help);
}

}  // namespace

TokenBias parse_logit_bias_flag(std::string_view text) {
  const size_t sign = text.find_first_of("+-");
  int32_t id = -1;
  double bias = 0;
  bool ok = sign != std::string_view::npos && sign > 0 && sign + 1 < text.size();
  if (ok) {
    const auto [id_end, id_ec] = std::from_chars(text.data(), text.data() + sign, id);
    ok = id_ec == std::errc() && id_end == text.data() + sign && id >= 0;
  }
  if (ok) {
    // from_chars reads the sign's '-' but not a '+'.
    const char* first = text.data() + sign + (text[sign] == '+' ? 1 : 0);
    const auto [end, ec] = std::from_chars(first, text.data() + text.size(), bias);
    ok = ec == std::errc() && end == text.data() + text.size() && (text[sign] == '-' || text[sign + 1] != '-');
  }
  if (!ok)
    fail("--logit-bias: expected a token id and a signed bias, e.g. 15043+1 or 15043-100, got \"", text_excerpt(text),
         "\"");
  if (!(bias >= -kMaxLogitBias && bias <= kMaxLogitBias))
    fail("--logit-bias: the bias of token ", id, " must be between -", kMaxLogitBias, " and ", kMaxLogitBias, ", got ",
         bias);
  return {id, static_cast<float>(bias)};
}

void GenerationOptions::add_to(CLI::App* sub) {
  const size_t first = sub->get_options().size();
  add_override(sub, "-n,--max-new-tokens,--n-predict", overrides.max_new_tokens,
               "Most tokens to generate (llama.cpp: -n, --n-predict; default: generation_config.json's max_new_tokens; else run: 20, as "
               "transformers; chat and serve: until the reply or the context ends)");
  add_override(sub, "--temperature,--temp", overrides.temperature,
               "Softmax temperature; > 0 also turns sampling on, 0 means greedy (llama.cpp: --temp)");
  add_override(sub, "--top-k", overrides.top_k, "Keep the k most likely tokens (ties kept; 0: off)");
  add_override(sub, "--top-p", overrides.top_p, "Nucleus: keep the smallest set with probability >= p (1: off)");
  add_override(sub, "--min-p", overrides.min_p, "Drop tokens below min_p times the top probability (0: off)");
  add_override(sub, "--repetition-penalty,--repeat-penalty", overrides.repetition_penalty,
               "Penalize ids seen in prompt and output (1: off; llama.cpp's --repeat-penalty, over every id seen rather "
               "than the last 64)");
  add_override(sub, "--presence-penalty", overrides.presence_penalty, "OpenAI presence penalty over the output (0: off)");
  add_override(sub, "--frequency-penalty", overrides.frequency_penalty, "OpenAI frequency penalty over the output (0: off)");
  sub->add_option("-s,--seed", seed, "Seed of the sampler; -1: random, as by default (the seed used is reported)");
  sub->add_option_function<std::vector<std::string>>(
      "--stop", [this](const std::vector<std::string>& v) { overrides.stop_strings = v; },
      "Stop when the text contains this string (not printed); repeatable");
  sub->add_option("--logit-bias", logit_bias,
                  "Add BIAS to token ID's logit before the other processors, as OpenAI's logit_bias: ID+BIAS or ID-BIAS, "
                  "BIAS up to 100 (-100 bans the token; llama.cpp's syntax); repeatable")
      ->type_name("ID(+|-)BIAS");
  sub->add_flag("--greedy", greedy,
                "Plain greedy decoding: the argmax of the model's logits (the checkpoint's sampling settings and "
                "penalties are dropped; penalty flags given here still apply)");
  sub->add_flag("--sample", sample, "Sample even if the checkpoint's generation_config.json says do_sample false");
  sub->add_flag("--ignore-eos", ignore_eos, "Keep generating past eos tokens");
  sub->add_option("--chain-order", chain_order, "Order of the logits processors: transformers (default) or llama.cpp");
  put_added_since(sub, first, "Sampling");
}

SamplingParams GenerationOptions::resolve(const std::string& model_path, int64_t vocab) const {
  if (greedy && sample) fail("--greedy and --sample contradict each other");
  // Each flag on its own, so the error names it.
  auto only = [](auto member, const auto& value) {
    SamplingOverrides single;
    single.*member = value;
    return single;
  };
  const std::pair<const char*, SamplingOverrides> singles[] = {
      {"--temperature", only(&SamplingOverrides::temperature, overrides.temperature)},
      {"--top-k", only(&SamplingOverrides::top_k, overrides.top_k)},
      {"--top-p", only(&SamplingOverrides::top_p, overrides.top_p)},
      {"--min-p", only(&SamplingOverrides::min_p, overrides.min_p)},
      {"--repetition-penalty", only(&SamplingOverrides::repetition_penalty, overrides.repetition_penalty)},
      {"--presence-penalty", only(&SamplingOverrides::presence_penalty, overrides.presence_penalty)},
      {"--frequency-penalty", only(&SamplingOverrides::frequency_penalty, overrides.frequency_penalty)},
      {"--max-new-tokens", only(&SamplingOverrides::max_new_tokens, overrides.max_new_tokens)},
      {"--stop", only(&SamplingOverrides::stop_strings, overrides.stop_strings)},
  };
  for (const auto& [flag, single] : singles) apply_overrides(SamplingParams{}, single).validate(flag);

  SamplingOverrides o = overrides;
  if (!seed.empty() && seed != "-1") {
    uint64_t value = 0;
    const auto [end, ec] = std::from_chars(seed.data(), seed.data() + seed.size(), value);
    if (ec != std::errc() || end != seed.data() + seed.size())
      fail("--seed: must be -1 (random) or an integer from 0 to 18446744073709551615, got \"", seed, "\"");
    o.seed = value;
  }

  GenerationDefaults defaults = load_generation_defaults(model_path);
  if (!defaults.note.empty()) std::cerr << "glass: " << defaults.note << "\n";
  SamplingParams params = std::move(defaults.params);
  if (!chain_order.empty()) o.chain_order = parse_chain_order(chain_order, "--chain-order");
  if (o.temperature) o.do_sample = *o.temperature > 0;
  if (sample) o.do_sample = true;
  if (greedy) {
    o.do_sample = false;
    if (!o.repetition_penalty) o.repetition_penalty = 1.0;
    if (!o.presence_penalty) o.presence_penalty = 0.0;
    if (!o.frequency_penalty) o.frequency_penalty = 0.0;
  }
  if (ignore_eos) o.eos_token_ids = std::vector<int32_t>{};
  if (!logit_bias.empty()) {
    std::vector<TokenBias> biases;
    for (const std::string& text : logit_bias) biases.push_back(parse_logit_bias_flag(text));
    o.logit_bias = sorted_logit_bias(std::move(biases), "--logit-bias");
    check_logit_bias_ids(*o.logit_bias, vocab, "--logit-bias");
  }
  params = apply_overrides(params, o);
  params.validate(defaults.source + " with the command-line flags");
  return params;
}

std::vector<CLI::Option*> ChatTemplateOptions::add_to(CLI::App* sub, bool with_no_think) {
  std::vector<CLI::Option*> flags;
  flags.push_back(sub->add_option("--chat-template-kwargs", kwargs_json,
                                  "Extra chat template variables as a JSON object, e.g. '{\"enable_thinking\": false}'"));
  if (with_no_think)
    flags.push_back(sub->add_flag("--no-think", no_think,
                                  "Render the chat template with enable_thinking false (Qwen3 answers without thinking)"));
  return flags;
}

jinja::OrderedJson ChatTemplateOptions::resolve() const {
  jinja::OrderedJson vars = jinja::OrderedJson::object();
  if (!kwargs_json.empty()) {
    vars = parse_ordered_json(kwargs_json, "--chat-template-kwargs");
    check_template_vars(vars, "--chat-template-kwargs");
  }
  if (no_think) {
    if (auto it = vars.find("enable_thinking"); it != vars.end() && *it != false)
      fail("--no-think contradicts --chat-template-kwargs, which sets enable_thinking to ", json_excerpt(*it));
    vars["enable_thinking"] = false;
  }
  return vars;
}

void ChatTemplateOptions::warn_if_ignored(const ChatTemplate& chat_template, const jinja::OrderedJson& vars) const {
  if (!no_think) return;
  jinja::OrderedJson without = vars;
  without.erase("enable_thinking");
  const jinja::OrderedJson messages = single_turn("Hi");
  try {
    if (chat_template.render(messages, nullptr, true, vars) == chat_template.render(messages, nullptr, true, without))
      std::fprintf(stderr, "glass: --no-think changes nothing: the chat template (%s) does not read enable_thinking\n",
                   chat_template.origin().c_str());
  } catch (const Error&) {
    // A template that refuses this sample conversation says why when it renders the real one.
  }
}

ReplyPrinter::ReplyPrinter(bool show_thinking)
    : show_thinking_(show_thinking),
      dim_stdout_(::isatty(STDOUT_FILENO) != 0),
      note_on_stderr_(::isatty(STDERR_FILENO) != 0) {}

void ReplyPrinter::print(const ReasoningPieces& pieces, const ReasoningSplitter* splitter) {
  if (show_thinking_ && !pieces.reasoning.empty()) {
    if (dim_stdout_) std::cout << kFaint << pieces.reasoning << kNormal;
    else std::cout << pieces.reasoning;
    shown_reasoning_ = true;
  }
  if (!pieces.content.empty()) {
    if (!shown_content_) {
      if (shown_reasoning_) std::cout << "\n\n";
      if (splitter != nullptr) note(*splitter);
      shown_content_ = true;
    }
    std::cout << pieces.content;
  }
  std::cout.flush();
}

void ReplyPrinter::end(const ReasoningSplitter* splitter) {
  if (splitter != nullptr) note(*splitter);
}

void ReplyPrinter::note(const ReasoningSplitter& splitter) {
  if (noted_ || show_thinking_ || !note_on_stderr_ || !splitter.found_reasoning()) return;
  noted_ = true;
  std::cout.flush();
  std::fprintf(stderr, "%s(thought for %lld tokens; --show-thinking shows it)%s\n", kFaint,
               static_cast<long long>(splitter.reasoning_tokens()), kNormal);
}

}  // namespace glass::cli
