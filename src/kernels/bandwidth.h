// The machine's memory read bandwidth, measured: the roofline decode speed is
// compared against.
#pragma once

#include "kernels/thread_pool.h"

namespace glass {

// Reads a buffer much larger than the caches with every thread of `pool`, a few
// times, and returns the best rate in bytes per second.
double measure_read_bandwidth(ThreadPool& pool, size_t buffer_bytes = size_t{512} << 20, int repetitions = 5);

}  // namespace glass
