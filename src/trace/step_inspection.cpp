#include "trace/step_inspection.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "base/error.h"
#include "model/batch.h"
#include "sampling/processor_chain.h"
#include "sampling/token_history.h"
#include "trace/trace_recorder.h"

namespace glass {
namespace {

int64_t finite_count(std::span<const float> row) {
  return std::count_if(row.begin(), row.end(), [](float x) { return std::isfinite(x); });
}

CandidateStage stage_of(std::string name, std::string setting, std::span<const float> row, int64_t before,
                        std::optional<int32_t> chosen, int64_t top, const TokenText& text) {
  CandidateStage s;
  s.name = std::move(name);
  s.setting = std::move(setting);
  s.surviving = finite_count(row);
  s.removed = before - s.surviving;
  s.top = top_tokens(row, top, text);
  // top_tokens lists -inf entries when fewer than `top` survive; they are not candidates.
  std::erase_if(s.top, [](const LensToken& t) { return !std::isfinite(t.logit); });
  if (chosen) s.chosen = standing_of(row, *chosen);
  return s;
}

// The sequence an inspection runs in: borrowed from a shared cache (attached to its cached
// prefix, published and dropped at the end) or in a cache of its own.
class InspectionSequence {
 public:
  InspectionSequence(const ModelConfig& config, KVType type, std::span<const int32_t> context, KVCache* shared) {
    const auto n = static_cast<int64_t>(context.size());
    if (shared != nullptr && shared->prefix_cache()) {
      // As admission counts a prompt: fresh blocks for the rest, the cached ones it pins.
      const KVCache::PrefixMatch m = shared->match_prefix(context);
      if (shared->blocks_for(n) - m.blocks + m.unheld <= shared->available_blocks()) {
        cache_ = shared;
        sequence_ = shared->add_sequence();
        reused_ = shared->attach_prefix(sequence_, context);
        shared->promise(sequence_, shared->blocks_for(n) - reused_ / shared->block_size());
        return;
      }
    }
    // A cache of its own, of the shared one's type when there is one.
    own_ = std::make_unique<KVCache>(config, shared != nullptr ? shared->type() : type, n);
    cache_ = own_.get();
    sequence_ = cache_->add_sequence();
  }
  ~InspectionSequence() {
    if (!own_) cache_->remove_sequence(sequence_);
  }
  InspectionSequence(const InspectionSequence&) = delete;
  InspectionSequence& operator=(const InspectionSequence&) = delete;

  KVCache& cache() { return *cache_; }
  int32_t sequence() const { return sequence_; }
  int64_t reused() const { return reused_; }
  // The context's full blocks, for the next inspection (or request) that starts with them.
  void publish(std::span<const int32_t> context) {
    if (!own_) cache_->publish(sequence_, context);
  }

 private:
  std::unique_ptr<KVCache> own_;
  KVCache* cache_ = nullptr;
  int32_t sequence_ = -1;
  int64_t reused_ = 0;
};

}  // namespace

StepInspection inspect_step(const DecoderModel& model, Kernels& kernels, std::span<const int32_t> context,
                            int64_t prompt_tokens, std::optional<int32_t> chosen, const SamplingParams& params,
                            const InspectOptions& options, const TokenText& text, KVCache* shared) {
  const ModelConfig& c = model.config();
  const auto n = static_cast<int64_t>(context.size());
  if (n == 0) fail("the context is empty: a step needs at least one token before it");
  for (int32_t id : context)
    if (id < 0 || id >= c.vocab_size) fail("token ", id, " is not in the model's vocabulary of ", c.vocab_size);
  if (chosen && (*chosen < 0 || *chosen >= c.vocab_size))
    fail("the chosen token ", *chosen, " is not in the model's vocabulary of ", c.vocab_size);
  if (prompt_tokens < 0 || prompt_tokens > n)
    fail("prompt_tokens is ", prompt_tokens, "; it must be between 0 and the context's ", n, " tokens");
  if (options.top < 1) fail("top must be at least 1");
  if (options.prefill_chunk < 1) fail("prefill_chunk must be at least 1");

  StepInspection out;
  out.position = static_cast<int32_t>(n - 1);
  const std::set<int32_t> last = {out.position};

  // Everything before the last token (less what a cached prefix holds): the KV cache the
  // step reads, untraced.
  InspectionSequence kv(c, options.kv_type, context, shared);
  out.reused = kv.reused();
  std::vector<float> logits;
  for (int64_t start = out.reused; start < n - 1; start += options.prefill_chunk) {
    const int64_t end = std::min(n - 1, start + options.prefill_chunk);
    const std::vector<int32_t> chunk(context.begin() + start, context.begin() + end);
    model.forward(Batch::prompt(chunk, kv.sequence(), static_cast<int32_t>(start), false), kv.cache(), kernels, logits);
  }

  // The step itself, traced.
  RecorderOptions keep;
  keep.keep_data = true;
  keep.first_count = 0;
  TraceSelection weights_at_last;
  weights_at_last.stages = std::set<std::string>{"attn_weights"};
  weights_at_last.positions = last;
  TraceRecorder attention(weights_at_last, keep);
  LensCollector lens(std::nullopt, last);
  RoutingCollector routing(std::nullopt, last);
  TraceFanout fanout;
  if (options.attention) fanout.subscribe(&attention);
  if (options.lens) fanout.subscribe(&lens);
  const bool sparse = c.num_experts > 0;
  if (options.experts && sparse) fanout.subscribe(&routing);
  model.forward(Batch::prompt({context.back()}, kv.sequence(), out.position, false), kv.cache(), kernels, logits,
                &fanout);
  kv.publish(context);
  if (static_cast<int64_t>(logits.size()) != c.vocab_size)
    fail("the step gave ", logits.size(), " logits for a vocabulary of ", c.vocab_size);

  // The processors one at a time, as generation runs them (ProcessorChain::apply).
  TokenHistory history(context.subspan(0, static_cast<size_t>(prompt_tokens)));
  for (int64_t i = prompt_tokens; i < n; ++i) history.add_output(context[static_cast<size_t>(i)]);
  const ProcessorChain chain = ProcessorChain::from_params(params);
  out.chain = chain.describe();
  std::vector<float> row = logits;
  // The embedding's padding rows past the tokenizer are never drawn: removed before the
  // first processor, counted at the logits stage (whose candidates are the model's own).
  for (size_t i = std::min(options.tokenizer_vocab, row.size()); i < row.size(); ++i)
    row[i] = -std::numeric_limits<float>::infinity();
  CandidateStage raw = stage_of("logits", "logits", logits, finite_count(logits), chosen, options.top, text);
  raw.surviving = finite_count(row);
  raw.removed = finite_count(logits) - raw.surviving;
  out.stages.push_back(std::move(raw));
  for (const LogitsProcessor& step : chain.steps()) {
    const int64_t before = finite_count(row);
    std::visit([&](const auto& p) { p.apply(row, history); }, step);
    out.stages.push_back(stage_of(std::string(processor_name(step)), describe(step), row, before, chosen, options.top, text));
  }

  if (options.lens) out.lens = lens.compute(model, kernels, options.top, text, chosen);
  if (options.attention) {
    AttentionWeights a;
    for (const StageRecord& r : attention.stages()) {
      // [pos = 1, heads, keys]: keys past the position are padding.
      const int64_t heads = r.axes.at(1).size, keys = r.axes.at(2).size;
      if (r.positions.size() != 1 || keys < n) fail("attention weights of layer ", r.layer, " are not one row of ", n, " keys");
      a.heads = heads;
      a.keys = n;
      ++a.layers;
      for (int64_t h = 0; h < heads; ++h)
        a.weights.insert(a.weights.end(), r.data.begin() + h * keys, r.data.begin() + h * keys + n);
    }
    out.attention = std::move(a);
  }
  if (options.experts && sparse) out.experts = routing.routing();
  return out;
}

}  // namespace glass
