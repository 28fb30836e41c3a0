// A cache of piece -> ids for one encode() call. Words repeat (Zipf), so long texts
// spend most of their BPE time on pieces already seen. It lives in the call's scratch
// space, so encode() stays const, thread-safe and deterministic (a hit returns exactly
// what BPE returned for the same bytes).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace glass {

class PieceCache {
 public:
  // Pieces longer than this are not cached (rare, and they would crowd the arena).
  static constexpr size_t kMaxPieceBytes = 256;
  // At most this many entries; once full, new pieces are encoded and not cached.
  static constexpr size_t kMaxEntries = 1 << 16;

  // Appends the cached ids of `piece` to `out` and returns true, or returns false.
  bool lookup(std::string_view piece, uint64_t hash, std::vector<int32_t>& out) const;
  // Caches `ids` for `piece` (not already present).
  void insert(std::string_view piece, uint64_t hash, const int32_t* ids, size_t count);

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t key_offset = 0, key_length = 0;
    uint32_t ids_offset = 0, ids_length = 0;
  };
  static constexpr uint32_t kFree = UINT32_MAX;
  void grow();
  std::vector<Slot> slots_;
  size_t mask_ = 0, size_ = 0;
  std::string keys_;
  std::vector<int32_t> ids_;
};

}  // namespace glass
