#include "cli/generation_options.h"

#include "base/error.h"
#include "base/json_fields.h"
#include "io/checkpoint.h"

namespace glass::cli {

namespace {

template <class T>
void add_override(CLI::App* sub, const std::string& name, std::optional<T>& target, const std::string& help) {
  sub->add_option_function<T>(name, [&target](const T& v) { target = v; }, help);
}

}  // namespace

void GenerationOptions::add_to(CLI::App* sub) {
  add_override(sub, "-n,--max-new-tokens", overrides.max_new_tokens, "Most tokens to generate (default: until eos or the context ends)");
  add_override(sub, "--temperature", overrides.temperature, "Softmax temperature; > 0 also turns sampling on, 0 means greedy");
  add_override(sub, "--top-k", overrides.top_k, "Keep the k most likely tokens (ties kept; 0: off)");
  add_override(sub, "--top-p", overrides.top_p, "Nucleus: keep the smallest set with probability >= p (1: off)");
  add_override(sub, "--min-p", overrides.min_p, "Drop tokens below min_p times the top probability (0: off)");
  add_override(sub, "--repetition-penalty", overrides.repetition_penalty, "Penalize ids seen in prompt and output (1: off)");
  add_override(sub, "--presence-penalty", overrides.presence_penalty, "OpenAI presence penalty over the output (0: off)");
  add_override(sub, "--frequency-penalty", overrides.frequency_penalty, "OpenAI frequency penalty over the output (0: off)");
  add_override(sub, "--seed", overrides.seed, "Seed of the sampler (default: random, reported)");
  sub->add_option_function<std::vector<std::string>>(
      "--stop", [this](const std::vector<std::string>& v) { overrides.stop_strings = v; },
      "Stop when the text contains this string (not printed); repeatable");
  sub->add_flag("--greedy", greedy,
                "Plain greedy decoding: the argmax of the model's logits (the checkpoint's sampling settings and "
                "penalties are dropped; penalty flags given here still apply)");
  sub->add_flag("--sample", sample, "Sample even if the checkpoint's generation_config.json says do_sample false");
  sub->add_flag("--ignore-eos", ignore_eos, "Keep generating past eos tokens");
  sub->add_option("--chain-order", chain_order, "Order of the logits processors: transformers (default) or llama.cpp");
}

SamplingParams GenerationOptions::resolve(const std::string& model_dir) const {
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

  const std::string gen_path = model_dir + "/generation_config.json";
  SamplingParams params = load_generation_config(gen_path);
  if (params.eos_token_ids.empty()) {
    const std::string config_path = model_dir + "/config.json";
    const Json config = read_json_file(config_path);
    if (auto eos = config.find("eos_token_id"); eos != config.end()) {
      if (eos->is_number_integer()) params.eos_token_ids.push_back(eos->get<int32_t>());
      else if (eos->is_array())
        for (const Json& id : *eos)
          if (id.is_number_integer()) params.eos_token_ids.push_back(id.get<int32_t>());
    }
  }
  SamplingOverrides o = overrides;
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
  params = apply_overrides(params, o);
  params.validate(gen_path + " with the command-line flags");
  return params;
}

}  // namespace glass::cli
