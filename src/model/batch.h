// One forward pass's worth of tokens: each row is a token at a position of a sequence.
// Rows of several sequences can be mixed; `want_logits` picks the rows whose
// next-token logits are returned (a sequence's last real position).
#pragma once

#include <cstdint>
#include <vector>

namespace glass {

struct Batch {
  std::vector<int32_t> tokens;
  std::vector<int32_t> positions;
  std::vector<int32_t> sequences;
  std::vector<uint8_t> want_logits;

  void add(int32_t token, int32_t position, int32_t sequence, bool logits) {
    tokens.push_back(token);
    positions.push_back(position);
    sequences.push_back(sequence);
    want_logits.push_back(logits ? 1 : 0);
  }
  int64_t size() const { return static_cast<int64_t>(tokens.size()); }
  int64_t logit_rows() const {
    int64_t n = 0;
    for (uint8_t w : want_logits) n += w;
    return n;
  }
  void clear() {
    tokens.clear();
    positions.clear();
    sequences.clear();
    want_logits.clear();
  }

  // Positions start..start+ids.size()-1 of one sequence; logits for the last row
  // only, or for every row.
  static Batch prompt(const std::vector<int32_t>& ids, int32_t sequence, int32_t start, bool all_logits) {
    Batch b;
    for (size_t i = 0; i < ids.size(); ++i)
      b.add(ids[i], start + static_cast<int32_t>(i), sequence, all_logits || i + 1 == ids.size());
    return b;
  }
};

}  // namespace glass
