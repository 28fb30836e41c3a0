#include "model/kv_cache.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/checked_math.h"
#include "base/error.h"

namespace glass {

KVCache::KVCache(const ModelConfig& c, KVType type, int64_t capacity_tokens, int64_t block_size)
    : type_(type),
      layers_(static_cast<int>(c.num_layers)),
      block_size_(block_size),
      row_bytes_(static_cast<size_t>(c.kv_dim()) * kv_type_size(type)) {
  if (block_size <= 0) fail("KV cache: block size must be positive, got ", block_size);
  if (capacity_tokens <= 0) fail("KV cache: capacity must be positive, got ", capacity_tokens, " tokens");
  block_bytes_ = checked_mul(row_bytes_ * 2 * static_cast<size_t>(layers_), static_cast<size_t>(block_size_),
                             "KV cache block bytes");
  total_blocks_ = blocks_for(capacity_tokens);
  arena_bytes_ = checked_mul(block_bytes_, static_cast<size_t>(total_blocks_), "KV cache bytes");
  void* p = ::mmap(nullptr, arena_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    fail("KV cache: cannot reserve ", arena_bytes_, " bytes for ", capacity_tokens, " tokens: ", std::strerror(errno));
  arena_ = static_cast<std::byte*>(p);
  free_list_.reserve(static_cast<size_t>(total_blocks_));
  for (int64_t b = total_blocks_ - 1; b >= 0; --b) free_list_.push_back(static_cast<int32_t>(b));
}

int64_t KVCache::capacity_for(const std::vector<int64_t>& lengths, int64_t block_size) {
  int64_t total = 0;
  for (int64_t n : lengths)
    total = checked_add(total, (std::max<int64_t>(n, 1) + block_size - 1) / block_size * block_size, "KV cache capacity");
  return std::max<int64_t>(total, block_size);
}

KVCache::~KVCache() {
  if (arena_ != nullptr) ::munmap(arena_, arena_bytes_);
}

int32_t KVCache::add_sequence() {
  for (size_t i = 0; i < sequences_.size(); ++i) {
    if (!sequences_[i].live) {
      sequences_[i] = Sequence{true, 0, {}};
      return static_cast<int32_t>(i);
    }
  }
  sequences_.push_back(Sequence{true, 0, {}});
  return static_cast<int32_t>(sequences_.size() - 1);
}

const KVCache::Sequence& KVCache::seq_ref(int32_t seq) const {
  if (seq < 0 || static_cast<size_t>(seq) >= sequences_.size() || !sequences_[seq].live)
    fail("KV cache: no live sequence ", seq);
  return sequences_[seq];
}

bool KVCache::has_sequence(int32_t seq) const {
  return seq >= 0 && static_cast<size_t>(seq) < sequences_.size() && sequences_[seq].live;
}

void KVCache::remove_sequence(int32_t seq) {
  seq_ref(seq);
  Sequence& s = sequences_[seq];
  for (auto it = s.blocks.rbegin(); it != s.blocks.rend(); ++it) free_list_.push_back(*it);
  s = Sequence{};
}

void KVCache::truncate(int32_t seq, int64_t length) {
  seq_ref(seq);
  Sequence& s = sequences_[seq];
  if (length < 0) length = 0;
  if (length >= s.length) return;
  s.length = length;
  const auto keep = static_cast<size_t>(blocks_for(length));
  while (s.blocks.size() > keep) {
    free_list_.push_back(s.blocks.back());
    s.blocks.pop_back();
  }
}

int64_t KVCache::length(int32_t seq) const { return seq_ref(seq).length; }

bool KVCache::reserve(int32_t seq, int64_t positions) {
  seq_ref(seq);
  Sequence& s = sequences_[seq];
  const auto need = static_cast<size_t>(blocks_for(positions));
  if (need <= s.blocks.size()) return true;
  if (need - s.blocks.size() > free_list_.size()) return false;
  while (s.blocks.size() < need) {
    s.blocks.push_back(free_list_.back());
    free_list_.pop_back();
  }
  return true;
}

void KVCache::mark_written(int32_t seq, int64_t pos) {
  seq_ref(seq);
  Sequence& s = sequences_[seq];
  if (pos + 1 > s.length) s.length = pos + 1;
}

std::byte* KVCache::slot(int layer, int kv, int32_t seq, int64_t pos) {
  const Sequence& s = seq_ref(seq);
  const int32_t block = s.blocks.at(static_cast<size_t>(pos / block_size_));
  return arena_ + static_cast<size_t>(block) * block_bytes_ +
         (static_cast<size_t>(layer) * 2 + static_cast<size_t>(kv)) * row_bytes_ * static_cast<size_t>(block_size_) +
         static_cast<size_t>(pos % block_size_) * row_bytes_;
}

const std::vector<int32_t>& KVCache::block_table(int32_t seq) const { return seq_ref(seq).blocks; }

const std::byte* KVCache::layer_base(int layer, int kv) const {
  return arena_ + (static_cast<size_t>(layer) * 2 + static_cast<size_t>(kv)) * row_bytes_ * static_cast<size_t>(block_size_);
}

}  // namespace glass
