// A fixed set of worker threads that run one job at a time, split by thread index.
// Workers spin briefly between jobs (a decode step issues a few hundred jobs, each
// microseconds long, so waking a sleeping thread every time would cost more than the
// work), then sleep on an atomic wait until the next job.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace glass {

class ThreadPool {
 public:
  // The most threads a pool holds (callers bound them by the machine first: Backend).
  static constexpr int kMaxThreads = 1024;

  // `threads` in total, the calling thread included; 0 means every CPU this process may
  // run on (at most kMaxThreads). Throws glass::Error for a negative count, one past
  // kMaxThreads, or a thread that cannot start (those already started are stopped and
  // joined first).
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs job(thread_index) on every thread, the caller as thread 0, and returns when
  // all have finished. Not reentrant: a job must not call run().
  void run(const std::function<void(int)>& job);

  // Splits [0, n) into one contiguous range per thread, boundaries multiples of
  // `grain` (the same split for the same n, so results never depend on timing).
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

  // The CPUs this process may run on (its affinity mask).
  static int hardware_threads();

 private:
  void worker_loop(int index);
  void stop_workers();

  std::vector<std::thread> workers_;
  const std::function<void(int)>* job_ = nullptr;
  std::atomic<uint64_t> epoch_{0};    // bumped once per job
  std::atomic<int> pending_{0};       // workers still running the current job
  std::atomic<bool> stop_{false};
};

}  // namespace glass
