// Continuous batching for the server. One thread owns the model, kernels, KV cache and
// Generator; HTTP handler threads submit requests and read what each produces from its
// own GenerationStream.
//
// Between two forward passes the scheduler thread drops cancelled requests, admits
// waiting ones and then runs Generator::step(), so sequences at different positions
// (some prefilling, most decoding) share every pass. A request is admitted, first in
// first out, when
//   - fewer than `max_running` sequences run, and
//   - its worst case fits the KV cache: fresh blocks for min(context, prompt +
//     max_tokens) positions, less the prompt's prefix already cached (shared, not
//     computed again), plus the cached prefix blocks it pins, is at most what the cache
//     can still promise (free and evictable blocks, less those promised to running
//     requests). Generator::blocks_needed() computes it; the cache keeps the promise.
// So a forward pass never finds the cache full and nothing is ever preempted; the cost
// is that a request without max_tokens reserves a whole context. A large request at the
// head is not overtaken by smaller ones behind it. Requests that cannot start wait in a
// queue; submit() refuses one (HTTP 503) when `max_waiting` requests already wait beyond
// the free running slots. A finished or cancelled request's blocks are free before the
// next pass (published ones stay cached until their memory is needed).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "runtime/generator.h"

namespace glass::server {

struct TokenLogprob {
  int32_t token = -1;
  float logprob = 0;
};

// One generated token as a handler sees it.
struct StreamedToken {
  int32_t token = -1;
  std::string text;  // newly printable text (may be empty)
  // When logprobs were asked for: the model's log-softmax of the chosen token, and the
  // best `top_logprobs` alternatives, best first.
  float logprob = 0;
  std::vector<TokenLogprob> top;
  // When the scheduler handed it over (GenerationStream::push): time to first token and
  // inter-token latency are measured from it, not from when a handler woke up.
  std::chrono::steady_clock::time_point emitted_at{};
};

struct FinishedGeneration {
  FinishReason finish;
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;  // of prompt_tokens, taken from the prefix cache
  int64_t completion_tokens = 0;
  uint64_t seed = 0;
};

// What one request produced, handed from the scheduler thread to its handler.
class GenerationStream {
 public:
  struct Update {
    std::vector<StreamedToken> tokens;
    std::optional<FinishedGeneration> finished;
    std::optional<std::string> error;  // the generation failed (or the server stops)
    bool ended() const { return finished.has_value() || error.has_value(); }
  };

  // Waits until something new arrives or `timeout` passes, then moves all of it into
  // `out` (appending tokens). Returns false when nothing arrived.
  bool next(Update& out, std::chrono::milliseconds timeout);
  // Waits for the end; all tokens, then the finish or the error.
  Update wait_all();

  bool cancelled() const;

 private:
  friend class Scheduler;
  void push(StreamedToken token);
  void end(FinishedGeneration finished);
  void end_with_error(std::string message);

  mutable std::mutex mutex_;
  std::condition_variable ready_;
  Update pending_;
  bool cancelled_ = false;  // set through Scheduler::cancel
};

struct SchedulerOptions {
  size_t max_running = 16;  // sequences in one forward pass (--parallel)
  size_t max_waiting = 64;  // requests waiting for admission (--queue)
  int64_t prefill_chunk = Generator::kDefaultPrefillChunk;
  // The end tokens of constrained requests (the model's eos ids): the vocabulary's trie
  // for grammar masks is built for them at start, so no request waits for it.
  std::vector<int32_t> grammar_end_tokens = {};
  // Model jobs (run_on_model) waiting at once; more are refused.
  size_t max_jobs = 4;
};

struct SchedulerRequest {
  GenerationRequest generation;  // show_top is set from top_logprobs
  size_t n = 1;                  // choices of the one prompt (Generator::add_choices)
  bool logprobs = false;
  size_t top_logprobs = 0;
};

struct SchedulerStats {
  size_t running = 0;
  size_t waiting = 0;
  size_t max_running = 0;
  size_t max_waiting = 0;
  size_t peak_running = 0;  // most sequences in one forward pass so far
  int64_t kv_blocks_total = 0;
  int64_t kv_blocks_free = 0;      // held by no sequence (free or cached)
  int64_t kv_blocks_cached = 0;    // of those, kept for the prefixes they hold
  int64_t kv_blocks_evicted = 0;   // cached blocks reused for other positions so far
  int64_t kv_blocks_reserved = 0;  // promised to running requests and not yet taken
  // Prompt tokens of admitted requests looked up in the prefix cache, and those found
  // there (vLLM v1's prefix_cache_queries / prefix_cache_hits).
  int64_t prefix_cache_queries = 0;
  int64_t prefix_cache_hits = 0;
  int64_t forward_passes = 0;
  int64_t completed = 0;
  int64_t cancelled = 0;
  int64_t rejected = 0;  // refused because the queue was full
};

// Thrown by submit() when the request cannot be taken now: the wait queue is full, or
// the scheduler is stopping (HTTP 503).
class Unavailable : public Error {
 public:
  using Error::Error;
};

class Scheduler {
 public:
  // `context_length` is capped by the model's max_position_embeddings and by the
  // cache's capacity, so that every valid request can be admitted alone.
  Scheduler(const DecoderModel& model, Kernels& kernels, KVCache& cache, const Tokenizer& tokenizer,
            int64_t context_length, SchedulerOptions options);
  // Calls stop().
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  int64_t context_length() const { return context_length_; }

  // Checks the request (glass::Error: invalid parameters, a prompt that does not fit
  // the context, more choices than run at once), then queues it for admission. Throws
  // Unavailable when max_waiting requests already wait, or after stop(). One stream per
  // choice, in choice order; each counts as a running sequence.
  std::vector<std::shared_ptr<GenerationStream>> submit_choices(SchedulerRequest request);
  // submit_choices() of a request with one choice.
  std::shared_ptr<GenerationStream> submit(SchedulerRequest request);
  // Stops a request (its client went away), all its choices: it leaves the queue or the
  // batch before the next pass and its KV blocks are freed. Idempotent; a finished one
  // is left alone.
  void cancel(GenerationStream& stream);

  SchedulerStats stats() const;

  // Work that needs the model and its kernels to itself but not the batch (the inspection
  // API's traced forward passes): it runs on the scheduler thread between two passes,
  // which wait for it, with the KV cache too (a job may run a sequence of its own there if
  // it keeps the cache's promises to the running ones, and drops it before it returns).
  // The future holds what the job threw, or Unavailable when the scheduler stopped before
  // running it. Throws Unavailable when max_jobs jobs already wait, or after stop().
  using ModelJob = std::function<void(const DecoderModel&, Kernels&, KVCache&)>;
  std::future<void> run_on_model(ModelJob job);
  const ModelConfig& model_config() const { return model_.config(); }

  // Ends every running and waiting request with an error, refuses new ones and stops
  // the thread. Idempotent; safe from any thread.
  void stop();

 private:
  struct Entry {
    SchedulerRequest request;
    std::vector<std::shared_ptr<GenerationStream>> streams;  // one per choice
    std::vector<int> handles;  // in the Generator, once admitted; -1 once finished
    size_t running = 0;        // choices not finished
    bool cancelled() const;
  };

  // Moves waiting requests that fit into the Generator (scheduler thread only); those
  // the Generator refuses go to `failed`.
  using Failures = std::vector<std::pair<std::shared_ptr<GenerationStream>, std::string>>;
  void admit_locked(std::vector<Entry>& active, Failures& failed);
  void run();
  StreamedToken to_streamed(const Entry& e, const GenerationEvent& event) const;

  const DecoderModel& model_;
  Kernels& kernels_;
  KVCache& cache_;
  const Tokenizer& tokenizer_;
  const int64_t context_length_;
  const SchedulerOptions options_;
  // Used by the scheduler thread only, but for validate(), which reads only what its
  // constructor set and so is safe from submitting threads.
  Generator generator_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::deque<Entry> waiting_;
  std::deque<std::pair<ModelJob, std::promise<void>>> jobs_;
  size_t running_ = 0;        // in the Generator
  SchedulerStats counters_;   // the cumulative fields, and the cache's after the last pass

  std::once_flag stop_once_;
  std::thread thread_;
};

}  // namespace glass::server
