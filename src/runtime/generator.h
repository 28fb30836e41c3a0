// The generation loop over a batch of sequences. Each step() is one forward pass over
// every live sequence: prompt rows of sequences still prefilling (in chunks) and one
// decode row for each of the others. A sequence's next-token logits come from its
// last real row, so sequences of different lengths share passes without padding; the
// kernels are batch-invariant, so each gets exactly the tokens it would get alone.
//
// The same loop serves `glass run` (add every prompt, step until idle) and the server's
// continuous batching (add requests between steps).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "grammar/matcher.h"
#include "model/decoder_model.h"
#include "sampling/processor_chain.h"
#include "sampling/sampler.h"
#include "sampling/sampling_params.h"
#include "sampling/stopping.h"
#include "sampling/token_history.h"
#include "tokenizer/tokenizer.h"

namespace glass {

struct GenerationRequest {
  std::vector<int32_t> prompt;
  SamplingParams params;  // validated by add()
  // Record the top `show_top` candidates before and after the processors each step
  // (0: off, and free).
  size_t show_top = 0;
  bool skip_special_tokens = true;  // in the streamed text
  // Constrained decoding: every step, tokens whose bytes cannot continue a string of this
  // grammar are removed before the processors (a stage of the trace), and the eos tokens
  // only where the output is complete. Needs eos tokens (not ignore_eos).
  std::optional<grammar::Grammar> grammar = std::nullopt;
  // With a grammar: when empty, the grammar constrains the whole output. Otherwise the
  // output is free until it contains this text; the grammar then constrains what follows
  // it until the grammar's string is complete (no byte can extend it), and the output is
  // free again until the next occurrence (llama.cpp's lazy grammars: tool calls under
  // tool_choice "auto"). Such a grammar needs no eos token.
  std::string grammar_trigger = {};
  // A triggered grammar is not triggered between these two tokens: a reasoning model's
  // think block, where a call it writes is thought, not made (llama.cpp skips it too).
  // `open_at_start`: the prompt opened it. Token ids, since think tags are tokens.
  struct QuietSpan {
    int32_t open = -1;
    int32_t close = -1;
    bool open_at_start = false;
  };
  std::optional<QuietSpan> grammar_quiet = std::nullopt;
};

// One of the best candidates of a step, for `--show-top`: its probability in the
// model's distribution and in the one sampled from (after every processor; 0 when a
// processor removed it). `logprob_before` is the model's log-softmax, computed from the
// logit so that it stays finite where prob_before underflows (OpenAI's logprobs).
struct Candidate {
  int32_t id = -1;
  float logit = 0;
  float prob_before = 0;
  float prob_after = 0;
  float logprob_before = 0;
};

// What one step produced for one sequence.
struct GenerationEvent {
  int handle = -1;
  int32_t token = -1;
  std::string text;  // newly printable text (complete UTF-8, stop strings withheld)
  // When show_top > 0: the top candidates of the raw logits, the chosen token's own
  // entry and its rank among the raw logits (1: the argmax; ties go to the lower id, as
  // in the candidates), and what each processor left.
  std::vector<Candidate> candidates;
  Candidate chosen;
  int64_t chosen_rank = 0;
  const ChainTrace* trace = nullptr;
  std::optional<FinishReason> finish;  // set on the sequence's last event
};

struct GenerationResult {
  std::vector<int32_t> prompt;
  int64_t cached_tokens = 0;    // prompt positions taken from the prefix cache, not computed
  std::vector<int32_t> tokens;  // generated ids (an eos token included when it ended the sequence)
  std::string text;             // the printed text
  FinishReason finish;
  uint64_t seed = 0;
};

struct GenerationTimings {
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
  double prompt_seconds = 0;      // passes that contained prompt rows
  double generation_seconds = 0;  // passes of decode rows only
  int64_t forward_passes = 0;
};

class Generator {
 public:
  // `context_length`: the most positions one sequence may hold (prompt + output).
  // `prefill_chunk`: the most prompt rows one pass takes (bounds activation memory).
  static constexpr int64_t kDefaultPrefillChunk = 512;
  Generator(const DecoderModel& model, Kernels& kernels, KVCache& cache, const Tokenizer& tokenizer,
            int64_t context_length, int64_t prefill_chunk = kDefaultPrefillChunk);
  ~Generator();

  // Queues a request; its prompt runs in the next step() (less any prefix the cache
  // holds: those positions are attached, not computed). Returns its handle.
  // Throws glass::Error for invalid parameters, an empty prompt, ids outside the
  // vocabulary or a prompt that does not fit the context.
  int add(GenerationRequest request);
  // The checks add() makes, without adding: callers on other threads may use it to
  // refuse a request before queueing it (it reads only what the constructor set).
  void validate(const GenerationRequest& request) const;
  // KV blocks add() takes from the cache's available_blocks() at worst: fresh blocks for
  // min(context, prompt + max_new_tokens) positions less the cached prefix, plus the
  // cached prefix blocks no sequence holds now. The scheduler admits a request when this
  // fits; add() promises it, so the request never finds the cache full.
  int64_t blocks_needed(const GenerationRequest& request, size_t choices = 1) const;
  // Adds `choices` sequences for one prompt (OpenAI's `n`): the first computes the
  // prompt; the others wait for it, then start from its KV blocks (full blocks shared,
  // the partial last one copied) and its last-position logits, each sampling with its
  // own sampler. With a seed, choice i samples with seed + i (vLLM's rule); without one,
  // each draws its own. Choice i's tokens are those of a single request with that seed.
  // Returns the handles, choice by choice.
  std::vector<int> add_choices(GenerationRequest request, size_t choices);
  // The most positions one sequence may hold (the constructor's, capped by the model).
  int64_t context_length() const { return context_length_; }
  // The ids tokens are drawn from: the model's vocabulary rows up to the tokenizer's
  // size (embedding rows past the tokenizer are padding, never drawn).
  int64_t sample_width() const;
  // Builds now what constrained requests with these end tokens need (the vocabulary's
  // trie, about 0.2 s for Qwen's 151,665 tokens), rather than in their first step.
  void prepare_grammar(const std::vector<int32_t>& end_tokens) { grammar_vocabulary(end_tokens); }
  // Prompt positions of a sequence attached from the prefix cache (not computed).
  int64_t cached_tokens(int handle) const;
  // Stops a sequence now and frees its KV blocks; it gets no further events.
  void cancel(int handle);

  // One forward pass over every live sequence, then sampling and stop checks; events
  // go to `on_event` in handle order.
  void step(const std::function<void(const GenerationEvent&)>& on_event);
  bool idle() const;
  size_t live() const;

  // The result of a finished sequence (and forgets it); nullopt while it runs.
  std::optional<GenerationResult> take_result(int handle);
  const GenerationTimings& timings() const { return timings_; }

  // Convenience: run `requests` together to the end.
  static std::vector<GenerationResult> run_all(const DecoderModel& model, Kernels& kernels, KVCache& cache,
                                               const Tokenizer& tokenizer, int64_t context_length,
                                               std::vector<GenerationRequest> requests,
                                               const std::function<void(const GenerationEvent&)>& on_event = {},
                                               GenerationTimings* timings = nullptr);

 private:
  struct Sequence;
  void finish(Sequence& s, FinishReason reason);
  // After `token` was drawn: the grammar accepts it, or a triggered grammar looks for its
  // trigger, starts after it, and hands the output back when its string is complete.
  void follow_grammar(Sequence& s, int32_t token);
  // The vocabulary's bytes in a trie for grammar masks, with `end_tokens` as the tokens
  // that end a complete output; built once per set of end tokens.
  std::shared_ptr<const grammar::TokenVocabulary> grammar_vocabulary(const std::vector<int32_t>& end_tokens);
  // A prompt chunk of the pass being built: its sequence, and its first position.
  struct Prefill {
    const Sequence* sequence;
    int64_t from;
  };
  // Whether a chunk of `prefills` ends, in this pass, the block `s` would compute next,
  // from the same tokens.
  bool next_block_computed_by(const std::vector<Prefill>& prefills, const Sequence& s) const;

  const DecoderModel& model_;
  Kernels& kernels_;
  KVCache& cache_;
  const Tokenizer& tokenizer_;
  int64_t context_length_;
  int64_t prefill_chunk_;
  int next_handle_ = 0;
  std::vector<std::unique_ptr<Sequence>> sequences_;  // live and finished-but-untaken
  std::vector<std::pair<std::vector<int32_t>, std::shared_ptr<const grammar::TokenVocabulary>>> grammar_vocabularies_;
  GenerationTimings timings_;
  Batch batch_;
  std::vector<float> logits_;
};

}  // namespace glass
