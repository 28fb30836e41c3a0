// Paged KV cache. Memory is one arena of fixed-size blocks; each block holds
// `block_size` positions of K and V for every layer:
//   block b: [layer][K|V][position in block][kv_heads * head_dim]
// A sequence owns a list of blocks (its block table); blocks of a freed sequence
// return to the pool at once. The arena is reserved virtual memory, so an unused
// budget costs no RAM.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "io/model_config.h"
#include "kernels/kernels.h"

namespace glass {

class KVCache {
 public:
  static constexpr int64_t kDefaultBlockSize = 16;
  // Capacity (in tokens) that holds sequences of these lengths, each rounded up to
  // whole blocks.
  static int64_t capacity_for(const std::vector<int64_t>& lengths, int64_t block_size = kDefaultBlockSize);

  // `capacity_tokens` bounds the positions all sequences together may hold.
  KVCache(const ModelConfig& config, KVType type, int64_t capacity_tokens, int64_t block_size = kDefaultBlockSize);
  ~KVCache();
  KVCache(const KVCache&) = delete;
  KVCache& operator=(const KVCache&) = delete;

  // A new, empty sequence; returns its id.
  int32_t add_sequence();
  // Frees the sequence and its blocks.
  void remove_sequence(int32_t seq);
  // Forgets positions >= length (keeps the blocks that still hold positions).
  void truncate(int32_t seq, int64_t length);
  bool has_sequence(int32_t seq) const;

  // Positions the sequence holds (one past the highest written).
  int64_t length(int32_t seq) const;
  // Ensures blocks exist for positions [0, positions); false when the pool is exhausted
  // (nothing is allocated then).
  bool reserve(int32_t seq, int64_t positions);
  // Records that position `pos` was written.
  void mark_written(int32_t seq, int64_t pos);

  // Where K (kv = 0) or V (kv = 1) of `layer` for (seq, pos) lives; pos must be reserved.
  std::byte* slot(int layer, int kv, int32_t seq, int64_t pos);
  const std::vector<int32_t>& block_table(int32_t seq) const;
  const std::byte* layer_base(int layer, int kv) const;
  size_t block_stride() const { return block_bytes_; }
  int64_t block_size() const { return block_size_; }
  KVType type() const { return type_; }

  int64_t total_blocks() const { return total_blocks_; }
  int64_t free_blocks() const { return static_cast<int64_t>(free_list_.size()); }
  // Rounded up, without overflow for any positions >= 0.
  int64_t blocks_for(int64_t positions) const { return positions / block_size_ + (positions % block_size_ > 0); }
  size_t bytes_per_token() const { return row_bytes_ * 2 * static_cast<size_t>(layers_); }

 private:
  struct Sequence {
    bool live = false;
    int64_t length = 0;
    std::vector<int32_t> blocks;
  };
  const Sequence& seq_ref(int32_t seq) const;

  KVType type_;
  int layers_;
  int64_t block_size_;
  size_t row_bytes_;    // one position of one layer's K (or V)
  size_t block_bytes_;  // one whole block
  int64_t total_blocks_;
  std::byte* arena_ = nullptr;
  size_t arena_bytes_ = 0;
  std::vector<int32_t> free_list_;
  std::vector<Sequence> sequences_;
};

}  // namespace glass
