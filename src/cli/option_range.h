// Ranges of numeric command-line options, checked before anything they size is loaded or
// allocated (docs/reliability.md lists them).
#pragma once

#include <cstdint>
#include <utility>

#include "base/error.h"
#include "io/model_config.h"

namespace glass::cli {

// Context lengths (--ctx-size) and token counts (bench -p / -n): at most a config's
// max_position_embeddings can be.
inline constexpr int64_t kMaxContextOption = ConfigLimits::kPositions;
// glass serve
inline constexpr int64_t kMaxParallel = 1024;           // --parallel: sequences in one forward pass
inline constexpr int64_t kMaxQueue = 4096;              // --queue: each waiting request holds an HTTP thread
inline constexpr int64_t kMaxKvBudgetMb = int64_t{1} << 24;  // --kv-budget-mb: 16 TiB
inline constexpr int64_t kMaxPrefillChunk = 65536;      // --prefill-chunk
inline constexpr int64_t kMaxBodyMb = 1024;             // --max-body-mb
inline constexpr int64_t kMaxConnections = 16384;       // --max-connections: a thread each
inline constexpr int64_t kMaxResponsesStore = 1'000'000;  // --responses-store: each a conversation in memory
// glass run --show-top, glass trace --top-k / --first
inline constexpr int64_t kMaxShowTop = 1000;
inline constexpr int64_t kMaxFirstValues = 4096;

// glass::Error "<flag>: must be between lo and hi, got v" unless lo <= v <= hi.
template <class T>
void check_range(const char* flag, T value, int64_t lo, int64_t hi) {
  if (std::cmp_less(value, lo) || std::cmp_greater(value, hi)) fail(flag, ": must be between ", lo, " and ", hi, ", got ", value);
}

}  // namespace glass::cli
