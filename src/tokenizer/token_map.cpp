#include "tokenizer/token_map.h"

#include <cstring>

namespace glass {

uint64_t TokenIdMap::hash(std::string_view key) {
  // A multiply-rotate hash over 8-byte words; vocabulary strings are short.
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t h = 0x243F6A8885A308D3ull ^ (key.size() * kMul);
  const char* p = key.data();
  size_t n = key.size();
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = ((h ^ w) * kMul);
    h ^= h >> 29;
    p += 8;
    n -= 8;
  }
  uint64_t w = 0;
  if (n != 0) std::memcpy(&w, p, n);
  h = (h ^ w) * kMul;
  h ^= h >> 32;
  h *= 0xD6E8FEB86659FD93ull;
  h ^= h >> 32;
  return h;
}

void TokenIdMap::reserve(size_t count) {
  entries_.reserve(count);
  size_t capacity = 16;
  while (capacity < count + count / 2) capacity <<= 1;
  if (capacity > slots_.size()) rehash(capacity);
}

void TokenIdMap::rehash(size_t capacity) {
  slots_.assign(capacity, Slot{0, kEmpty});
  mask_ = capacity - 1;
  for (size_t e = 0; e < entries_.size(); ++e) {
    const Entry& en = entries_[e];
    const uint64_t h = hash(std::string_view(arena_.data() + en.offset, en.length));
    size_t i = static_cast<size_t>(h) & mask_;
    while (slots_[i].entry != kEmpty) i = (i + 1) & mask_;
    slots_[i] = {static_cast<uint32_t>(h >> 32), static_cast<uint32_t>(e)};
  }
}

bool TokenIdMap::insert(std::string_view key, int32_t id) {
  if ((entries_.size() + 1) * 3 > slots_.size() * 2) rehash(slots_.empty() ? 16 : slots_.size() * 2);
  const uint64_t h = hash(key);
  const auto tag = static_cast<uint32_t>(h >> 32);
  size_t i = static_cast<size_t>(h) & mask_;
  for (; slots_[i].entry != kEmpty; i = (i + 1) & mask_) {
    const Entry& e = entries_[slots_[i].entry];
    if (slots_[i].tag == tag && key == std::string_view(arena_.data() + e.offset, e.length)) return false;
  }
  slots_[i] = {tag, static_cast<uint32_t>(entries_.size())};
  entries_.push_back({arena_.size(), static_cast<uint32_t>(key.size()), id});
  arena_.append(key);
  return true;
}

}  // namespace glass
