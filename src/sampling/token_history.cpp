#include "sampling/token_history.h"

#include "base/error.h"

namespace glass {

TokenHistory::TokenHistory(std::span<const int32_t> prompt_ids) {
  for (int32_t id : prompt_ids) {
    if (id < 0) fail("TokenHistory: prompt token id must be >= 0, got ", id);
    note_seen(id);
  }
  prompt_length_ = static_cast<int64_t>(prompt_ids.size());
}

void TokenHistory::note_seen(int32_t id) {
  if (seen_.insert(id).second) distinct_.push_back(id);
}

void TokenHistory::add_output(int32_t id) {
  if (id < 0) fail("TokenHistory: generated token id must be >= 0, got ", id);
  note_seen(id);
  auto [it, inserted] = output_slot_.emplace(id, output_counts_.size());
  if (inserted) output_counts_.push_back({id, 0});
  ++output_counts_[it->second].second;
  ++output_length_;
}

}  // namespace glass
