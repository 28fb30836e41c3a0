#include "sampling/processor_chain.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/id_mask.h"

namespace glass {

std::string_view processor_name(const LogitsProcessor& step) {
  struct Name {
    std::string_view operator()(const LogitBias&) const { return "logit_bias"; }
    std::string_view operator()(const RepetitionPenalty&) const { return "repetition_penalty"; }
    std::string_view operator()(const PresencePenalty&) const { return "presence_penalty"; }
    std::string_view operator()(const FrequencyPenalty&) const { return "frequency_penalty"; }
    std::string_view operator()(const Temperature&) const { return "temperature"; }
    std::string_view operator()(const TopK&) const { return "top_k"; }
    std::string_view operator()(const TopP&) const { return "top_p"; }
    std::string_view operator()(const MinP&) const { return "min_p"; }
  };
  return std::visit(Name{}, step);
}

std::string describe(const LogitsProcessor& step) {
  return std::visit([](const auto& p) { return p.describe(); }, step);
}

std::vector<TokenCandidate> top_candidates(std::span<const float> logits, size_t n) {
  std::vector<TokenCandidate> out;
  const RowSoftmax sm = row_softmax(logits);
  if (sm.empty() || n == 0) return out;
  std::vector<int32_t> ids;
  for (size_t i = 0; i < logits.size(); ++i)
    if (std::isfinite(logits[i])) ids.push_back(static_cast<int32_t>(i));
  auto better = [&](int32_t a, int32_t b) {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  };
  const size_t k = std::min(n, ids.size());
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(), better);
  for (size_t i = 0; i < k; ++i) out.push_back({ids[i], logits[ids[i]], sm.prob(logits[ids[i]])});
  return out;
}

ProcessorChain ProcessorChain::from_params(const SamplingParams& p) {
  std::vector<LogitsProcessor> steps;
  if (!p.logit_bias.empty()) steps.emplace_back(LogitBias(p.logit_bias));
  if (p.repetition_penalty != 1.0) steps.emplace_back(RepetitionPenalty(p.repetition_penalty));
  if (p.presence_penalty != 0.0) steps.emplace_back(PresencePenalty(p.presence_penalty));
  if (p.frequency_penalty != 0.0) steps.emplace_back(FrequencyPenalty(p.frequency_penalty));
  if (p.sampling()) {
    const bool temperature = p.temperature != 1.0;
    if (temperature && p.chain_order == ChainOrder::transformers) steps.emplace_back(Temperature(p.temperature));
    if (p.top_k != 0) steps.emplace_back(TopK(p.top_k));
    if (p.top_p < 1.0) steps.emplace_back(TopP(p.top_p));
    if (p.min_p != 0.0) steps.emplace_back(MinP(p.min_p));
    if (temperature && p.chain_order == ChainOrder::llama_cpp) steps.emplace_back(Temperature(p.temperature));
  }
  return ProcessorChain(std::move(steps));
}

void ProcessorChain::apply(std::span<float> logits, const TokenHistory& history, ChainTrace* trace,
                           size_t tokens, const AllowedTokens* allowed) const {
  if (trace != nullptr) {
    trace->vocab = static_cast<int64_t>(logits.size());
    trace->top_before = top_candidates(logits, trace->top_n);
    trace->steps.clear();
  }
  for (size_t i = tokens; i < logits.size(); ++i) logits[i] = -std::numeric_limits<float>::infinity();
  if (allowed != nullptr) {
    remove_disallowed_ids(allowed->words, allowed->size, logits);
    if (trace != nullptr) {
      const auto surviving = std::count_if(logits.begin(), logits.end(), [](float x) { return std::isfinite(x); });
      trace->steps.push_back({std::string(allowed->name), static_cast<int64_t>(surviving)});
    }
  }
  for (const LogitsProcessor& step : steps_) {
    std::visit([&](const auto& p) { p.apply(logits, history); }, step);
    if (trace != nullptr) {
      const auto surviving = std::count_if(logits.begin(), logits.end(), [](float x) { return std::isfinite(x); });
      trace->steps.push_back({glass::describe(step), static_cast<int64_t>(surviving)});
    }
  }
  if (trace != nullptr) trace->top_after = top_candidates(logits, trace->top_n);
}

std::string ProcessorChain::describe() const {
  if (steps_.empty()) return "(none)";
  std::string out;
  for (const LogitsProcessor& step : steps_) {
    if (!out.empty()) out += " -> ";
    out += glass::describe(step);
  }
  return out;
}

}  // namespace glass
