#include "tokenizer/piece_cache.h"

namespace glass {

bool PieceCache::lookup(std::string_view piece, uint64_t hash, std::vector<int32_t>& out) const {
  if (slots_.empty()) return false;
  for (size_t i = static_cast<size_t>(hash) & mask_;; i = (i + 1) & mask_) {
    const Slot& s = slots_[i];
    if (s.key_length == kFree) return false;
    if (s.hash == hash && std::string_view(keys_.data() + s.key_offset, s.key_length) == piece) {
      out.insert(out.end(), ids_.begin() + s.ids_offset, ids_.begin() + s.ids_offset + s.ids_length);
      return true;
    }
  }
}

void PieceCache::grow() {
  std::vector<Slot> old = std::move(slots_);
  const size_t capacity = old.empty() ? 1024 : old.size() * 2;
  slots_.assign(capacity, Slot{0, 0, kFree, 0, 0});
  mask_ = capacity - 1;
  for (const Slot& s : old) {
    if (s.key_length == kFree) continue;
    size_t i = static_cast<size_t>(s.hash) & mask_;
    while (slots_[i].key_length != kFree) i = (i + 1) & mask_;
    slots_[i] = s;
  }
}

void PieceCache::insert(std::string_view piece, uint64_t hash, const int32_t* ids, size_t count) {
  if (piece.size() > kMaxPieceBytes || size_ >= kMaxEntries) return;
  if ((size_ + 1) * 2 > slots_.size()) grow();
  size_t i = static_cast<size_t>(hash) & mask_;
  while (slots_[i].key_length != kFree) i = (i + 1) & mask_;
  slots_[i] = {hash, static_cast<uint32_t>(keys_.size()), static_cast<uint32_t>(piece.size()),
               static_cast<uint32_t>(ids_.size()), static_cast<uint32_t>(count)};
  keys_.append(piece);
  ids_.insert(ids_.end(), ids, ids + count);
  ++size_;
}

}  // namespace glass
