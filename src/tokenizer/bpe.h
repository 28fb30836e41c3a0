// Byte-level BPE: a piece's bytes become the ids of their alphabet characters, then the
// adjacent pair with the lowest merge rank is merged (leftmost first on ties) until no
// pair has a merge. This is exactly the order of Hugging Face's priority-queue BPE.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/token_map.h"

namespace glass {

// (left id, right id) -> (rank, merged id), open addressing on a 64-bit key.
class MergeTable {
 public:
  struct Merge {
    int32_t rank;
    int32_t merged;
  };
  static constexpr Merge kNone{INT32_MAX, -1};

  void reserve(size_t count);
  // A later merge of the same pair replaces the earlier one (Hugging Face collects the
  // merges into a map the same way).
  void insert(int32_t left, int32_t right, Merge merge);
  Merge find(int32_t left, int32_t right) const {
    const uint64_t key = pack(left, right);
    size_t i = slot(key);
    while (true) {
      const Entry& e = entries_[i];
      if (e.key == key) return e.merge;
      if (e.key == kEmpty) return kNone;
      i = (i + 1) & mask_;
    }
  }
  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kEmpty = ~0ull;
  struct Entry {
    uint64_t key;
    Merge merge;
  };
  static uint64_t pack(int32_t l, int32_t r) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(r);
  }
  size_t slot(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_) & mask_; }
  void rehash(size_t capacity);
  std::vector<Entry> entries_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

struct BpeOptions {
  int32_t unk_id = -1;        // id for a byte whose character is not in the vocabulary; -1: drop it
  bool fuse_unk = false;      // consecutive unknowns become one
  bool ignore_merges = false; // a piece that is itself in the vocabulary is that one token
};

class BpeModel {
 public:
  // `vocab`: alphabet strings to ids; `merges`: pairs of vocabulary strings by rank.
  // Validation (unknown tokens, missing merge results) is the loader's job: it names the
  // file; here a merge must already be resolved to ids.
  BpeModel(TokenIdMap vocab, const std::vector<std::pair<int32_t, int32_t>>& merges,
           const std::vector<int32_t>& merged_ids, BpeOptions options);

  // Appends the ids of one pre-tokenized piece (raw bytes).
  void encode(std::string_view piece, std::vector<int32_t>& out) const;

  // The id of a vocabulary string (alphabet form), or -1.
  int32_t token_id(std::string_view token) const;
  const TokenIdMap& vocab() const { return vocab_; }
  int32_t byte_id(uint8_t b) const { return byte_ids_[b]; }
  const MergeTable& merges() const { return merges_; }

 private:
  void merge_small(int32_t* ids, size_t n, std::vector<int32_t>& out) const;
  void merge_large(const int32_t* ids, size_t n, std::vector<int32_t>& out) const;

  TokenIdMap vocab_;
  int32_t byte_ids_[256];
  MergeTable merges_;
  BpeOptions options_;
};

}  // namespace glass
