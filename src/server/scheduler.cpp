#include "server/scheduler.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "base/checked_math.h"
#include "base/error.h"

namespace glass::server {

// --- GenerationStream --------------------------------------------------------------------

bool GenerationStream::next(Update& out, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  const auto has_news = [&] { return !pending_.tokens.empty() || pending_.ended(); };
  if (!ready_.wait_for(lock, timeout, has_news)) return false;
  for (auto& t : pending_.tokens) out.tokens.push_back(std::move(t));
  pending_.tokens.clear();
  if (pending_.finished) out.finished = std::exchange(pending_.finished, std::nullopt);
  if (pending_.error) out.error = std::exchange(pending_.error, std::nullopt);
  return true;
}

GenerationStream::Update GenerationStream::wait_all() {
  Update all;
  while (!all.ended()) next(all, std::chrono::hours(1));
  return all;
}

bool GenerationStream::cancelled() const {
  std::lock_guard lock(mutex_);
  return cancelled_;
}

void GenerationStream::push(StreamedToken token) {
  token.emitted_at = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mutex_);
    pending_.tokens.push_back(std::move(token));
  }
  ready_.notify_all();
}

void GenerationStream::end(FinishedGeneration finished) {
  {
    std::lock_guard lock(mutex_);
    pending_.finished = std::move(finished);
  }
  ready_.notify_all();
}

void GenerationStream::end_with_error(std::string message) {
  {
    std::lock_guard lock(mutex_);
    pending_.error = std::move(message);
  }
  ready_.notify_all();
}

// --- Scheduler ---------------------------------------------------------------------------

namespace {

int64_t effective_context(const DecoderModel& model, const KVCache& cache, int64_t context) {
  if (context <= 0) fail("context length must be positive, got ", context);
  context = std::min(context, model.config().max_position_embeddings);
  return std::min(context, cache.total_blocks() * cache.block_size());
}

}  // namespace

Scheduler::Scheduler(const DecoderModel& model, Kernels& kernels, KVCache& cache, const Tokenizer& tokenizer,
                     int64_t context_length, SchedulerOptions options)
    : model_(model),
      kernels_(kernels),
      cache_(cache),
      tokenizer_(tokenizer),
      context_length_(effective_context(model, cache, context_length)),
      options_(options),
      generator_(model, kernels, cache, tokenizer, context_length_, options.prefill_chunk) {
  if (options_.max_running == 0) fail("the scheduler needs room for at least one running sequence");
  counters_.max_running = options_.max_running;
  counters_.max_waiting = options_.max_waiting;
  counters_.kv_blocks_total = cache_.total_blocks();
  free_blocks_ = cache_.free_blocks();
  thread_ = std::thread([this] { run(); });
}

Scheduler::~Scheduler() { stop(); }

void Scheduler::stop() {
  std::call_once(stop_once_, [this] {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
    std::lock_guard lock(mutex_);
    for (Entry& e : waiting_) e.stream->end_with_error("the server is shutting down");
    for (Entry& e : starting_) e.stream->end_with_error("the server is shutting down");
    waiting_.clear();
    starting_.clear();
    running_ = 0;
    reserved_blocks_ = 0;
  });
}

std::shared_ptr<GenerationStream> Scheduler::submit(SchedulerRequest request) {
  generator_.validate(request.generation);
  GenerationRequest& g = request.generation;
  g.show_top = request.logprobs ? std::max<size_t>(1, request.top_logprobs) : 0;
  const auto prompt = static_cast<int64_t>(g.prompt.size());
  // max_tokens may be anything up to INT64_MAX: the sum saturates, then the context caps it.
  const int64_t worst =
      std::min(context_length_, saturating_add(prompt, g.params.max_new_tokens.value_or(context_length_)));

  Entry e;
  e.request = std::move(request);
  e.stream = std::make_shared<GenerationStream>();
  e.blocks = cache_.blocks_for(worst);
  auto stream = e.stream;
  {
    std::lock_guard lock(mutex_);
    if (stopping_) throw Unavailable("the server is shutting down");
    if (waiting_.empty() && fits_locked(e)) {
      ++running_;
      reserved_blocks_ += e.blocks;
      starting_.push_back(std::move(e));
    } else {
      if (waiting_.size() >= options_.max_waiting) {
        ++counters_.rejected;
        throw Unavailable(str_cat("the server is busy: ", running_, " requests running and ", waiting_.size(),
                                " waiting (the most it queues); retry later"));
      }
      waiting_.push_back(std::move(e));
    }
  }
  wake_.notify_all();
  return stream;
}

void Scheduler::cancel(GenerationStream& stream) {
  {
    std::lock_guard lock(mutex_);
    {
      std::lock_guard stream_lock(stream.mutex_);
      if (stream.cancelled_) return;
      stream.cancelled_ = true;
    }
    auto is_it = [&](const Entry& e) { return e.stream.get() == &stream; };
    if (auto it = std::find_if(waiting_.begin(), waiting_.end(), is_it); it != waiting_.end()) {
      waiting_.erase(it);
      ++counters_.cancelled;
      admit_locked();  // the head may have changed
    } else if (auto st = std::find_if(starting_.begin(), starting_.end(), is_it); st != starting_.end()) {
      --running_;
      reserved_blocks_ -= st->blocks;
      starting_.erase(st);
      ++counters_.cancelled;
      admit_locked();
    }
    // Otherwise it runs: the scheduler thread drops it before the next pass.
  }
  wake_.notify_all();
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard lock(mutex_);
  SchedulerStats s = counters_;
  s.running = running_;
  s.waiting = waiting_.size();
  s.kv_blocks_free = free_blocks_;
  s.kv_blocks_reserved = reserved_blocks_;
  return s;
}

bool Scheduler::fits_locked(const Entry& e) const {
  return running_ < options_.max_running && reserved_blocks_ + e.blocks <= cache_.total_blocks();
}

void Scheduler::admit_locked() {
  while (!waiting_.empty() && fits_locked(waiting_.front())) {
    ++running_;
    reserved_blocks_ += waiting_.front().blocks;
    starting_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }
}

StreamedToken Scheduler::to_streamed(const Entry& e, const GenerationEvent& event) const {
  StreamedToken t;
  t.token = event.token;
  t.text = event.text;
  if (e.request.logprobs) {
    t.logprob = event.chosen.logprob_before;
    const size_t n = std::min(e.request.top_logprobs, event.candidates.size());
    for (size_t i = 0; i < n; ++i) t.top.push_back({event.candidates[i].id, event.candidates[i].logprob_before});
  }
  return t;
}

void Scheduler::run() {
  std::vector<Entry> active;  // in the Generator, in handle order
  for (;;) {
    std::vector<Entry> start;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !starting_.empty() || !active.empty(); });
      if (stopping_) break;
      start.swap(starting_);
    }

    int64_t released_blocks = 0;
    size_t released = 0;
    int64_t completed = 0, cancelled = 0;
    // Streams end after the counters are updated, so that a client that has its
    // response also sees its blocks free in stats().
    std::vector<std::pair<std::shared_ptr<GenerationStream>, FinishedGeneration>> finished;
    std::vector<std::pair<std::shared_ptr<GenerationStream>, std::string>> failed;
    auto release = [&](const Entry& e) {
      released_blocks += e.blocks;
      ++released;
    };

    for (Entry& e : start) {
      try {
        e.handle = generator_.add(e.request.generation);
        active.push_back(std::move(e));
      } catch (const Error& err) {
        failed.emplace_back(e.stream, err.what());
        release(e);
      }
    }
    // Clients that went away: their blocks are free before this pass.
    std::erase_if(active, [&](const Entry& e) {
      if (!e.stream->cancelled()) return false;
      generator_.cancel(e.handle);
      release(e);
      ++cancelled;
      return true;
    });

    size_t in_pass = 0;
    bool stepped = false;
    if (!generator_.idle()) {
      in_pass = generator_.live();
      try {
        generator_.step([&](const GenerationEvent& event) {
          for (const Entry& e : active)
            if (e.handle == event.handle) {
              e.stream->push(to_streamed(e, event));
              break;
            }
        });
        stepped = true;
      } catch (const std::exception& err) {
        // Nothing says which sequence failed (NaN logits, a full cache after a bug):
        // end them all rather than run on in an unknown state.
        std::fprintf(stderr, "glass serve: a forward pass failed: %s\n", err.what());
        for (Entry& e : active) {
          failed.emplace_back(e.stream, str_cat("generation failed: ", err.what()));
          generator_.cancel(e.handle);
          release(e);
        }
        active.clear();
      }
    }
    std::erase_if(active, [&](const Entry& e) {
      std::optional<GenerationResult> r = generator_.take_result(e.handle);
      if (!r) return false;
      finished.emplace_back(e.stream, FinishedGeneration{r->finish, static_cast<int64_t>(r->prompt.size()),
                                                          static_cast<int64_t>(r->tokens.size()), r->seed});
      release(e);
      ++completed;
      return true;
    });

    {
      std::lock_guard lock(mutex_);
      running_ -= released;
      reserved_blocks_ -= released_blocks;
      counters_.completed += completed;
      counters_.cancelled += cancelled;
      if (stepped) ++counters_.forward_passes;
      counters_.peak_running = std::max(counters_.peak_running, in_pass);
      free_blocks_ = cache_.free_blocks();
      admit_locked();
    }
    for (auto& [stream, f] : finished) stream->end(std::move(f));
    for (auto& [stream, message] : failed) stream->end_with_error(std::move(message));
  }
  for (Entry& e : active) {
    generator_.cancel(e.handle);
    e.stream->end_with_error("the server is shutting down");
  }
}

}  // namespace glass::server
