// Paged KV cache. Memory is one arena of fixed-size blocks; each block holds
// `block_size` positions of K and V for every layer:
//   block b: [layer][K|V][position in block][kv_heads * head_dim]
// A sequence holds a list of blocks (its block table). The arena is reserved virtual
// memory, so an unused budget costs no RAM.
//
// Prefix caching (vLLM's automatic prefix caching): a full block whose positions are
// all written can be published under the tokens it holds and the blocks before it. A
// new sequence whose prompt starts with published blocks attaches them instead of
// computing them again; they are shared read-only and reference-counted. A published
// block no sequence holds stays cached until its memory is needed, least recently used
// first. The index key is a hash of the block's tokens and of its parent's hash, but a
// match is decided by the tokens and the parent block's serial (a number never reused),
// so a hash collision, or a parent evicted and its memory reused, never matches.
//
// Budgets: a sequence may be promised the fresh blocks it will need at worst; blocks
// promised and not yet taken are not offered to others (available_blocks()), so a
// forward pass never finds the pool empty and a block in use is never evicted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

#include "io/model_config.h"
#include "kernels/kernels.h"

namespace glass {

// The index key of a full block: its tokens and its parent's key (0 for the first).
using PrefixHasher = uint64_t (*)(uint64_t parent, std::span<const int32_t> tokens);
uint64_t default_prefix_hash(uint64_t parent, std::span<const int32_t> tokens);

struct KVCacheOptions {
  int64_t block_size = 16;
  bool prefix_cache = true;
  PrefixHasher hasher = default_prefix_hash;  // tests inject a weak one
};

class KVCache {
 public:
  static constexpr int64_t kDefaultBlockSize = 16;
  // Capacity (in tokens) that holds sequences of these lengths, each rounded up to
  // whole blocks.
  static int64_t capacity_for(const std::vector<int64_t>& lengths, int64_t block_size = kDefaultBlockSize);

  // `capacity_tokens` bounds the positions all sequences together may hold.
  KVCache(const ModelConfig& config, KVType type, int64_t capacity_tokens, int64_t block_size = kDefaultBlockSize);
  KVCache(const ModelConfig& config, KVType type, int64_t capacity_tokens, KVCacheOptions options);
  ~KVCache();
  KVCache(const KVCache&) = delete;
  KVCache& operator=(const KVCache&) = delete;

  // A new, empty sequence; returns its id.
  int32_t add_sequence();
  // Drops the sequence: its blocks go back to the pool (published ones stay cached) and
  // what it was promised and did not take is released.
  void remove_sequence(int32_t seq);
  // Forgets positions >= length (keeps the blocks that still hold positions; a shared
  // or published block that would be written again is copied first).
  void truncate(int32_t seq, int64_t length);
  bool has_sequence(int32_t seq) const;

  // Positions the sequence holds (one past the highest written).
  int64_t length(int32_t seq) const;
  // Ensures blocks exist for positions [0, positions), taking free blocks first, then
  // evicting cached ones; false when neither is left (nothing is allocated then).
  bool reserve(int32_t seq, int64_t positions);
  // Records that position `pos` was written.
  void mark_written(int32_t seq, int64_t pos);

  // --- prefix caching ---
  bool prefix_cache() const { return options_.prefix_cache; }
  // Full blocks that start `tokens` and are cached (none when prefix caching is off),
  // leaving at least one token to compute, and how many of them no sequence holds now
  // (attaching takes those off the pool).
  struct PrefixMatch {
    int64_t blocks = 0;
    int64_t unheld = 0;
  };
  PrefixMatch match_prefix(std::span<const int32_t> tokens) const;
  // Attaches the cached blocks that start `tokens` to a sequence that holds nothing
  // else yet (empty, or only blocks attached before: those published since are added);
  // returns the positions it then holds (a multiple of the block size, less than
  // tokens.size()). Each block attached is one less fresh block its promise keeps.
  int64_t attach_prefix(int32_t seq, std::span<const int32_t> tokens);
  // Publishes the sequence's full, written blocks not published yet; `tokens` are the
  // ids at its positions (at least length(seq) of them).
  void publish(int32_t seq, std::span<const int32_t> tokens);
  // Makes `to` (a new, empty sequence) hold what `from` holds: full blocks shared, the
  // last partial block copied (it will be written). Takes from `to`'s promise.
  // False when no block is left for the copy.
  bool fork(int32_t from, int32_t to);

  // --- budgets ---
  // Promises the sequence `blocks` fresh blocks over its life (replacing an earlier
  // promise); false when available_blocks() cannot cover it (nothing changes then).
  bool promise(int32_t seq, int64_t blocks);
  // Blocks a new promise can have: free and evictable ones, less those promised.
  int64_t available_blocks() const;
  // Blocks promised and not yet taken, over every sequence.
  int64_t promised_blocks() const { return promised_; }

  // Where K (kv = 0) or V (kv = 1) of `layer` for (seq, pos) lives; pos must be reserved.
  // For reading; writes go through write_slot.
  std::byte* slot(int layer, int kv, int32_t seq, int64_t pos);
  // As slot(), for a block the sequence holds alone and has not published: writing a
  // shared or cached block would change what other sequences read (glass::Error).
  std::byte* write_slot(int layer, int kv, int32_t seq, int64_t pos);
  const std::vector<int32_t>& block_table(int32_t seq) const;
  const std::byte* layer_base(int layer, int kv) const;
  size_t block_stride() const { return block_bytes_; }
  int64_t block_size() const { return block_size_; }
  KVType type() const { return type_; }

  int64_t total_blocks() const { return total_blocks_; }
  // Blocks no sequence holds: never used or freed, and cached ones (evictable).
  int64_t free_blocks() const { return static_cast<int64_t>(free_list_.size() + lru_.size()); }
  // Cached blocks no sequence holds (kept for later prompts, evictable).
  int64_t cached_blocks() const { return static_cast<int64_t>(lru_.size()); }
  // Blocks published under their tokens (held or not).
  int64_t published_blocks() const { return static_cast<int64_t>(index_.size()); }
  // Cached blocks evicted so far to make room.
  int64_t evicted_blocks() const { return evicted_; }
  // Rounded up, without overflow for any positions >= 0.
  int64_t blocks_for(int64_t positions) const { return positions / block_size_ + (positions % block_size_ > 0); }
  size_t bytes_per_token() const { return row_bytes_ * 2 * static_cast<size_t>(layers_); }
  // Bytes of the blocks ever taken: what the cache has committed of its reserved arena
  // (memory reports: "KV cache" in peak memory's parts).
  size_t committed_bytes() const { return static_cast<size_t>(touched_blocks_) * block_bytes_; }

 private:
  struct Sequence {
    bool live = false;
    int64_t length = 0;
    std::vector<int32_t> blocks;
    int64_t published = 0;     // leading blocks published (or found published)
    uint64_t chain_hash = 0;   // index key of the last of them
    uint64_t chain_serial = 0; // its serial
    int64_t promised = 0;      // fresh blocks promised and not yet taken
  };
  struct Block {
    int32_t refs = 0;            // sequences holding it
    bool touched = false;        // taken at least once: its pages are committed
    uint64_t serial = 0;         // nonzero while published
    uint64_t parent_serial = 0;  // the block before it when published (0: first)
    uint64_t hash = 0;
    std::vector<int32_t> tokens;            // what it was published under
    std::list<int32_t>::iterator lru_pos;   // in lru_ while published and unheld
  };
  const Sequence& seq_ref(int32_t seq) const;
  Sequence& seq_mut(int32_t seq);
  // A cached block whose parent has `parent_serial` and whose tokens are `tokens`, or -1.
  int32_t find_cached(uint64_t hash, uint64_t parent_serial, std::span<const int32_t> tokens) const;
  // A block for `s` to write: free, else the least recently used cached one.
  int32_t take_block(Sequence& s);
  // A block for `s` holding a copy of block `from` (copy-on-write); one must be left.
  int32_t copy_block(Sequence& s, int32_t from);
  void hold(int32_t block);
  void release(int32_t block);
  void unpublish(int32_t block);
  size_t block_offset(int32_t block, int layer, int kv, int64_t pos) const;

  KVType type_;
  int layers_;
  int64_t block_size_;
  size_t row_bytes_;    // one position of one layer's K (or V)
  size_t block_bytes_;  // one whole block
  int64_t total_blocks_;
  int64_t touched_blocks_ = 0;
  std::byte* arena_ = nullptr;
  size_t arena_bytes_ = 0;
  KVCacheOptions options_;
  std::vector<int32_t> free_list_;
  std::vector<Sequence> sequences_;
  std::vector<Block> blocks_;
  std::unordered_multimap<uint64_t, int32_t> index_;  // published blocks by hash
  std::list<int32_t> lru_;  // published, unheld blocks; least recently released first
  uint64_t next_serial_ = 1;
  int64_t promised_ = 0;
  int64_t evicted_ = 0;
};

}  // namespace glass
