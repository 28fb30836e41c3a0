// String -> token id, for vocabularies of ~150k entries: the strings live in one arena
// and the table holds small slots, so loading is a few allocations and lookups take a
// string_view without copying.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace glass {

class TokenIdMap {
 public:
  void reserve(size_t count);
  // False (and no change) when `key` is already present.
  bool insert(std::string_view key, int32_t id);
  // -1 when absent.
  int32_t find(std::string_view key) const {
    if (slots_.empty()) return -1;
    const uint64_t h = hash(key);
    const auto tag = static_cast<uint32_t>(h >> 32);
    for (size_t i = static_cast<size_t>(h) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.entry == kEmpty) return -1;
      if (s.tag == tag) {
        const Entry& e = entries_[s.entry];
        if (key == std::string_view(arena_.data() + e.offset, e.length)) return e.id;
      }
    }
  }
  size_t size() const { return entries_.size(); }

  // Calls f(key, id) for every entry, in insertion order.
  template <class F>
  void for_each(F&& f) const {
    for (const Entry& e : entries_) f(std::string_view(arena_.data() + e.offset, e.length), e.id);
  }

  static uint64_t hash(std::string_view key);

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;
  struct Slot {
    uint32_t tag;    // high half of the hash
    uint32_t entry;  // index into entries_, kEmpty when free
  };
  struct Entry {
    uint64_t offset;
    uint32_t length;
    int32_t id;
  };
  void rehash(size_t capacity);
  std::string arena_;
  std::vector<Entry> entries_;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

}  // namespace glass
