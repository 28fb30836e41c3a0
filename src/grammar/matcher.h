// Incremental matching of a Grammar over bytes, and the per-step token mask.
//
// How the integrator uses it (sampler, server, CLI):
//
//   // once per model: the vocabulary's bytes in a trie; end tokens = the model's eos ids
//   auto vocab = std::make_shared<const TokenVocabulary>(
//       TokenVocabulary::from_tokenizer(tokenizer, {151643, 151645}));
//   // once per request (cache by grammar text / schema text: compiling is the costly part
//   // and a Grammar keeps the matcher states it has seen, so later requests start warm):
//   Grammar g = Grammar::from_gbnf(text);            // or json_schema.h: schema_to_grammar
//   // once per sequence (fork() / copy for n > 1 or to roll back):
//   GrammarMatcher m(g, vocab);
//   // each decoding step:
//   m.fill_mask(mask);                 // TokenMask: allowed ids for this step
//   if (mask.count() == 0) stop;       // only past the matcher's limits (hostile grammars)
//   apply_token_mask(mask, logits);    // disallowed logits -> -inf, BEFORE the sampling
//                                      // processors (penalties, temperature, top-k/p...)
//   int32_t id = sample(logits);
//   m.accept_token(id);                // false only if `id` was not allowed
//   if (m.is_terminated()) stop;       // an end token was accepted (allowed iff can_end())
//
// Semantics: the matcher holds the set of parser states (stacks of grammar positions)
// reachable by the bytes accepted so far; a prefix is accepted iff it can be completed
// to a string of the language (grammars are compiled so that every live state can
// finish). accept_bytes / accept_token are all-or-nothing: on false the matcher is
// unchanged. Tokens are byte strings and may split a UTF-8 character: the grammar is
// matched byte by byte.
//
// Speed: parser-state sets are interned in the Grammar's state cache and the transition
// on each byte is computed once and remembered (a lazily built DFA over state sets), so
// the mask is a walk of the vocabulary trie with one table lookup per trie node,
// skipping every subtree whose prefix is rejected; the mask of a state is also cached.
// The cache is shared by all matchers of one Grammar and locked; one matcher must be used
// by one thread at a time, different matchers may run on different threads. Past about a
// million states, matchers made afterwards start a fresh cache (memory stays bounded for
// a grammar that lives as long as the server); copies and forks keep their matcher's.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"

namespace glass {
class Tokenizer;
}

namespace glass::grammar {

namespace detail {
class StateCache;
}

// Allowed token ids as a bitset: bit (id % 64) of words[id / 64].
struct TokenMask {
  std::vector<uint64_t> words;
  size_t size = 0;  // number of ids covered (the vocabulary size)

  bool allowed(int32_t id) const {
    return id >= 0 && static_cast<size_t>(id) < size && ((words[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1);
  }
  size_t count() const;
};

// Sets logits[id] to -infinity for every id the mask does not allow; ids past the
// mask's size (padding rows of the embedding) are disallowed too.
void apply_token_mask(const TokenMask& mask, std::span<float> logits);

// The byte strings of a vocabulary, indexed by token id, in a trie for the mask walk.
// Built once per tokenizer; immutable and shareable between threads.
class TokenVocabulary {
 public:
  // `tokens[id]`: the bytes of token id. Ids in `special` are never allowed by a mask
  // (nor by accept_token), except those in `end_tokens`, allowed exactly when the
  // grammar can end. Empty strings are never allowed.
  explicit TokenVocabulary(std::vector<std::string> tokens, std::vector<int32_t> end_tokens = {},
                           std::vector<int32_t> special = {});
  // From a tokenizer: token_bytes(id) for every id; its special tokens are special.
  // `end_tokens`: the ids that end generation (e.g. generation_config's eos ids).
  static TokenVocabulary from_tokenizer(const Tokenizer& tokenizer, std::vector<int32_t> end_tokens);

  size_t size() const { return tokens_.size(); }
  std::string_view bytes(int32_t id) const;
  bool is_end(int32_t id) const;
  bool is_special(int32_t id) const;  // end tokens included
  const std::vector<int32_t>& end_tokens() const { return end_tokens_; }
  size_t trie_nodes() const { return node_byte_.size(); }

 private:
  friend class GrammarMatcher;
  std::vector<std::string> tokens_;
  std::vector<int32_t> end_tokens_;
  uint64_t id_;                // tells vocabularies apart in the grammar's mask cache
  std::vector<uint8_t> kind_;  // 0 normal, 1 special, 2 end
  // The trie in preorder (children in byte order); node i: its byte, its depth (1 for
  // the first byte of a token), the index just past its subtree, and the ids whose
  // bytes end there (token_ids_[token_begin_[i] .. token_begin_[i+1])).
  std::vector<uint8_t> node_byte_;
  std::vector<uint16_t> node_depth_;
  std::vector<uint32_t> node_end_;
  std::vector<uint32_t> token_begin_;
  std::vector<int32_t> token_ids_;
  uint16_t max_depth_ = 0;
};

class GrammarMatcher {
 public:
  // `vocab` is needed for accept_token and the mask; accept_bytes works without it.
  explicit GrammarMatcher(Grammar grammar, std::shared_ptr<const TokenVocabulary> vocab = nullptr);

  // Accepts all of `bytes` or nothing; true when accepted.
  bool accept_bytes(std::string_view bytes);
  // A token's bytes; an end token is accepted when can_end() and terminates the matcher;
  // other special tokens are never accepted. False (and no change) when not allowed.
  bool accept_token(int32_t id);
  // The bytes so far form a complete string of the language (an end token is allowed).
  bool can_end() const;
  // The bytes so far form a complete string that no byte can extend: the grammar's output
  // is over (a triggered grammar hands the output back here).
  bool is_complete() const;
  // Nothing more can be accepted: after an end token, or when the grammar's states
  // exceed the matcher's limits (more than 8192 stacks in one state, e.g. a nullable item
  // under a large repetition count); the integrator should then end the generation.
  bool is_dead() const;
  // An end token was accepted.
  bool is_terminated() const { return terminated_; }
  // Would these bytes be accepted? (no change)
  bool can_accept_bytes(std::string_view bytes) const;

  // The tokens allowed now (`mask` is resized to the vocabulary). Computing new states
  // is bounded per call (about 16M units of work, well under a second); a walk cut short
  // by that bound (only hostile, hugely ambiguous grammars get there) gives a partial
  // mask: every token in it is valid, but some valid ones may be missing.
  void fill_mask(TokenMask& mask) const;
  TokenMask mask() const;

  // An independent copy (same as the copy constructor): for n > 1 choices or rollback.
  GrammarMatcher fork() const { return *this; }
  // Back to the start.
  void reset();

  const Grammar& grammar() const { return grammar_; }
  const std::shared_ptr<const TokenVocabulary>& vocabulary() const { return vocab_; }
  // The interned state id (equal ids: equal states, within one state cache) and the
  // number of states in the cache this matcher uses — for tests and diagnostics.
  uint32_t state_id() const { return state_; }
  size_t cached_states() const;

 private:
  // The state `bytes` lead to from here; 0 when they are refused (or nothing is accepted).
  uint32_t state_after(std::string_view bytes) const;
  Grammar grammar_;
  std::shared_ptr<const TokenVocabulary> vocab_;
  std::shared_ptr<detail::StateCache> cache_;  // the grammar's cache when this matcher began
  uint32_t state_ = 0;
  bool terminated_ = false;
};

}  // namespace glass::grammar
