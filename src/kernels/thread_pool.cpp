#include "kernels/thread_pool.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <exception>

#include "base/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define GLASS_PAUSE() _mm_pause()
#else
#define GLASS_PAUSE() std::this_thread::yield()
#endif

namespace glass {

namespace {
// Spin with pause for a few microseconds, then keep polling but yield the CPU (so an
// oversubscribed machine still makes progress), then sleep.
constexpr int kPauseIterations = 2000;
constexpr int kYieldIterations = 200;

template <class Done>
void spin_until(Done done) {
  for (int i = 0; i < kPauseIterations; ++i) {
    if (done()) return;
    GLASS_PAUSE();
  }
  while (!done()) std::this_thread::yield();
}
}  // namespace

int ThreadPool::hardware_threads() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

ThreadPool::ThreadPool(int threads) {
  if (threads < 0) fail("thread count must be 0 (every CPU) or positive, got ", threads);
  if (threads > kMaxThreads) fail("thread count ", threads, " is too large: a pool holds at most ", kMaxThreads);
  if (threads == 0) threads = std::min(hardware_threads(), kMaxThreads);
  try {
    workers_.reserve(static_cast<size_t>(threads - 1));
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
  } catch (const std::exception& e) {
    // A destructor does not run for a constructor that throws: the started threads are
    // stopped and joined here (a joinable std::thread destroyed would std::terminate).
    const size_t started = workers_.size();
    stop_workers();
    fail("cannot start thread ", started + 2, " of ", threads, " (", started + 1, " running): ", e.what());
  }
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() {
  stop_.store(true, std::memory_order_release);
  epoch_.fetch_add(1, std::memory_order_release);
  epoch_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t now = epoch_.load(std::memory_order_acquire);
    for (int spin = 0; now == seen && spin < kPauseIterations; ++spin) {
      GLASS_PAUSE();
      now = epoch_.load(std::memory_order_acquire);
    }
    for (int spin = 0; now == seen && spin < kYieldIterations; ++spin) {
      std::this_thread::yield();
      now = epoch_.load(std::memory_order_acquire);
    }
    while (now == seen) {
      epoch_.wait(seen, std::memory_order_acquire);
      now = epoch_.load(std::memory_order_acquire);
    }
    seen = now;
    if (stop_.load(std::memory_order_acquire)) return;
    (*job_)(index);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::run(const std::function<void(int)>& job) {
  if (workers_.empty()) {
    job(0);
    return;
  }
  job_ = &job;
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  epoch_.fetch_add(1, std::memory_order_release);
  epoch_.notify_all();
  job(0);
  spin_until([this] { return pending_.load(std::memory_order_acquire) == 0; });
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  const int64_t chunks = (n + grain - 1) / grain;
  const int threads = static_cast<int>(std::min<int64_t>(size(), chunks));
  if (threads <= 1) {
    body(0, n);
    return;
  }
  run([&](int t) {
    if (t >= threads) return;
    const int64_t begin = std::min(n, chunks * t / threads * grain);
    const int64_t end = std::min(n, chunks * (t + 1) / threads * grain);
    if (begin < end) body(begin, end);
  });
}

}  // namespace glass
