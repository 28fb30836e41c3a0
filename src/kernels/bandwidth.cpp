#include "kernels/bandwidth.h"

#include <atomic>
#include <chrono>
#include <vector>

#include "kernels/simd_kernels.h"

namespace glass {

double measure_read_bandwidth(ThreadPool& pool, size_t buffer_bytes, int repetitions) {
  const auto count = static_cast<int64_t>(buffer_bytes / sizeof(float));
  std::vector<float> buffer(static_cast<size_t>(count));
  // Each thread first touches the part it will read, so pages sit where it runs.
  pool.parallel_for(count, 4096, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) buffer[i] = static_cast<float>(i & 7);
  });
  double best = 0;
  std::atomic<float> sink{0};
  for (int r = 0; r < repetitions; ++r) {
    const auto start = std::chrono::steady_clock::now();
    pool.parallel_for(count, 4096, [&](int64_t b, int64_t e) {
      const float s = simd::sum_floats(buffer.data() + b, e - b);
      sink.store(s, std::memory_order_relaxed);
    });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, static_cast<double>(buffer_bytes) / seconds);
  }
  return best;
}

}  // namespace glass
