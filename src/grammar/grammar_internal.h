// The compiled, byte-level form of a grammar (shared by grammar.cpp and matcher.cpp).
//
// Every rule is a list of alternatives; an alternative is a run of elements in `elems`
// ending with an kEnd element. An element is a byte set (matches one byte) or a reference
// to a rule. A matcher position is an index into `elems`.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace glass::grammar::detail {

enum class ElemKind : uint8_t { kBytes, kRef, kEnd };

struct Elem {
  ElemKind kind;
  uint32_t value;  // kBytes: index into byte_sets; kRef: rule id
};

using ByteSet = std::array<uint64_t, 4>;

inline bool byte_set_has(const ByteSet& s, uint8_t b) { return (s[b >> 6] >> (b & 63)) & 1; }

class StateCache;  // matcher.cpp

struct CompiledGrammar {
  std::vector<Elem> elems;
  std::vector<ByteSet> byte_sets;
  std::vector<std::vector<uint32_t>> rule_alts;  // start position of each alternative
  std::vector<std::string> rule_names;
  uint32_t root = 0;
  // Matcher states reached so far, shared by the matchers of this grammar (each locks
  // it). A new matcher takes the current one; once it holds more than
  // kRetireStates states a new matcher starts a fresh one, and the old one lives on
  // with the matchers that use it (so a long-lived grammar's memory stays bounded).
  std::shared_ptr<StateCache> acquire_cache() const;
  size_t retire_states = size_t{1} << 20;
  mutable std::mutex cache_mu;
  mutable std::shared_ptr<StateCache> cache;

  CompiledGrammar();
  ~CompiledGrammar();
  CompiledGrammar(const CompiledGrammar&) = delete;
  CompiledGrammar& operator=(const CompiledGrammar&) = delete;
};

// Makes g.cache (matcher.cpp).
void init_state_cache(CompiledGrammar& g);
// The start state exceeds the matcher's limits (a matcher would be dead from the start).
bool initial_state_too_large(const CompiledGrammar& g);

}  // namespace glass::grammar::detail
