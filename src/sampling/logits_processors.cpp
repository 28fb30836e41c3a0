#include "sampling/logits_processors.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "base/error.h"
#include "sampling/row_scan.h"

namespace glass {

namespace {

using detail::kRemoved;

std::string format_value(double v) { return str_cat(v); }

void check_id(int32_t id, size_t vocab, const char* what) {
  if (static_cast<size_t>(id) >= vocab) fail(what, ": token id ", id, " is outside the vocabulary of ", vocab, " logits");
}

// The k-th largest value of `row` (1 <= k <= row.size()).
float kth_largest(std::span<const float> row, size_t k) {
  constexpr size_t kSmall = 64;
  if (k <= kSmall) {
    // One pass with the best k kept sorted, descending; once it is full, whole blocks
    // with nothing above the k-th best are skipped.
    std::array<float, kSmall> best;
    size_t filled = 0;
    auto offer = [&](float v) {
      if (filled == k) {
        if (!(v > best[k - 1])) return;
        --filled;
      }
      size_t pos = filled++;
      while (pos > 0 && best[pos - 1] < v) {
        best[pos] = best[pos - 1];
        --pos;
      }
      best[pos] = v;
    };
    size_t i = 0;
    for (; i < row.size() && filled < k; ++i) offer(row[i]);
    for (; i + detail::kScanBlock <= row.size(); i += detail::kScanBlock)
      if (detail::block_has_greater(&row[i], best[k - 1]))
        for (size_t j = i; j < i + detail::kScanBlock; ++j) offer(row[j]);
    for (; i < row.size(); ++i) offer(row[i]);
    return best[k - 1];
  }
  std::vector<float> copy(row.begin(), row.end());
  std::nth_element(copy.begin(), copy.begin() + static_cast<std::ptrdiff_t>(k - 1), copy.end(), std::greater<float>());
  return copy[k - 1];
}

// Where top-p cuts, as the lowest surviving logit. The ascending cumulative sum at rank r
// (0 = most probable) is total - (mass of the r most probable); tokens go from the first
// rank r >= 1 where it is <= threshold in float32. It only falls as r grows, so the rank
// is found without sorting the row or storing it: one pass puts each token in a bucket by
// its distance below the max logit (a monotone map, so equal logits share a bucket and a
// higher bucket never holds a smaller logit) and sums each bucket's mass; walking the
// buckets from the top finds the one holding the cut; only that bucket is sorted and
// walked. Probabilities are row_softmax's, recomputed rather than stored.
struct Cut {
  bool found = false;  // false: nothing goes
  float lowest_kept = 0;
  bool straddle = false;  // ranks r - 1 and r have equal logits
};

Cut find_top_p_cut(std::span<const float> logits, const RowSoftmax& sm, float threshold) {
  constexpr int kBuckets = 2048;
  constexpr float kPerLogit = 32;  // bucket width 1/32; the last bucket holds everything below
  auto bucket_of = [&](float logit) {
    const float d = (sm.max - logit) * kPerLogit;
    return d < kBuckets - 1 ? static_cast<int>(d) : kBuckets - 1;
  };
  std::array<double, kBuckets> mass{};
  std::array<uint32_t, kBuckets> count{};
  double total = 0;  // transformers' last cumulative sum
  size_t n = 0;
  detail::for_each_finite(logits, [&](size_t j) {
    const float p = sm.prob(logits[j]);
    const int b = bucket_of(logits[j]);
    mass[b] += p;
    ++count[b];
    total += p;
    ++n;
  });
  auto reached = [&](double above) { return static_cast<float>(total - above) <= threshold; };
  // Bucket sums add in another order than the walk below (differences ~1e-16 per unit of
  // mass), so a bucket is walked whenever the cut may lie in it, and the walk's own sum
  // decides; if it does not reach the cut the search goes on below.
  constexpr double kSlack = 1e-9;
  size_t start = 0;  // tokens in the buckets above
  double above = 0;
  std::vector<float> members;
  for (int bucket = 0; bucket < kBuckets; ++bucket) {
    if (count[bucket] == 0) continue;
    if (!reached(above + mass[bucket] + kSlack)) {
      above += mass[bucket];
      start += count[bucket];
      continue;
    }
    members.clear();
    detail::for_each_finite(logits, [&](size_t j) {
      if (bucket_of(logits[j]) == bucket) members.push_back(logits[j]);
    });
    std::sort(members.begin(), members.end(), std::greater<float>());
    for (size_t j = 0; j < members.size(); ++j) {
      above += sm.prob(members[j]);
      const size_t rank = start + j + 1;  // the first rank that would go
      if (rank >= n) return {};
      if (reached(above)) {
        // The next rank is the next member, or the first token of a lower bucket, whose
        // logit is smaller.
        const bool straddle = j + 1 < members.size() && members[j + 1] == members[j];
        return {true, members[j], straddle};
      }
    }
    start += count[bucket];
  }
  return {};  // every rank stays
}

}  // namespace

bool RowSoftmax::empty() const { return max == kRemoved; }

float RowSoftmax::prob(float logit) const { return std::exp(logit - max) * inv_sum; }

RowSoftmax row_softmax(std::span<const float> logits) {
  RowSoftmax sm;
  sm.max = detail::row_max(logits);
  if (sm.empty()) return sm;
  double sum = 0;
  detail::for_each_finite(logits, [&](size_t j) { sum += std::exp(logits[j] - sm.max); });
  sm.inv_sum = 1.0f / static_cast<float>(sum);
  return sm;
}

// --- logit bias ------------------------------------------------------------------------

LogitBias::LogitBias(std::vector<TokenBias> biases) : biases_(std::move(biases)) {
  validate_logit_bias(biases_, "logit_bias");
}

void LogitBias::apply(std::span<float> logits, const TokenHistory&) const {
  for (const TokenBias& b : biases_) {
    check_id(b.id, logits.size(), "logit_bias");
    logits[static_cast<size_t>(b.id)] += b.bias;
  }
}

std::string LogitBias::describe() const {
  constexpr size_t kListed = 4;
  std::string out = "logit_bias={";
  for (size_t i = 0; i < biases_.size() && i < kListed; ++i)
    out += str_cat(i > 0 ? ", " : "", biases_[i].id, ":", biases_[i].bias >= 0 ? "+" : "", format_value(biases_[i].bias));
  if (biases_.size() > kListed) out += str_cat(", ... ", biases_.size(), " tokens");
  return out + "}";
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
  // A true division, as torch does (a reciprocal multiply would round differently).
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
  for (float& x : logits) x = x < threshold ? kRemoved : x;  // branch-free, vectorizes
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
  const Cut cut = find_top_p_cut(logits, sm, threshold);
  if (!cut.found) return;
  if (cut.straddle) {
    // Equal logits on both sides of the cut: which of them survive depends on torch's
    // tie order, so take the exact path.
    top_p_by_full_sort(logits, top_p_);
    return;
  }
  for (float& x : logits) x = x < cut.lowest_kept ? kRemoved : x;
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
  detail::for_each_finite(logits, [&](size_t j) {
    if (sm.prob(logits[j]) < floor) logits[j] = kRemoved;
  });
}

std::string MinP::describe() const { return "min_p=" + format_value(min_p_); }

}  // namespace glass
