// The sampler's random number generator: fixed algorithms, so one seed gives the same
// stream on every machine, compiler and standard library.
//
//   - State: xoshiro256** (Blackman & Vigna, 2018), 256 bits, period 2^256 - 1.
//   - Seeding: the four state words are the first four outputs of SplitMix64(seed),
//     as the xoshiro authors recommend; a 64-bit seed never gives the all-zero state.
//   - Uniform double: the top 53 bits of one 64-bit output times 2^-53, so every value
//     is a multiple of 2^-53 in [0, 1).
// std::uniform_real_distribution and std::discrete_distribution are deliberately not
// used: their outputs differ between standard libraries.
#pragma once

#include <array>
#include <cstdint>

namespace glass {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();

 private:
  uint64_t state_;
};

class Rng {
 public:
  // Seeds the state from SplitMix64(seed).
  explicit Rng(uint64_t seed);
  // Uses `state` as given (for tests against the reference implementation); it must
  // not be all zero.
  static Rng from_state(const std::array<uint64_t, 4>& state);

  uint64_t next_u64();
  // Uniform in [0, 1), a multiple of 2^-53.
  double next_double();

  const std::array<uint64_t, 4>& state() const { return s_; }

 private:
  Rng() = default;
  std::array<uint64_t, 4> s_{};
};

// A seed from the operating system's entropy source, for runs without --seed.
// Report it so the run can be repeated.
uint64_t random_seed();

}  // namespace glass
