#include "sampling/logits_processors.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "base/error.h"

namespace glass {

namespace {

constexpr float kRemoved = -std::numeric_limits<float>::infinity();

std::string format_value(double v) { return str_cat(v); }

struct Candidate {
  float logit;
  int32_t id;
};

// Greater logit first; the order among equal logits is irrelevant to the callers.
bool higher_logit(const Candidate& a, const Candidate& b) { return a.logit > b.logit; }

// The k-th largest value of `row` (1 <= k <= row.size()).
float kth_largest(std::span<const float> row, size_t k) {
  constexpr size_t kSmall = 64;
  if (k <= kSmall) {
    // One pass with the best k kept sorted, descending: after the first few thousand
    // entries almost every value fails the first comparison.
    std::array<float, kSmall> best;
    size_t filled = 0;
    for (float v : row) {
      if (filled == k) {
        if (!(v > best[k - 1])) continue;
        --filled;
      }
      size_t pos = filled++;
      while (pos > 0 && best[pos - 1] < v) {
        best[pos] = best[pos - 1];
        --pos;
      }
      best[pos] = v;
    }
    return best[k - 1];
  }
  std::vector<float> copy(row.begin(), row.end());
  std::nth_element(copy.begin(), copy.begin() + static_cast<std::ptrdiff_t>(k - 1), copy.end(), std::greater<float>());
  return copy[k - 1];
}

void check_id(int32_t id, size_t vocab, const char* what) {
  if (static_cast<size_t>(id) >= vocab) fail(what, ": token id ", id, " is outside the vocabulary of ", vocab, " logits");
}

}  // namespace

bool RowSoftmax::empty() const { return max == kRemoved; }

float RowSoftmax::prob(float logit) const { return std::exp(logit - max) * inv_sum; }

RowSoftmax row_softmax(std::span<const float> logits) {
  RowSoftmax sm;
  sm.max = kRemoved;
  for (float v : logits) sm.max = std::max(sm.max, v);
  if (sm.empty()) return sm;
  double sum = 0;
  for (float v : logits)
    if (v != kRemoved) sum += std::exp(v - sm.max);
  sm.inv_sum = 1.0f / static_cast<float>(sum);
  return sm;
}

// --- penalties -------------------------------------------------------------------------

RepetitionPenalty::RepetitionPenalty(double penalty) : penalty_(penalty) {
  if (!(penalty > 0)) fail("repetition_penalty must be > 0, got ", penalty);
}

void RepetitionPenalty::apply(std::span<float> logits, const TokenHistory& history) const {
  const float p = static_cast<float>(penalty_);
  for (int32_t id : history.distinct_ids()) {
    check_id(id, logits.size(), "repetition_penalty");
    float& x = logits[static_cast<size_t>(id)];
    x = x < 0 ? x * p : x / p;
  }
}

std::string RepetitionPenalty::describe() const { return "repetition_penalty=" + format_value(penalty_); }

PresencePenalty::PresencePenalty(double penalty) : penalty_(penalty) {}

void PresencePenalty::apply(std::span<float> logits, const TokenHistory& history) const {
  const float p = static_cast<float>(penalty_);
  for (auto [id, count] : history.output_counts()) {
    check_id(id, logits.size(), "presence_penalty");
    logits[static_cast<size_t>(id)] -= p;
  }
}

std::string PresencePenalty::describe() const { return "presence_penalty=" + format_value(penalty_); }

FrequencyPenalty::FrequencyPenalty(double penalty) : penalty_(penalty) {}

void FrequencyPenalty::apply(std::span<float> logits, const TokenHistory& history) const {
  for (auto [id, count] : history.output_counts()) {
    check_id(id, logits.size(), "frequency_penalty");
    logits[static_cast<size_t>(id)] -= static_cast<float>(penalty_ * count);
  }
}

std::string FrequencyPenalty::describe() const { return "frequency_penalty=" + format_value(penalty_); }

// --- warpers ---------------------------------------------------------------------------

Temperature::Temperature(double temperature) : temperature_(temperature) {
  if (!(temperature > 0)) fail("temperature must be > 0 for the temperature step (0 means greedy), got ", temperature);
}

void Temperature::apply(std::span<float> logits, const TokenHistory&) const {
  const float t = static_cast<float>(temperature_);
  for (float& x : logits) x /= t;
}

std::string Temperature::describe() const { return "temperature=" + format_value(temperature_); }

TopK::TopK(int64_t k) : k_(k) {
  if (k < 0) fail("top_k must be >= 0, got ", k);
}

void TopK::apply(std::span<float> logits, const TokenHistory&) const {
  if (k_ == 0 || static_cast<size_t>(k_) >= logits.size()) return;
  const float threshold = kth_largest(logits, static_cast<size_t>(k_));
  for (float& x : logits)
    if (x < threshold) x = kRemoved;
}

std::string TopK::describe() const { return "top_k=" + format_value(static_cast<double>(k_)); }

TopP::TopP(double top_p) : top_p_(top_p) {
  if (!(top_p > 0 && top_p <= 1)) fail("top_p must be in (0, 1], got ", top_p);
}

void TopP::apply(std::span<float> logits, const TokenHistory&) const {
  if (top_p_ >= 1) return;
  // transformers compares float32 cumulative sums with (1 - top_p) in float32.
  const float threshold = static_cast<float>(1.0 - top_p_);
  const RowSoftmax sm = row_softmax(logits);
  if (sm.empty()) return;

  std::vector<Candidate> cands;
  double total = 0;  // the last cumulative sum: the whole mass
  for (size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] == kRemoved) continue;
    cands.push_back({logits[i], static_cast<int32_t>(i)});
    total += sm.prob(logits[i]);
  }

  // Walk ranks from the most probable down, ordering candidates a chunk at a time. The
  // cumulative sum (ascending) at rank r is the mass of ranks >= r: total - above.
  size_t ordered = 0;
  size_t chunk = 64;
  double above = 0;
  size_t cut = cands.size();  // first removed rank
  for (size_t r = 0; r < cands.size(); ++r) {
    if (r == ordered) {
      const size_t end = std::min(cands.size(), ordered + chunk);
      auto first = cands.begin() + static_cast<std::ptrdiff_t>(ordered);
      auto last = cands.begin() + static_cast<std::ptrdiff_t>(end);
      std::nth_element(first, last - 1, cands.end(), higher_logit);
      std::sort(first, last, higher_logit);
      ordered = end;
      chunk *= 8;
    }
    if (r > 0 && static_cast<float>(total - above) <= threshold) {
      cut = r;
      break;
    }
    above += sm.prob(cands[r].logit);
  }
  if (cut == cands.size()) return;
  if (cands[cut].logit == cands[cut - 1].logit) {
    // Equal logits on both sides of the cut: which of them survive depends on torch's
    // tie order, so take the exact path.
    top_p_by_full_sort(logits, top_p_);
    return;
  }
  for (size_t r = cut; r < cands.size(); ++r) logits[static_cast<size_t>(cands[r].id)] = kRemoved;
}

std::string TopP::describe() const { return "top_p=" + format_value(top_p_); }

void top_p_by_full_sort(std::span<float> logits, double top_p) {
  if (top_p >= 1) return;
  const float threshold = static_cast<float>(1.0 - top_p);
  const RowSoftmax sm = row_softmax(logits);
  if (sm.empty()) return;
  std::vector<std::pair<float, int32_t>> sorted(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) sorted[i] = {logits[i], static_cast<int32_t>(i)};
  // torch.sort(descending=False) on CPU: std::sort of (value, index) pairs comparing
  // values only, NaN last. Same algorithm (libstdc++ introsort), same input order, so
  // the same permutation of equal values.
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return (!std::isnan(a.first) && std::isnan(b.first)) || a.first < b.first;
  });
  double cumulative = 0;
  for (size_t i = 0; i + 1 < sorted.size(); ++i) {  // the last (most probable) always stays
    cumulative += sm.prob(sorted[i].first);
    if (static_cast<float>(cumulative) > threshold) break;  // non-decreasing from here on
    logits[static_cast<size_t>(sorted[i].second)] = kRemoved;
  }
}

MinP::MinP(double min_p) : min_p_(min_p) {
  if (!(min_p >= 0 && min_p <= 1)) fail("min_p must be in [0, 1], got ", min_p);
}

void MinP::apply(std::span<float> logits, const TokenHistory&) const {
  if (min_p_ == 0) return;
  const RowSoftmax sm = row_softmax(logits);
  if (sm.empty()) return;
  // float32, as transformers: min_p * max(probs), then probs < that.
  const float floor = static_cast<float>(min_p_) * sm.prob(sm.max);
  for (float& x : logits)
    if (x != kRemoved && sm.prob(x) < floor) x = kRemoved;
}

std::string MinP::describe() const { return "min_p=" + format_value(min_p_); }

}  // namespace glass
