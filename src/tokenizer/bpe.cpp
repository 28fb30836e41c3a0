#include "tokenizer/bpe.h"

#include <algorithm>
#include <bit>
#include <functional>

#include "tokenizer/byte_level.h"

namespace glass {

void MergeTable::reserve(size_t count) {
  size_t capacity = 16;
  while (capacity < count * 2) capacity <<= 1;
  if (capacity > entries_.size()) rehash(capacity);
}

void MergeTable::rehash(size_t capacity) {
  std::vector<Entry> old = std::move(entries_);
  entries_.assign(capacity, Entry{kEmpty, kNone});
  mask_ = capacity - 1;
  shift_ = 64 - std::countr_zero(capacity);
  size_ = 0;
  for (const Entry& e : old)
    if (e.key != kEmpty) insert(static_cast<int32_t>(e.key >> 32), static_cast<int32_t>(e.key & 0xFFFFFFFFu), e.merge);
}

void MergeTable::insert(int32_t left, int32_t right, Merge merge) {
  if ((size_ + 1) * 2 > entries_.size()) rehash(std::max<size_t>(16, entries_.size() * 2));
  const uint64_t key = pack(left, right);
  size_t i = slot(key);
  while (entries_[i].key != kEmpty && entries_[i].key != key) i = (i + 1) & mask_;
  if (entries_[i].key == kEmpty) ++size_;
  entries_[i] = {key, merge};
}

BpeModel::BpeModel(TokenIdMap vocab,
                   const std::vector<std::pair<int32_t, int32_t>>& merges, const std::vector<int32_t>& merged_ids,
                   BpeOptions options)
    : vocab_(std::move(vocab)), options_(options) {
  for (int b = 0; b < 256; ++b) {
    byte_ids_[b] = vocab_.find(byte_level::encode(std::string(1, static_cast<char>(b))));
  }
  merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank)
    merges_.insert(merges[rank].first, merges[rank].second,
                   {static_cast<int32_t>(rank), merged_ids[rank]});
}

int32_t BpeModel::token_id(std::string_view token) const { return vocab_.find(token); }

namespace {
// Pieces up to this many symbols use the quadratic scan over a flat array (fast for
// short words); longer ones use a heap.
constexpr size_t kSmallPiece = 96;
}  // namespace

void BpeModel::encode(std::string_view piece, std::vector<int32_t>& out) const {
  if (piece.empty()) return;
  if (options_.ignore_merges) {
    const int32_t id = vocab_.find(byte_level::encode(piece));
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  int32_t small[kSmallPiece];
  std::vector<int32_t> large;
  int32_t* ids = small;
  if (piece.size() > kSmallPiece) {
    large.resize(piece.size());
    ids = large.data();
  }
  size_t n = 0;
  bool previous_unknown = false;
  for (char c : piece) {
    const int32_t id = byte_ids_[static_cast<uint8_t>(c)];
    if (id >= 0) {
      ids[n++] = id;
      previous_unknown = false;
    } else if (options_.unk_id >= 0) {
      // The unknown token takes part in merges like any symbol, as in Hugging Face.
      if (!(options_.fuse_unk && previous_unknown)) ids[n++] = options_.unk_id;
      previous_unknown = true;
    }
    // Without an unk token the byte is dropped, as Hugging Face's BPE does.
  }
  if (n == 0) return;
  if (n <= kSmallPiece)
    merge_small(ids, n, out);
  else
    merge_large(ids, n, out);
}

void BpeModel::merge_small(int32_t* ids, size_t n, std::vector<int32_t>& out) const {
  // ranks[i]: the merge of (ids[i], ids[i+1]).
  MergeTable::Merge merge[kSmallPiece];
  for (size_t i = 0; i + 1 < n; ++i) merge[i] = merges_.find(ids[i], ids[i + 1]);
  while (n > 1) {
    size_t best = 0;
    int32_t best_rank = merge[0].rank;
    for (size_t i = 1; i + 1 < n; ++i)
      if (merge[i].rank < best_rank) best_rank = merge[i].rank, best = i;
    if (best_rank == INT32_MAX) break;
    ids[best] = merge[best].merged;
    // Close the gap left by ids[best + 1].
    for (size_t i = best + 1; i + 1 < n; ++i) ids[i] = ids[i + 1];
    for (size_t i = best + 1; i + 2 < n; ++i) merge[i] = merge[i + 1];
    --n;
    if (best > 0) merge[best - 1] = merges_.find(ids[best - 1], ids[best]);
    if (best + 1 < n) merge[best] = merges_.find(ids[best], ids[best + 1]);
  }
  out.insert(out.end(), ids, ids + n);
}

void BpeModel::merge_large(const int32_t* initial, size_t n, std::vector<int32_t>& out) const {
  // Symbols in a doubly linked list; candidate merges in a min-heap of (rank << 32 | position),
  // which orders them by rank, then leftmost first. Entries go stale when a neighbour
  // changes; a stale entry is recognised because the pair at its position no longer has
  // that rank (a rank names exactly one pair).
  struct Symbol {
    int32_t id;
    int32_t prev, next;  // -1 at the ends
  };
  std::vector<Symbol> sym(n);
  std::vector<bool> alive(n, true);
  for (size_t i = 0; i < n; ++i)
    sym[i] = {initial[i], static_cast<int32_t>(i) - 1, i + 1 < n ? static_cast<int32_t>(i + 1) : -1};
  std::vector<uint64_t> heap;
  heap.reserve(n);
  const auto key = [](int32_t rank, int32_t pos) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(rank)) << 32) | static_cast<uint32_t>(pos);
  };
  for (size_t i = 0; i + 1 < n; ++i) {
    const MergeTable::Merge m = merges_.find(sym[i].id, sym[i + 1].id);
    if (m.merged >= 0) heap.push_back(key(m.rank, static_cast<int32_t>(i)));
  }
  std::make_heap(heap.begin(), heap.end(), std::greater<>());
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    const uint64_t top = heap.back();
    heap.pop_back();
    const auto rank = static_cast<int32_t>(top >> 32);
    const auto pos = static_cast<int32_t>(top & 0xFFFFFFFFu);
    Symbol& left = sym[static_cast<size_t>(pos)];
    if (!alive[static_cast<size_t>(pos)] || left.next < 0) continue;
    Symbol& right = sym[static_cast<size_t>(left.next)];
    const MergeTable::Merge now = merges_.find(left.id, right.id);
    if (now.rank != rank) continue;
    left.id = now.merged;
    alive[static_cast<size_t>(left.next)] = false;
    left.next = right.next;
    if (right.next >= 0) sym[static_cast<size_t>(right.next)].prev = pos;
    if (left.prev >= 0) {
      const MergeTable::Merge m = merges_.find(sym[static_cast<size_t>(left.prev)].id, left.id);
      if (m.merged >= 0) {
        heap.push_back(key(m.rank, left.prev));
        std::push_heap(heap.begin(), heap.end(), std::greater<>());
      }
    }
    if (left.next >= 0) {
      const MergeTable::Merge m = merges_.find(left.id, sym[static_cast<size_t>(left.next)].id);
      if (m.merged >= 0) {
        heap.push_back(key(m.rank, pos));
        std::push_heap(heap.begin(), heap.end(), std::greater<>());
      }
    }
  }
  for (int32_t i = 0; i >= 0; i = sym[static_cast<size_t>(i)].next) out.push_back(sym[static_cast<size_t>(i)].id);
}

}  // namespace glass
