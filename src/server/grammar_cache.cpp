#include "server/grammar_cache.h"

namespace glass::server {

grammar::Grammar GrammarCache::get(const std::string& gbnf) {
  {
    std::lock_guard lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (it->first == gbnf) {
        entries_.splice(entries_.begin(), entries_, it);
        return it->second;
      }
  }
  // Compiled outside the lock: one request's big grammar does not hold up the others.
  grammar::Grammar compiled = grammar::Grammar::from_gbnf(gbnf);
  std::lock_guard lock(mutex_);
  entries_.emplace_front(gbnf, compiled);
  while (entries_.size() > capacity_) entries_.pop_back();
  return compiled;
}

}  // namespace glass::server
