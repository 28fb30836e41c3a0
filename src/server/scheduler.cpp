#include "server/scheduler.h"

#include <algorithm>
#include <cstdio>
#include <utility>

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
  counters_.kv_blocks_free = cache_.free_blocks();
  if (!options_.grammar_end_tokens.empty()) generator_.prepare_grammar(options_.grammar_end_tokens);
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
    for (Entry& e : waiting_)
      for (const auto& stream : e.streams) stream->end_with_error("the server is shutting down");
    waiting_.clear();
    running_ = 0;
    for (auto& [job, done] : jobs_) done.set_exception(std::make_exception_ptr(Unavailable("the server is shutting down")));
    jobs_.clear();
  });
}

std::future<void> Scheduler::run_on_model(ModelJob job) {
  std::promise<void> done;
  std::future<void> result = done.get_future();
  {
    std::lock_guard lock(mutex_);
    if (stopping_) throw Unavailable("the server is shutting down");
    if (jobs_.size() >= options_.max_jobs)
      throw Unavailable(str_cat("the server is busy: ", jobs_.size(), " inspections wait (the most it queues); retry later"));
    jobs_.emplace_back(std::move(job), std::move(done));
  }
  wake_.notify_all();
  return result;
}

std::shared_ptr<GenerationStream> Scheduler::submit(SchedulerRequest request) {
  if (request.n != 1) fail("submit() takes one choice; n = ", request.n, " goes through submit_choices()");
  return submit_choices(std::move(request)).front();
}

std::vector<std::shared_ptr<GenerationStream>> Scheduler::submit_choices(SchedulerRequest request) {
  generator_.validate(request.generation);
  if (request.n == 0) fail("n must be at least 1");
  if (request.n > options_.max_running)
    fail("n is ", request.n, ", more choices than this server runs at once (", options_.max_running, ", --parallel)");
  GenerationRequest& g = request.generation;
  g.show_top = request.logprobs ? std::max<size_t>(1, request.top_logprobs) : 0;

  Entry e;
  e.request = std::move(request);
  for (size_t i = 0; i < e.request.n; ++i) e.streams.push_back(std::make_shared<GenerationStream>());
  std::vector<std::shared_ptr<GenerationStream>> streams = e.streams;
  {
    std::lock_guard lock(mutex_);
    if (stopping_) throw Unavailable("the server is shutting down");
    // Requests that a free running slot will take at the next pass do not count as waiting.
    const size_t free_slots = options_.max_running - std::min(running_, options_.max_running);
    if (waiting_.size() >= options_.max_waiting + free_slots) {
      ++counters_.rejected;
      throw Unavailable(str_cat("the server is busy: ", running_, " requests running and ", waiting_.size(),
                                " waiting (the most it queues); retry later"));
    }
    waiting_.push_back(std::move(e));
  }
  wake_.notify_all();
  return streams;
}

bool Scheduler::Entry::cancelled() const {
  return std::any_of(streams.begin(), streams.end(), [](const auto& s) { return s->cancelled(); });
}

void Scheduler::cancel(GenerationStream& stream) {
  {
    std::lock_guard lock(mutex_);
    {
      std::lock_guard stream_lock(stream.mutex_);
      if (stream.cancelled_) return;
      stream.cancelled_ = true;
    }
    auto is_it = [&](const Entry& e) {
      return std::any_of(e.streams.begin(), e.streams.end(), [&](const auto& s) { return s.get() == &stream; });
    };
    if (auto it = std::find_if(waiting_.begin(), waiting_.end(), is_it); it != waiting_.end()) {
      waiting_.erase(it);
      ++counters_.cancelled;
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
  return s;
}

void Scheduler::admit_locked(std::vector<Entry>& active, Failures& failed) {
  while (!waiting_.empty()) {
    Entry& head = waiting_.front();
    const GenerationRequest& g = head.request.generation;
    if (running_ + head.request.n > options_.max_running ||
        generator_.blocks_needed(g, head.request.n) > cache_.available_blocks())
      break;
    Entry e = std::move(head);
    waiting_.pop_front();
    try {
      e.handles = generator_.add_choices(e.request.generation, e.request.n);
    } catch (const Error& err) {
      for (const auto& stream : e.streams) failed.emplace_back(stream, err.what());
      continue;
    }
    counters_.prefix_cache_queries += static_cast<int64_t>(e.request.generation.prompt.size());
    counters_.prefix_cache_hits += generator_.cached_tokens(e.handles.front());
    e.running = e.handles.size();
    running_ += e.running;
    active.push_back(std::move(e));
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
  std::vector<Entry> active;  // in the Generator, in admission order
  for (;;) {
    size_t released = 0;  // sequences
    int64_t completed = 0;
    // Streams end after the counters are updated, so that a client that has its
    // response also sees its blocks free in stats().
    std::vector<std::pair<std::shared_ptr<GenerationStream>, FinishedGeneration>> finished;
    Failures failed;
    std::deque<std::pair<ModelJob, std::promise<void>>> jobs;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !waiting_.empty() || !active.empty() || !jobs_.empty(); });
      if (stopping_) break;
      jobs.swap(jobs_);
      // Clients that went away: their blocks are free before admission and this pass.
      std::erase_if(active, [&](const Entry& e) {
        if (!e.cancelled()) return false;
        for (int h : e.handles)
          if (h >= 0) generator_.cancel(h);
        running_ -= e.running;
        ++counters_.cancelled;
        return true;
      });
      admit_locked(active, failed);
    }

    // Between passes the model is free: jobs run before this one.
    for (auto& [job, done] : jobs) {
      try {
        job(model_, kernels_, cache_);
        done.set_value();
      } catch (...) {
        done.set_exception(std::current_exception());
      }
    }

    size_t in_pass = 0;
    bool stepped = false;
    if (!generator_.idle()) {
      in_pass = generator_.live();
      try {
        generator_.step([&](const GenerationEvent& event) {
          for (const Entry& e : active)
            for (size_t i = 0; i < e.handles.size(); ++i)
              if (e.handles[i] == event.handle) {
                e.streams[i]->push(to_streamed(e, event));
                return;
              }
        });
        stepped = true;
      } catch (const std::exception& err) {
        // Nothing says which sequence failed (NaN logits, a full cache after a bug):
        // end them all rather than run on in an unknown state.
        std::fprintf(stderr, "glass serve: a forward pass failed: %s\n", err.what());
        for (Entry& e : active) {
          for (size_t i = 0; i < e.handles.size(); ++i) {
            if (e.handles[i] < 0) continue;
            failed.emplace_back(e.streams[i], str_cat("generation failed: ", err.what()));
            generator_.cancel(e.handles[i]);
          }
          released += e.running;
        }
        active.clear();
      }
    }
    std::erase_if(active, [&](Entry& e) {
      for (size_t i = 0; i < e.handles.size(); ++i) {
        if (e.handles[i] < 0) continue;
        std::optional<GenerationResult> r = generator_.take_result(e.handles[i]);
        if (!r) continue;
        finished.emplace_back(e.streams[i], FinishedGeneration{r->finish, static_cast<int64_t>(r->prompt.size()),
                                                               r->cached_tokens, static_cast<int64_t>(r->tokens.size()),
                                                               r->seed});
        e.handles[i] = -1;
        --e.running;
        ++released;
      }
      if (e.running > 0) return false;
      ++completed;
      return true;
    });

    {
      std::lock_guard lock(mutex_);
      running_ -= released;
      counters_.completed += completed;
      if (stepped) ++counters_.forward_passes;
      counters_.peak_running = std::max(counters_.peak_running, in_pass);
      counters_.kv_blocks_free = cache_.free_blocks();
      counters_.kv_blocks_cached = cache_.cached_blocks();
      counters_.kv_blocks_evicted = cache_.evicted_blocks();
      counters_.kv_blocks_reserved = cache_.promised_blocks();
    }
    for (auto& [stream, f] : finished) stream->end(std::move(f));
    for (auto& [stream, message] : failed) stream->end_with_error(std::move(message));
  }
  for (Entry& e : active)
    for (size_t i = 0; i < e.handles.size(); ++i) {
      if (e.handles[i] >= 0) generator_.cancel(e.handles[i]);
      e.streams[i]->end_with_error("the server is shutting down");
    }
}

}  // namespace glass::server
