#include "trace/logit_lens.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/error.h"
#include "tokenizer/utf8.h"

namespace glass {

std::vector<LensToken> top_tokens(std::span<const float> logits, int64_t k, const TokenText& text) {
  if (logits.empty()) return {};
  const auto n = static_cast<int64_t>(logits.size());
  k = std::clamp<int64_t>(k, 0, n);
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  // NaN sorts last; among equal logits the lower id comes first.
  auto better = [&](int32_t a, int32_t b) {
    const float la = logits[a], lb = logits[b];
    if (std::isnan(la) != std::isnan(lb)) return std::isnan(lb);
    if (la != lb) return la > lb;
    return a < b;
  };
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), better);
  double max = -INFINITY;
  for (float v : logits)
    if (v > max) max = v;
  double sum = 0;
  if (std::isfinite(max))
    for (float v : logits)
      if (!std::isnan(v)) sum += std::exp(static_cast<double>(v) - max);
  std::vector<LensToken> out;
  for (int64_t i = 0; i < k; ++i) {
    LensToken t;
    t.id = ids[i];
    t.logit = logits[t.id];
    t.prob = sum > 0 && !std::isnan(t.logit) ? std::exp(static_cast<double>(t.logit) - max) / sum : 0.0;
    if (text) t.text = text(t.id);
    out.push_back(std::move(t));
  }
  return out;
}

TokenText token_text_of(const Tokenizer& tokenizer) {
  return [&tokenizer](int32_t id) { return utf8::to_valid(tokenizer.token_bytes(id)); };
}

TokenStanding standing_of(std::span<const float> logits, int32_t id) {
  if (id < 0 || static_cast<size_t>(id) >= logits.size())
    fail("token ", id, " is not in a row of ", logits.size(), " logits");
  TokenStanding s;
  s.logit = logits[static_cast<size_t>(id)];
  s.removed = !std::isfinite(s.logit);
  double max = -INFINITY;
  for (float v : logits)
    if (v > max) max = v;
  double sum = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float v = logits[i];
    if (std::isnan(v)) continue;
    if (std::isfinite(max)) sum += std::exp(static_cast<double>(v) - max);
    // The order of top_tokens: higher logits first, then lower ids.
    if (v > s.logit || (v == s.logit && static_cast<int32_t>(i) < id)) ++s.rank;
  }
  s.prob = !s.removed && sum > 0 ? std::exp(static_cast<double>(s.logit) - max) / sum : 0.0;
  return s;
}

LensCollector::LensCollector(std::optional<std::set<int>> layers, std::optional<std::set<int32_t>> positions)
    : layers_(std::move(layers)), positions_(std::move(positions)) {}

bool LensCollector::wants(std::string_view stage, int layer) const {
  if (stage == "logits") return true;
  return stage == "output" && (!layers_ || layers_->count(layer) > 0);
}

LensCollector::Rows LensCollector::keep(const StageTensor& t, const std::optional<std::set<int32_t>>& positions) {
  Rows r;
  r.layer = t.layer;
  const int64_t width = t.row_size();
  for (int64_t row = 0; row < t.axes[0].size; ++row) {
    if (positions && positions->count(t.positions[row]) == 0) continue;
    r.positions.push_back(t.positions[row]);
    r.tokens.push_back(t.tokens[row]);
    r.data.insert(r.data.end(), t.data + row * width, t.data + (row + 1) * width);
  }
  return r;
}

void LensCollector::record(const StageTensor& t) {
  if (t.stage == "logits") logits_ = keep(t, positions_);
  else outputs_.push_back(keep(t, positions_));
}

LogitLens LensCollector::compute(const DecoderModel& model, Kernels& kernels, int64_t top_k, const TokenText& text,
                                 std::optional<int32_t> watch) const {
  const ModelConfig& c = model.config();
  const int64_t vocab = c.vocab_size;
  LogitLens lens;
  lens.top_k = top_k;
  if (!outputs_.empty()) {
    lens.positions = outputs_.front().positions;
    lens.tokens = outputs_.front().tokens;
  } else if (logits_) {
    lens.positions = logits_->positions;
    lens.tokens = logits_->tokens;
  }
  std::vector<float> logits;
  for (const Rows& r : outputs_) {
    if (r.positions != lens.positions) fail("logit lens: layer ", r.layer, " was traced at different positions");
    const auto n = static_cast<int64_t>(r.positions.size());
    model.project_to_vocab(r.data.data(), n, kernels, logits);
    LensLayer layer;
    layer.layer = r.layer;
    for (int64_t p = 0; p < n; ++p) {
      const std::span<const float> row(logits.data() + p * vocab, static_cast<size_t>(vocab));
      layer.top.push_back(top_tokens(row, top_k, text));
      if (watch) layer.watched.push_back(standing_of(row, *watch));
    }
    lens.layers.push_back(std::move(layer));
    // The last layer's lens is the model's own computation; say how close it came.
    if (r.layer == c.num_layers - 1 && logits_ && logits_->positions == r.positions) {
      double worst = 0;
      for (size_t i = 0; i < logits.size(); ++i)
        worst = std::max(worst, std::fabs(static_cast<double>(logits[i]) - logits_->data[i]));
      lens.last_layer_max_abs_diff = worst;
    }
  }
  if (logits_) {
    if (logits_->positions != lens.positions) fail("logit lens: the logits were traced at different positions");
    for (size_t p = 0; p < logits_->positions.size(); ++p)
      lens.final_top.push_back(
          top_tokens({logits_->data.data() + p * static_cast<size_t>(vocab), static_cast<size_t>(vocab)}, top_k, text));
  }
  return lens;
}

}  // namespace glass
