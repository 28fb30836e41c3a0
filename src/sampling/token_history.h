// The ids a sequence has seen, kept in the shapes the penalties need: every distinct id
// of prompt and output (repetition penalty) and per-id counts over the output
// (presence and frequency penalties). Updated in O(1) per generated token.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace glass {

class TokenHistory {
 public:
  TokenHistory() = default;
  // Ids must be >= 0 (an error names the first bad one).
  explicit TokenHistory(std::span<const int32_t> prompt_ids);

  // Appends one generated token.
  void add_output(int32_t id);

  // Every distinct id of prompt and output, in first-seen order.
  std::span<const int32_t> distinct_ids() const { return distinct_; }
  // (id, count) for every distinct id of the output, in first-seen order.
  std::span<const std::pair<int32_t, int32_t>> output_counts() const { return output_counts_; }

  int64_t prompt_length() const { return prompt_length_; }
  int64_t output_length() const { return output_length_; }

 private:
  void note_seen(int32_t id);
  std::vector<int32_t> distinct_;
  std::unordered_set<int32_t> seen_;
  std::vector<std::pair<int32_t, int32_t>> output_counts_;
  std::unordered_map<int32_t, size_t> output_slot_;
  int64_t prompt_length_ = 0;
  int64_t output_length_ = 0;
};

}  // namespace glass
