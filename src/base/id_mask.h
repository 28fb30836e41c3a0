// A set of allowed token ids as a bitset (bit id % 64 of words[id / 64]), applied to a
// row of logits: one implementation for the grammar's mask and the sampler's stage.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>

namespace glass {

// Sets logits[id] to -infinity for every id whose bit is clear, and for ids from `size`
// on (padding rows past the vocabulary). A grammar allows few tokens at most steps, so
// whole words of 64 disallowed ids are filled at once.
inline void remove_disallowed_ids(std::span<const uint64_t> words, size_t size, std::span<float> logits) {
  const float neg = -std::numeric_limits<float>::infinity();
  const size_t n = logits.size();
  const size_t covered = std::min({n, size, words.size() * 64});
  float* out = logits.data();
  for (size_t w = 0; w * 64 < covered; ++w) {
    uint64_t bits = words[w];
    const size_t begin = w * 64, end = std::min(covered, begin + 64);
    if (bits == ~uint64_t{0} && end - begin == 64) continue;
    if (bits == 0) {
      std::fill(out + begin, out + end, neg);
      continue;
    }
    if (end - begin < 64) bits |= ~uint64_t{0} << (end - begin);  // past `covered`: filled below
    for (uint64_t zeros = ~bits; zeros != 0; zeros &= zeros - 1) out[begin + static_cast<size_t>(std::countr_zero(zeros))] = neg;
  }
  std::fill(out + covered, out + n, neg);
}

}  // namespace glass
