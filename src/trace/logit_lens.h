// The logit lens: the final norm and lm_head applied to each layer's residual stream,
// read as next-token predictions. At the last layer it is the model's own logits.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "model/decoder_model.h"
#include "tokenizer/tokenizer.h"
#include "trace/trace_sink.h"

namespace glass {

struct LensToken {
  int32_t id = -1;
  float logit = 0;
  double prob = 0;   // softmax over the whole vocabulary
  std::string text;  // the token's bytes as valid UTF-8 (empty without a tokenizer)
};

// The token text for an id (e.g. from a tokenizer); may be empty.
using TokenText = std::function<std::string(int32_t)>;
// A tokenizer's token texts: each token's bytes as valid UTF-8 (a partial character
// becomes U+FFFD). The tokenizer must outlive the function.
TokenText token_text_of(const Tokenizer& tokenizer);

// The k most probable tokens of one logits row, most probable first (ties: lower id).
std::vector<LensToken> top_tokens(std::span<const float> logits, int64_t k, const TokenText& text = {});

// Where one token stands in a logits row: its rank (0: the most probable, ties ordered as
// top_tokens orders them) and its softmax probability. A token the row removed (-inf)
// has probability 0 and counts as removed.
struct TokenStanding {
  int64_t rank = 0;
  float logit = 0;
  double prob = 0;
  bool removed = false;
};
TokenStanding standing_of(std::span<const float> logits, int32_t id);

struct LensLayer {
  int layer = -1;
  std::vector<std::vector<LensToken>> top;  // per position
  std::vector<TokenStanding> watched;       // per position, when compute() watched a token
};

struct LogitLens {
  int64_t top_k = 0;
  std::vector<int32_t> positions;  // the positions the lens looked at
  std::vector<int32_t> tokens;     // the input token at each
  std::vector<LensLayer> layers;   // in layer order
  // The model's own next-token prediction at each position (when its logits were traced).
  std::vector<std::vector<LensToken>> final_top;
  // max |lens(last layer) - model logits| over the traced positions, when both exist.
  std::optional<double> last_layer_max_abs_diff;
};

// Subscribes to each selected layer's "output" and to "logits"; keeps their rows at the
// selected positions. compute() then runs the final norm and lm_head on them.
class LensCollector : public TraceSink {
 public:
  LensCollector(std::optional<std::set<int>> layers, std::optional<std::set<int32_t>> positions);
  bool wants(std::string_view stage, int layer) const override;
  void record(const StageTensor& t) override;

  // With `watch`, each layer also says where that token stands at each position.
  LogitLens compute(const DecoderModel& model, Kernels& kernels, int64_t top_k, const TokenText& text = {},
                    std::optional<int32_t> watch = std::nullopt) const;

 private:
  struct Rows {
    int layer = -1;
    std::vector<int32_t> positions, tokens;
    std::vector<float> data;  // [positions, width]
  };
  static Rows keep(const StageTensor& t, const std::optional<std::set<int32_t>>& positions);

  std::optional<std::set<int>> layers_;
  std::optional<std::set<int32_t>> positions_;
  std::vector<Rows> outputs_;
  std::optional<Rows> logits_;
};

}  // namespace glass
