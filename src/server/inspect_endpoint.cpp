#include "server/inspect_endpoint.h"

#include <cmath>

#include "server/api_error.h"
#include "server/completion_request.h"
#include "server/request_fields.h"
#include "server/tokenize_endpoints.h"

namespace glass::server {

namespace {

using OJson = nlohmann::ordered_json;

constexpr int64_t kMaxTop = 100;

OJson token_json(int32_t id, const TokenText& text) { return {{"id", id}, {"text", text(id)}}; }

OJson candidates_json(const std::vector<LensToken>& top) {
  OJson out = OJson::array();
  for (const LensToken& t : top) out.push_back({{"id", t.id}, {"text", t.text}, {"logit", t.logit}, {"prob", t.prob}});
  return out;
}

// Where the chosen token stood; a stage that removed it gives no rank.
OJson standing_json(const std::optional<TokenStanding>& s) {
  if (!s) return nullptr;
  if (s->removed) return {{"rank", nullptr}, {"logit", nullptr}, {"prob", 0.0}};
  return {{"rank", s->rank}, {"logit", s->logit}, {"prob", s->prob}};
}

}  // namespace

InspectRequest parse_inspect_request(const std::string& text, const ServedModel& model, int64_t context_length) {
  const OJson body = parse_request_object(text);
  check_model(body, model);
  InspectRequest r;
  r.tokens = token_ids_field(body, "tokens", *model.tokenizer);
  if (r.tokens.empty())
    throw invalid_parameter("tokens", "'tokens' is empty: the context needs at least one token");
  const auto n = static_cast<int64_t>(r.tokens.size());
  if (n > context_length)
    throw invalid_parameter("tokens", str_cat("'tokens' has ", n, " tokens, more than this server's context of ",
                                              context_length));
  r.prompt_tokens = int_field(body, "prompt_tokens", 0, n).value_or(n);
  if (const OJson* token = field(body, "token")) r.token = token_id_value(*token, "token", *model.tokenizer);
  r.options.top = int_field(body, "top", 1, kMaxTop).value_or(10);
  r.options.lens = bool_field(body, "lens").value_or(true);
  r.options.attention = bool_field(body, "attention").value_or(true);
  r.options.experts = bool_field(body, "experts").value_or(true);
  SamplingOverrides overrides;
  read_processor_fields(body, overrides);
  r.sampling = resolve_overrides(model.defaults, overrides);
  check_logit_bias_vocab(r.sampling, static_cast<int64_t>(model.tokenizer->vocab_size()));
  return r;
}

OJson inspection_json(const StepInspection& step, const InspectRequest& request, const TokenText& text) {
  OJson context = OJson::array();
  for (int32_t id : request.tokens) context.push_back(token_json(id, text));
  OJson stages = OJson::array();
  for (const CandidateStage& s : step.stages)
    stages.push_back({{"name", s.name},
                      {"setting", s.setting},
                      {"surviving", s.surviving},
                      {"removed", s.removed},
                      {"top", candidates_json(s.top)},
                      {"token", standing_json(s.chosen)}});

  OJson lens = nullptr;
  if (step.lens) {
    OJson layers = OJson::array();
    for (const LensLayer& l : step.lens->layers)
      layers.push_back({{"layer", l.layer},
                        {"top", candidates_json(l.top.at(0))},
                        {"token", l.watched.empty() ? OJson(nullptr) : standing_json(l.watched.at(0))}});
    lens = {{"layers", std::move(layers)}};
  }

  OJson attention = nullptr;
  if (step.attention) {
    const AttentionWeights& a = *step.attention;
    OJson layers = OJson::array();
    for (int64_t l = 0; l < a.layers; ++l) {
      OJson heads = OJson::array();
      for (int64_t h = 0; h < a.heads; ++h) {
        OJson row = OJson::array();
        const float* w = a.weights.data() + (l * a.heads + h) * a.keys;
        // Five decimals: a long context's weights in a few megabytes, not tens.
        for (int64_t k = 0; k < a.keys; ++k) row.push_back(std::round(static_cast<double>(w[k]) * 1e5) / 1e5);
        heads.push_back(std::move(row));
      }
      layers.push_back(std::move(heads));
    }
    attention = {{"layers", a.layers}, {"heads", a.heads}, {"keys", a.keys}, {"weights", std::move(layers)}};
  }

  OJson experts = nullptr;
  if (step.experts) {
    OJson layers = OJson::array();
    for (const ExpertRoutingLayer& l : step.experts->layers) {
      OJson chosen = OJson::array();
      if (!l.chosen.empty())
        for (const ExpertChoice& e : l.chosen.front()) chosen.push_back({{"expert", e.expert}, {"weight", e.weight}});
      layers.push_back({{"layer", l.layer}, {"chosen", std::move(chosen)}});
    }
    experts = {{"experts", step.experts->experts}, {"layers", std::move(layers)}};
  }

  return {{"object", "inspection"},
          {"position", step.position},
          {"cached_tokens", step.reused},
          {"context", std::move(context)},
          {"token", request.token ? token_json(*request.token, text) : OJson(nullptr)},
          {"sampling", step.chain},
          {"stages", std::move(stages)},
          {"lens", std::move(lens)},
          {"attention", std::move(attention)},
          {"experts", std::move(experts)}};
}

}  // namespace glass::server
