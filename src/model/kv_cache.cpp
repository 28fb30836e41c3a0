#include "model/kv_cache.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/checked_math.h"
#include "base/error.h"

namespace glass {

static_assert(KVCacheOptions{}.block_size == KVCache::kDefaultBlockSize);

uint64_t default_prefix_hash(uint64_t parent, std::span<const int32_t> tokens) {
  // FNV-1a over the parent key and the token bytes, then a final avalanche (splitmix64):
  // the key only picks candidates; the tokens and parent serial decide a match.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  mix(parent);
  for (int32_t t : tokens) mix(static_cast<uint32_t>(t));
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

KVCache::KVCache(const ModelConfig& c, KVType type, int64_t capacity_tokens, int64_t block_size)
    : KVCache(c, type, capacity_tokens, KVCacheOptions{.block_size = block_size}) {}

KVCache::KVCache(const ModelConfig& c, KVType type, int64_t capacity_tokens, KVCacheOptions options)
    : type_(type),
      layers_(static_cast<int>(c.num_layers)),
      block_size_(options.block_size),
      row_bytes_(static_cast<size_t>(c.kv_dim()) * kv_type_size(type)),
      options_(options) {
  if (block_size_ <= 0) fail("KV cache: block size must be positive, got ", block_size_);
  if (capacity_tokens <= 0) fail("KV cache: capacity must be positive, got ", capacity_tokens, " tokens");
  if (options_.hasher == nullptr) options_.hasher = default_prefix_hash;
  block_bytes_ = checked_mul(row_bytes_ * 2 * static_cast<size_t>(layers_), static_cast<size_t>(block_size_),
                             "KV cache block bytes");
  total_blocks_ = blocks_for(capacity_tokens);
  if (total_blocks_ > INT32_MAX) fail("KV cache: ", total_blocks_, " blocks is more than block ids can name");
  arena_bytes_ = checked_mul(block_bytes_, static_cast<size_t>(total_blocks_), "KV cache bytes");
  void* p = ::mmap(nullptr, arena_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    fail("KV cache: cannot reserve ", arena_bytes_, " bytes for ", capacity_tokens, " tokens: ", std::strerror(errno));
  arena_ = static_cast<std::byte*>(p);
  blocks_.resize(static_cast<size_t>(total_blocks_));
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
      sequences_[i] = Sequence{};
      sequences_[i].live = true;
      return static_cast<int32_t>(i);
    }
  }
  sequences_.push_back(Sequence{});
  sequences_.back().live = true;
  return static_cast<int32_t>(sequences_.size() - 1);
}

const KVCache::Sequence& KVCache::seq_ref(int32_t seq) const {
  if (seq < 0 || static_cast<size_t>(seq) >= sequences_.size() || !sequences_[seq].live)
    fail("KV cache: no live sequence ", seq);
  return sequences_[seq];
}

KVCache::Sequence& KVCache::seq_mut(int32_t seq) {
  seq_ref(seq);
  return sequences_[seq];
}

bool KVCache::has_sequence(int32_t seq) const {
  return seq >= 0 && static_cast<size_t>(seq) < sequences_.size() && sequences_[seq].live;
}

void KVCache::hold(int32_t block) {
  Block& b = blocks_[block];
  if (b.refs++ == 0 && b.serial != 0) lru_.erase(b.lru_pos);
}

void KVCache::release(int32_t block) {
  Block& b = blocks_[block];
  if (--b.refs > 0) return;
  if (b.serial != 0) {
    b.lru_pos = lru_.insert(lru_.end(), block);
  } else {
    free_list_.push_back(block);
  }
}

void KVCache::unpublish(int32_t block) {
  Block& b = blocks_[block];
  auto [first, last] = index_.equal_range(b.hash);
  for (auto it = first; it != last; ++it)
    if (it->second == block) {
      index_.erase(it);
      break;
    }
  b.serial = 0;
  b.parent_serial = 0;
  b.hash = 0;
  b.tokens.clear();
}

int32_t KVCache::take_block(Sequence& s) {
  int32_t block;
  if (!free_list_.empty()) {
    block = free_list_.back();
    free_list_.pop_back();
  } else {
    block = lru_.front();  // the caller checked that one is left
    lru_.pop_front();
    unpublish(block);
    ++evicted_;
  }
  blocks_[block].refs = 1;
  if (!blocks_[block].touched) {
    blocks_[block].touched = true;
    ++touched_blocks_;
  }
  if (s.promised > 0) {
    --s.promised;
    --promised_;
  }
  return block;
}

int32_t KVCache::copy_block(Sequence& s, int32_t from) {
  const int32_t copy = take_block(s);
  std::memcpy(arena_ + static_cast<size_t>(copy) * block_bytes_, arena_ + static_cast<size_t>(from) * block_bytes_,
              block_bytes_);
  return copy;
}

void KVCache::remove_sequence(int32_t seq) {
  Sequence& s = seq_mut(seq);
  for (auto it = s.blocks.rbegin(); it != s.blocks.rend(); ++it) release(*it);
  promised_ -= s.promised;
  s = Sequence{};
}

void KVCache::truncate(int32_t seq, int64_t length) {
  Sequence& s = seq_mut(seq);
  if (length < 0) length = 0;
  if (length >= s.length) return;
  s.length = length;
  const auto keep = static_cast<size_t>(blocks_for(length));
  while (s.blocks.size() > keep) {
    release(s.blocks.back());
    s.blocks.pop_back();
  }
  const int64_t full = length / block_size_;
  if (s.published > full) {
    // The chain restarts at the kept full blocks: find their serial again.
    s.published = 0;
    s.chain_hash = 0;
    s.chain_serial = 0;
  }
  if (length % block_size_ != 0) {
    // The last kept block will be written again: it must be this sequence's alone.
    const int32_t old = s.blocks.back();
    if (blocks_[old].refs > 1 || blocks_[old].serial != 0) {
      if (free_list_.empty() && lru_.empty()) fail("KV cache: no block left to copy a shared block into");
      s.blocks.back() = copy_block(s, old);
      release(old);
    }
  }
}

int64_t KVCache::length(int32_t seq) const { return seq_ref(seq).length; }

bool KVCache::reserve(int32_t seq, int64_t positions) {
  Sequence& s = seq_mut(seq);
  const auto need = static_cast<size_t>(blocks_for(positions));
  if (need <= s.blocks.size()) return true;
  if (need - s.blocks.size() > free_list_.size() + lru_.size()) return false;
  while (s.blocks.size() < need) s.blocks.push_back(take_block(s));
  return true;
}

void KVCache::mark_written(int32_t seq, int64_t pos) {
  Sequence& s = seq_mut(seq);
  if (pos + 1 > s.length) s.length = pos + 1;
}

int32_t KVCache::find_cached(uint64_t hash, uint64_t parent_serial, std::span<const int32_t> tokens) const {
  auto [first, last] = index_.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    const Block& b = blocks_[it->second];
    if (b.parent_serial == parent_serial && std::equal(tokens.begin(), tokens.end(), b.tokens.begin(), b.tokens.end()))
      return it->second;
  }
  return -1;
}

KVCache::PrefixMatch KVCache::match_prefix(std::span<const int32_t> tokens) const {
  PrefixMatch m;
  if (!options_.prefix_cache || tokens.empty()) return m;
  const auto bs = static_cast<size_t>(block_size_);
  const size_t most = (tokens.size() - 1) / bs;  // the last token is always computed: its logits are wanted
  uint64_t hash = 0, serial = 0;
  for (size_t i = 0; i < most; ++i) {
    const auto part = tokens.subspan(i * bs, bs);
    hash = options_.hasher(hash, part);
    const int32_t b = find_cached(hash, serial, part);
    if (b < 0) break;
    serial = blocks_[b].serial;
    ++m.blocks;
    m.unheld += blocks_[b].refs == 0;
  }
  return m;
}

int64_t KVCache::attach_prefix(int32_t seq, std::span<const int32_t> tokens) {
  Sequence& s = seq_mut(seq);
  if (static_cast<int64_t>(s.blocks.size()) != s.published || s.length != s.published * block_size_)
    fail("KV cache: a prefix attaches only to a sequence that holds attached blocks alone");
  if (!options_.prefix_cache || tokens.empty()) return s.length;
  const auto bs = static_cast<size_t>(block_size_);
  const size_t most = (tokens.size() - 1) / bs;
  for (auto i = static_cast<size_t>(s.published); i < most; ++i) {
    const auto part = tokens.subspan(i * bs, bs);
    const uint64_t hash = options_.hasher(s.chain_hash, part);
    const int32_t b = find_cached(hash, s.chain_serial, part);
    if (b < 0) break;
    hold(b);
    s.blocks.push_back(b);
    s.chain_hash = hash;
    s.chain_serial = blocks_[b].serial;
    ++s.published;
    if (s.promised > 0) {  // a block it will not have to compute
      --s.promised;
      --promised_;
    }
  }
  s.length = s.published * block_size_;
  return s.length;
}

void KVCache::publish(int32_t seq, std::span<const int32_t> tokens) {
  Sequence& s = seq_mut(seq);
  if (!options_.prefix_cache) return;
  if (static_cast<int64_t>(tokens.size()) < s.length)
    fail("KV cache: publishing ", s.length, " positions with ", tokens.size(), " tokens");
  const auto bs = static_cast<size_t>(block_size_);
  const int64_t full = s.length / block_size_;
  for (; s.published < full; ++s.published) {
    const auto part = tokens.subspan(static_cast<size_t>(s.published) * bs, bs);
    const uint64_t hash = options_.hasher(s.chain_hash, part);
    const int32_t mine = s.blocks[static_cast<size_t>(s.published)];
    int32_t found = find_cached(hash, s.chain_serial, part);
    if (found < 0) {
      // Published as it is: from now on it is read only.
      Block& b = blocks_[mine];
      b.serial = next_serial_++;
      b.parent_serial = s.chain_serial;
      b.hash = hash;
      b.tokens.assign(part.begin(), part.end());
      index_.emplace(hash, mine);
      found = mine;
    }
    // An equal block computed by another sequence stays the published one; this
    // sequence's copy is freed with it, and the chain continues from the published one.
    s.chain_hash = hash;
    s.chain_serial = blocks_[found].serial;
  }
}

bool KVCache::fork(int32_t from, int32_t to) {
  const Sequence& src = seq_ref(from);
  Sequence& dst = seq_mut(to);
  if (!dst.blocks.empty() || dst.length != 0) fail("KV cache: fork into a sequence that is not empty");
  const bool partial = src.length % block_size_ != 0;
  if (partial && free_list_.empty() && lru_.empty()) return false;
  const size_t full = static_cast<size_t>(src.length / block_size_);
  for (size_t i = 0; i < full; ++i) {
    hold(src.blocks[i]);
    dst.blocks.push_back(src.blocks[i]);
  }
  if (partial) {
    dst.blocks.push_back(copy_block(dst, src.blocks[full]));
  }
  dst.length = src.length;
  dst.published = src.published;
  dst.chain_hash = src.chain_hash;
  dst.chain_serial = src.chain_serial;
  return true;
}

bool KVCache::promise(int32_t seq, int64_t blocks) {
  Sequence& s = seq_mut(seq);
  if (blocks < 0) fail("KV cache: a promise of ", blocks, " blocks");
  if (blocks - s.promised > available_blocks()) return false;
  promised_ += blocks - s.promised;
  s.promised = blocks;
  return true;
}

int64_t KVCache::available_blocks() const { return free_blocks() - promised_; }

size_t KVCache::block_offset(int32_t block, int layer, int kv, int64_t pos) const {
  return static_cast<size_t>(block) * block_bytes_ +
         (static_cast<size_t>(layer) * 2 + static_cast<size_t>(kv)) * row_bytes_ * static_cast<size_t>(block_size_) +
         static_cast<size_t>(pos % block_size_) * row_bytes_;
}

std::byte* KVCache::slot(int layer, int kv, int32_t seq, int64_t pos) {
  const Sequence& s = seq_ref(seq);
  return arena_ + block_offset(s.blocks.at(static_cast<size_t>(pos / block_size_)), layer, kv, pos);
}

std::byte* KVCache::write_slot(int layer, int kv, int32_t seq, int64_t pos) {
  const Sequence& s = seq_ref(seq);
  const int32_t block = s.blocks.at(static_cast<size_t>(pos / block_size_));
  const Block& b = blocks_[block];
  if (b.refs != 1 || b.serial != 0)
    fail("KV cache: sequence ", seq, " writes position ", pos, " into block ", block, ", which is ",
         b.serial != 0 ? "published" : "shared", " (a bug)");
  return arena_ + block_offset(block, layer, kv, pos);
}

const std::vector<int32_t>& KVCache::block_table(int32_t seq) const { return seq_ref(seq).blocks; }

const std::byte* KVCache::layer_base(int layer, int kv) const {
  return arena_ + (static_cast<size_t>(layer) * 2 + static_cast<size_t>(kv)) * row_bytes_ * static_cast<size_t>(block_size_);
}

}  // namespace glass
