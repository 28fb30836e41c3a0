// Compiled grammars by their GBNF text, shared by the requests that use the same one:
// compiling is the costly part of a constraint, and a Grammar keeps the matcher states
// and masks it has computed, so a schema's later requests start warm.
#pragma once

#include <cstddef>
#include <list>
#include <mutex>
#include <string>
#include <utility>

#include "grammar/grammar.h"

namespace glass::server {

class GrammarCache {
 public:
  explicit GrammarCache(size_t capacity = 32) : capacity_(capacity) {}

  // The compiled grammar of `gbnf` (compiled now if it is not held; the least recently
  // used is dropped past the capacity). Throws grammar::GrammarError. Thread-safe.
  grammar::Grammar get(const std::string& gbnf);

 private:
  size_t capacity_;
  std::mutex mutex_;
  std::list<std::pair<std::string, grammar::Grammar>> entries_;  // most recently used first
};

}  // namespace glass::server
