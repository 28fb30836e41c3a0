// The matcher: parser-state sets over a compiled grammar, interned and stepped byte by
// byte with memoized transitions; the token mask as a walk of the vocabulary trie.
#include "grammar/matcher.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <limits>
#include <mutex>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "base/id_mask.h"
#include "grammar/grammar_internal.h"
#include "tokenizer/tokenizer.h"

namespace glass::grammar {
namespace detail {

// A parser state is a set of stacks. A stack is a node (pos, parent): `pos` the next
// element to match (a byte set on top of a stack; a return address below), `parent` the
// rest of the stack (node 0: the empty stack). Nodes are hash-consed, so a stack is one
// id and equal stacks have equal ids; a state is a sorted vector of node ids (node 0 in
// it: the root rule is complete), interned to a state id (0: the empty set, dead).
class StateCache {
 public:
  static constexpr uint32_t kUnknown = std::numeric_limits<uint32_t>::max();
  static constexpr size_t kMaxNodes = size_t{1} << 24;
  static constexpr size_t kMaxStates = size_t{1} << 22;
  static constexpr size_t kMaxClosure = size_t{1} << 20;      // work items of one transition
  static constexpr size_t kMaxStateStacks = 8192;             // stacks in one state
  static constexpr uint32_t kOutOfBudget = kUnknown - 1;      // step() when the work budget ran out
  static constexpr size_t kMaxTables = 16384;                 // 256 x 4 bytes each
  static constexpr size_t kMaxMaskBytes = size_t{48} << 20;  // cached masks

  explicit StateCache(const CompiledGrammar& g) : g_(g) {
    nodes_.push_back({0, 0});
    intern_state({});  // state 0: dead
    std::vector<std::pair<uint32_t, uint32_t>> seeds;
    for (uint32_t start : g_.rule_alts[g_.root]) seeds.push_back({start, 0});
    initial_ = closure(seeds);
  }

  std::mutex mu;

  uint32_t initial() const { return initial_; }
  size_t state_count() const { return state_nodes_.size(); }
  bool can_end(uint32_t s) const { return s != 0 && !state_nodes_[s]->empty() && (*state_nodes_[s])[0] == 0; }

  // Frees the memoized tables when they grew past their budget (call with mu held, before
  // any step() of an operation).
  void trim() {
    if (tables_ > kMaxTables) {
      for (auto& t : trans_) t.reset();
      tables_ = 0;
    }
    if (mask_bytes_ > kMaxMaskBytes) {
      masks_.clear();
      mask_bytes_ = 0;
    }
  }

  uint32_t step(uint32_t s, uint8_t b) {
    if (!byte_set_has(first_[s], b)) return 0;
    uint32_t* t = trans_[s].get();
    if (!t) {
      trans_[s] = std::make_unique<uint32_t[]>(256);
      t = trans_[s].get();
      std::fill(t, t + 256, kUnknown);
      ++tables_;
    }
    if (t[b] == kUnknown) {
      if (work_done_ > work_limit_) return kOutOfBudget;  // not remembered: a later call may compute it
      t[b] = compute_step(s, b);
    }
    return t[b];
  }

  // Bounds the work of new transitions from now on (SIZE_MAX: none): a grammar whose
  // states are huge cannot make one mask take unbounded time.
  void set_work_budget(size_t budget) { work_limit_ = budget == SIZE_MAX ? SIZE_MAX : work_done_ + budget; }

  // Cached masks, per vocabulary (requests with different end tokens use different ones).
  const std::vector<uint64_t>* find_mask(uint64_t vocab, uint32_t s) {
    auto it = masks_.find((vocab << 32) | s);
    return it == masks_.end() ? nullptr : &it->second;
  }
  void store_mask(uint64_t vocab, uint32_t s, const std::vector<uint64_t>& words) {
    if (masks_.emplace((vocab << 32) | s, words).second) mask_bytes_ += words.size() * 8 + 64;
  }

 private:
  struct Node {
    uint32_t pos, parent;
  };
  struct VecHash {
    size_t operator()(const std::vector<uint32_t>& v) const {
      uint64_t h = 1469598103934665603ull;
      for (uint32_t x : v) h = (h ^ x) * 1099511628211ull;
      return static_cast<size_t>(h ^ (h >> 29));
    }
  };

  uint32_t intern_node(uint32_t pos, uint32_t parent) {
    uint64_t key = (uint64_t{pos} << 32) | parent;
    auto [it, inserted] = node_index_.emplace(key, static_cast<uint32_t>(nodes_.size()));
    if (inserted) {
      if (nodes_.size() >= kMaxNodes) {
        node_index_.erase(it);
        overflow_ = true;
        return 0;
      }
      nodes_.push_back({pos, parent});
    }
    return it->second;
  }

  uint32_t intern_state(std::vector<uint32_t> v) {
    auto it = state_index_.find(v);
    if (it != state_index_.end()) return it->second;
    if (state_nodes_.size() >= kMaxStates) return 0;
    uint32_t id = static_cast<uint32_t>(state_nodes_.size());
    ByteSet first{};
    for (uint32_t n : v) {
      if (n == 0) continue;
      const ByteSet& s = g_.byte_sets[g_.elems[nodes_[n].pos].value];
      for (int w = 0; w < 4; ++w) first[static_cast<size_t>(w)] |= s[static_cast<size_t>(w)];
    }
    auto res = state_index_.emplace(std::move(v), id);
    state_nodes_.push_back(&res.first->first);
    first_.push_back(first);
    trans_.emplace_back();
    return id;
  }

  // The state of every stack reached from the seeds (pos, parent) by expanding rule
  // references and finished alternatives until a byte set is on top.
  uint32_t closure(const std::vector<std::pair<uint32_t, uint32_t>>& seeds) {
    work_.assign(seeds.begin(), seeds.end());
    visited_.clear();
    out_.clear();
    overflow_ = false;
    size_t steps = 0;
    while (!work_.empty()) {
      auto [p, par] = work_.back();
      work_.pop_back();
      if (!visited_.insert((uint64_t{p} << 32) | par).second) continue;
      ++work_done_;
      if (++steps > kMaxClosure) return 0;
      const Elem e = g_.elems[p];
      switch (e.kind) {
        case ElemKind::kBytes: {
          uint32_t n = intern_node(p, par);
          if (overflow_) return 0;
          out_.push_back(n);
          break;
        }
        case ElemKind::kEnd:
          if (par == 0) {
            out_.push_back(0);
          } else {
            const Node n = nodes_[par];
            work_.push_back({n.pos, n.parent});
          }
          break;
        case ElemKind::kRef: {
          uint32_t ret = p + 1;
          uint32_t np = g_.elems[ret].kind == ElemKind::kEnd ? par : intern_node(ret, par);
          if (overflow_) return 0;
          for (uint32_t start : g_.rule_alts[e.value]) work_.push_back({start, np});
          break;
        }
      }
    }
    std::sort(out_.begin(), out_.end());
    out_.erase(std::unique(out_.begin(), out_.end()), out_.end());
    if (out_.empty() || out_.size() > kMaxStateStacks) return 0;
    return intern_state(out_);
  }

  uint32_t compute_step(uint32_t s, uint8_t b) {
    seeds_.clear();
    for (uint32_t n : *state_nodes_[s]) {
      if (n == 0) continue;
      const Node node = nodes_[n];
      if (byte_set_has(g_.byte_sets[g_.elems[node.pos].value], b)) seeds_.push_back({node.pos + 1, node.parent});
    }
    if (seeds_.empty()) return 0;
    return closure(seeds_);
  }

  const CompiledGrammar& g_;
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, uint32_t> node_index_;
  std::unordered_map<std::vector<uint32_t>, uint32_t, VecHash> state_index_;
  std::vector<const std::vector<uint32_t>*> state_nodes_;
  std::vector<ByteSet> first_;  // bytes some stack of the state accepts
  std::vector<std::unique_ptr<uint32_t[]>> trans_;
  size_t tables_ = 0;
  uint32_t initial_ = 0;
  bool overflow_ = false;
  size_t work_done_ = 0, work_limit_ = SIZE_MAX;
  // closure scratch
  std::vector<std::pair<uint32_t, uint32_t>> work_, seeds_;
  std::unordered_set<uint64_t> visited_;
  std::vector<uint32_t> out_;
  // masks
  std::unordered_map<uint64_t, std::vector<uint64_t>> masks_;  // (vocabulary id << 32) | state
  size_t mask_bytes_ = 0;
};

CompiledGrammar::CompiledGrammar() = default;
CompiledGrammar::~CompiledGrammar() = default;

void init_state_cache(CompiledGrammar& g) { g.cache = std::make_shared<StateCache>(g); }
bool initial_state_too_large(const CompiledGrammar& g) { return g.cache->initial() == 0; }

std::shared_ptr<StateCache> CompiledGrammar::acquire_cache() const {
  std::lock_guard<std::mutex> lock(cache_mu);
  size_t states;
  {
    std::lock_guard<std::mutex> cache_lock(cache->mu);
    states = cache->state_count();
  }
  if (states > retire_states) cache = std::make_shared<StateCache>(*this);
  return cache;
}

}  // namespace detail

// ---- TokenMask ----

size_t TokenMask::count() const {
  size_t n = 0;
  for (uint64_t w : words) n += static_cast<size_t>(std::popcount(w));
  return n;
}

void apply_token_mask(const TokenMask& mask, std::span<float> logits) {
  remove_disallowed_ids(mask.words, mask.size, logits);
}

// ---- TokenVocabulary ----

TokenVocabulary::TokenVocabulary(std::vector<std::string> tokens, std::vector<int32_t> end_tokens,
                                 std::vector<int32_t> special)
    : tokens_(std::move(tokens)), kind_(tokens_.size(), 0) {
  static std::atomic<uint32_t> next_id{1};  // a mask cache key: wraps after 4G vocabularies
  id_ = next_id.fetch_add(1);
  for (int32_t id : special)
    if (id >= 0 && static_cast<size_t>(id) < tokens_.size()) kind_[static_cast<size_t>(id)] = 1;
  for (int32_t id : end_tokens)
    if (id >= 0 && static_cast<size_t>(id) < tokens_.size()) {
      kind_[static_cast<size_t>(id)] = 2;
      end_tokens_.push_back(id);
    }
  std::vector<int32_t> ids;
  for (size_t i = 0; i < tokens_.size(); ++i)
    if (kind_[i] == 0 && !tokens_[i].empty() && tokens_[i].size() <= 65535) ids.push_back(static_cast<int32_t>(i));
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    const std::string& x = tokens_[static_cast<size_t>(a)];
    const std::string& y = tokens_[static_cast<size_t>(b)];
    int c = x.compare(y);
    return c != 0 ? c < 0 : a < b;
  });
  // Sorted byte strings are the trie's preorder: each token shares its longest common
  // prefix with the one before, and new nodes follow.
  std::vector<uint32_t> path;  // node index at each depth - 1
  std::string_view prev;
  auto close_to = [&](size_t depth) {
    while (path.size() > depth) {
      node_end_[path.back()] = static_cast<uint32_t>(node_byte_.size());
      path.pop_back();
    }
  };
  for (int32_t id : ids) {
    std::string_view t = tokens_[static_cast<size_t>(id)];
    size_t lcp = 0;
    while (lcp < t.size() && lcp < prev.size() && lcp < path.size() && t[lcp] == prev[lcp]) ++lcp;
    close_to(lcp);
    for (size_t d = lcp; d < t.size(); ++d) {
      path.push_back(static_cast<uint32_t>(node_byte_.size()));
      node_byte_.push_back(static_cast<uint8_t>(t[d]));
      node_depth_.push_back(static_cast<uint16_t>(d + 1));
      node_end_.push_back(0);
      token_begin_.push_back(static_cast<uint32_t>(token_ids_.size()));
    }
    token_ids_.push_back(id);
    max_depth_ = std::max<uint16_t>(max_depth_, static_cast<uint16_t>(t.size()));
    prev = t;
  }
  close_to(0);
  token_begin_.push_back(static_cast<uint32_t>(token_ids_.size()));
}

TokenVocabulary TokenVocabulary::from_tokenizer(const Tokenizer& tokenizer, std::vector<int32_t> end_tokens) {
  const size_t n = tokenizer.vocab_size();
  std::vector<std::string> tokens(n);
  std::vector<int32_t> special;
  for (size_t i = 0; i < n; ++i) {
    int32_t id = static_cast<int32_t>(i);
    if (!tokenizer.has_token(id)) continue;
    tokens[i] = std::string(tokenizer.token_bytes(id));
    if (tokenizer.is_special(id)) special.push_back(id);
  }
  return TokenVocabulary(std::move(tokens), std::move(end_tokens), std::move(special));
}

std::string_view TokenVocabulary::bytes(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= tokens_.size()) return {};
  return tokens_[static_cast<size_t>(id)];
}
bool TokenVocabulary::is_end(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < tokens_.size() && kind_[static_cast<size_t>(id)] == 2;
}
bool TokenVocabulary::is_special(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < tokens_.size() && kind_[static_cast<size_t>(id)] != 0;
}

// ---- GrammarMatcher ----

GrammarMatcher::GrammarMatcher(Grammar grammar, std::shared_ptr<const TokenVocabulary> vocab)
    : grammar_(std::move(grammar)), vocab_(std::move(vocab)), cache_(grammar_.impl_->acquire_cache()) {
  state_ = cache_->initial();
}

void GrammarMatcher::reset() {
  state_ = cache_->initial();
  terminated_ = false;
}

size_t GrammarMatcher::cached_states() const {
  std::lock_guard<std::mutex> lock(cache_->mu);
  return cache_->state_count();
}

uint32_t GrammarMatcher::state_after(std::string_view bytes) const {
  if (terminated_ || state_ == 0) return 0;
  auto& cache = *cache_;
  std::lock_guard<std::mutex> lock(cache.mu);
  cache.trim();
  uint32_t s = state_;
  for (char c : bytes) {
    s = cache.step(s, static_cast<uint8_t>(c));
    if (s == 0) return 0;
  }
  return s;
}

bool GrammarMatcher::can_accept_bytes(std::string_view bytes) const { return state_after(bytes) != 0; }

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  const uint32_t s = state_after(bytes);
  if (s == 0) return false;
  state_ = s;
  return true;
}

bool GrammarMatcher::accept_token(int32_t id) {
  if (!vocab_) throw Error("GrammarMatcher::accept_token: the matcher has no vocabulary");
  if (terminated_ || state_ == 0 || id < 0 || static_cast<size_t>(id) >= vocab_->size()) return false;
  if (vocab_->is_end(id)) {
    if (!can_end()) return false;
    terminated_ = true;
    return true;
  }
  if (vocab_->is_special(id)) return false;
  std::string_view b = vocab_->bytes(id);
  if (b.empty()) return false;
  return accept_bytes(b);
}

bool GrammarMatcher::can_end() const {
  if (terminated_ || state_ == 0) return false;
  auto& cache = *cache_;
  std::lock_guard<std::mutex> lock(cache.mu);  // other matchers may be adding states
  return cache.can_end(state_);
}

bool GrammarMatcher::is_complete() const {
  if (terminated_ || state_ == 0) return false;
  auto& cache = *cache_;
  std::lock_guard<std::mutex> lock(cache.mu);
  if (!cache.can_end(state_)) return false;
  cache.trim();
  for (int b = 0; b < 256; ++b)
    if (cache.step(state_, static_cast<uint8_t>(b)) != 0) return false;
  return true;
}

bool GrammarMatcher::is_dead() const { return terminated_ || state_ == 0; }

TokenMask GrammarMatcher::mask() const {
  TokenMask m;
  fill_mask(m);
  return m;
}

void GrammarMatcher::fill_mask(TokenMask& mask) const {
  if (!vocab_) throw Error("GrammarMatcher::fill_mask: the matcher has no vocabulary");
  const TokenVocabulary& v = *vocab_;
  mask.size = v.size();
  mask.words.assign((v.size() + 63) / 64, 0);
  if (terminated_ || state_ == 0) return;
  auto& cache = *cache_;
  std::lock_guard<std::mutex> lock(cache.mu);
  cache.trim();
  if (const auto* cached = cache.find_mask(v.id_, state_)) {
    mask.words = *cached;
    return;
  }
  static constexpr size_t kMaskWorkBudget = size_t{1} << 24;
  cache.set_work_budget(kMaskWorkBudget);
  bool truncated = false;
  uint64_t* words = mask.words.data();
  // Depth-first over the trie in preorder: the state after each node's prefix is one
  // memoized step from its parent's; a dead step skips the whole subtree.
  std::vector<uint32_t> at(static_cast<size_t>(v.max_depth_) + 1);
  at[0] = state_;
  const uint8_t* bytes = v.node_byte_.data();
  const uint16_t* depth = v.node_depth_.data();
  const uint32_t* end = v.node_end_.data();
  const uint32_t* tok_begin = v.token_begin_.data();
  const int32_t* tok = v.token_ids_.data();
  const uint32_t n = static_cast<uint32_t>(v.node_byte_.size());
  uint32_t i = 0;
  while (i < n) {
    uint32_t s = cache.step(at[depth[i] - 1u], bytes[i]);
    if (s == 0 || s == detail::StateCache::kOutOfBudget) {
      truncated |= s != 0;
      i = end[i];
      continue;
    }
    at[depth[i]] = s;
    for (uint32_t k = tok_begin[i]; k < tok_begin[i + 1]; ++k) {
      uint32_t id = static_cast<uint32_t>(tok[k]);
      words[id >> 6] |= uint64_t{1} << (id & 63);
    }
    ++i;
  }
  if (cache.can_end(state_))
    for (int32_t id : v.end_tokens()) words[static_cast<uint32_t>(id) >> 6] |= uint64_t{1} << (id & 63);
  cache.set_work_budget(SIZE_MAX);
  // A walk cut short by the budget gives a sound but partial mask: not remembered.
  if (!truncated) cache.store_mask(v.id_, state_, mask.words);
}

}  // namespace glass::grammar
