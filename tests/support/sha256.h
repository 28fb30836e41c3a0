// SHA-256 (FIPS 180-4), for tests that compare data with published checksums.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace glass::test {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  std::array<uint8_t, 32> digest();  // ends the hash: call once
  std::string hex_digest();          // the digest as 64 lowercase hex digits

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> pending_{};
  size_t pending_size_ = 0;
  uint64_t total_bytes_ = 0;
};

// The hex SHA-256 of `size` bytes at `data`.
std::string sha256_hex(const void* data, size_t size);
inline std::string sha256_hex(std::string_view s) { return sha256_hex(s.data(), s.size()); }

}  // namespace glass::test
