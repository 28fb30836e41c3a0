// Helpers for the grammar tests: an Earley recognizer (an independent matching algorithm
// over the compiled rules), a random sampler of derivations, mutations, and file reading.
#pragma once

#include <algorithm>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"
#include "grammar/grammar_internal.h"
#include "grammar/matcher.h"

namespace glass::grammar::test {

// The whole text is in the language / is a viable prefix.
inline bool accepts(const Grammar& g, std::string_view s) {
  GrammarMatcher m(g);
  return m.accept_bytes(s) && m.can_end();
}
inline bool viable(const Grammar& g, std::string_view s) {
  GrammarMatcher m(g);
  return m.accept_bytes(s);
}

inline std::string read_data(const std::string& name) {
  std::ifstream f(std::string(GLASS_GRAMMAR_TEST_DATA) + "/" + name, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Earley recognition over the byte-level rules (Aycock-Horspool handling of nullable
// rules). A set is non-empty iff the bytes so far are a viable prefix (every rule of a
// compiled grammar can finish).
class Earley {
 public:
  explicit Earley(const Grammar& grammar) : g_(grammar.compiled()) {
    rule_of_.assign(g_.elems.size(), 0);
    for (uint32_t r = 0; r < g_.rule_alts.size(); ++r)
      for (uint32_t start : g_.rule_alts[r])
        for (uint32_t p = start;; ++p) {
          rule_of_[p] = r;
          if (g_.elems[p].kind == detail::ElemKind::kEnd) break;
        }
    sets_.emplace_back();
    nullable_done_.emplace_back();
    for (uint32_t start : g_.rule_alts[g_.root]) add(0, {start, 0});
    close(0);
  }

  bool viable() const { return !sets_.back().empty(); }
  bool complete() const {
    const auto& s = sets_.back();
    for (const Item& it : s)
      if (it.origin == 0 && g_.elems[it.pos].kind == detail::ElemKind::kEnd && rule_of_[it.pos] == g_.root) return true;
    return false;
  }
  void push(uint8_t b) {
    size_t i = sets_.size() - 1;
    sets_.emplace_back();
    nullable_done_.emplace_back();
    std::vector<Item> cur = sets_[i];
    for (const Item& it : cur) {
      const auto& e = g_.elems[it.pos];
      if (e.kind == detail::ElemKind::kBytes && detail::byte_set_has(g_.byte_sets[e.value], b)) add(i + 1, {it.pos + 1, it.origin});
    }
    close(i + 1);
  }

 private:
  struct Item {
    uint32_t pos, origin;
    bool operator<(const Item& o) const { return pos != o.pos ? pos < o.pos : origin < o.origin; }
    bool operator==(const Item& o) const { return pos == o.pos && origin == o.origin; }
  };
  void add(size_t i, Item it) {
    if (seen_.size() <= i) seen_.resize(i + 1);
    if (seen_[i].insert(it).second) {
      sets_[i].push_back(it);
    }
  }
  void close(size_t i) {
    for (size_t k = 0; k < sets_[i].size(); ++k) {
      Item it = sets_[i][k];
      const auto& e = g_.elems[it.pos];
      if (e.kind == detail::ElemKind::kRef) {
        for (uint32_t start : g_.rule_alts[e.value]) add(i, {start, static_cast<uint32_t>(i)});
        if (nullable_done_[i].count(e.value)) add(i, {it.pos + 1, it.origin});
      } else if (e.kind == detail::ElemKind::kEnd) {
        uint32_t r = rule_of_[it.pos];
        if (it.origin == i) nullable_done_[i].insert(r);
        std::vector<Item> waiting;
        for (const Item& w : sets_[it.origin]) {
          const auto& we = g_.elems[w.pos];
          if (we.kind == detail::ElemKind::kRef && we.value == r) waiting.push_back(w);
        }
        for (const Item& w : waiting) add(i, {w.pos + 1, w.origin});
      }
    }
  }

  const detail::CompiledGrammar& g_;
  std::vector<uint32_t> rule_of_;
  std::vector<std::vector<Item>> sets_;
  std::vector<std::set<Item>> seen_;
  std::vector<std::set<uint32_t>> nullable_done_;
};

// Random strings of a grammar's language: derivations with random alternatives, the
// shortest alternative once `budget` bytes are spent (so every derivation ends).
class Sampler {
 public:
  explicit Sampler(const Grammar& grammar) : g_(grammar.compiled()) {
    const size_t n = g_.rule_alts.size();
    const uint64_t inf = UINT64_MAX / 4;
    min_len_.assign(n, inf);
    bool changed = true;
    while (changed) {
      changed = false;
      for (size_t r = 0; r < n; ++r)
        for (uint32_t start : g_.rule_alts[r]) {
          uint64_t len = alt_len(start);
          if (len < min_len_[r]) {
            min_len_[r] = len;
            changed = true;
          }
        }
    }
  }

  std::string sample(std::mt19937& rng, size_t budget = 60) {
    std::string out;
    std::vector<uint32_t> stack;  // positions still to expand, top at back
    stack.push_back(pick(g_.root, rng, out.size() >= budget));
    while (!stack.empty()) {
      uint32_t p = stack.back();
      stack.pop_back();
      const auto& e = g_.elems[p];
      if (e.kind == detail::ElemKind::kEnd) continue;
      stack.push_back(p + 1);
      if (e.kind == detail::ElemKind::kBytes) {
        const auto& s = g_.byte_sets[e.value];
        std::vector<uint8_t> options;
        for (int b = 0; b < 256; ++b)
          if (detail::byte_set_has(s, static_cast<uint8_t>(b))) options.push_back(static_cast<uint8_t>(b));
        // Prefer printable bytes a little so samples look like text.
        out.push_back(static_cast<char>(options[std::uniform_int_distribution<size_t>(0, options.size() - 1)(rng)]));
      } else {
        stack.push_back(pick(e.value, rng, out.size() >= budget));
      }
      if (stack.size() > 100000) break;  // cannot happen with the shortest-choice rule
    }
    return out;
  }

 private:
  uint64_t alt_len(uint32_t start) const {
    uint64_t len = 0;
    for (uint32_t p = start; g_.elems[p].kind != detail::ElemKind::kEnd; ++p) {
      const auto& e = g_.elems[p];
      len += e.kind == detail::ElemKind::kBytes ? 1 : min_len_[e.value];
      len = std::min<uint64_t>(len, UINT64_MAX / 4);
    }
    return len;
  }
  uint32_t pick(uint32_t r, std::mt19937& rng, bool shortest) {
    const auto& alts = g_.rule_alts[r];
    if (!shortest) return alts[std::uniform_int_distribution<size_t>(0, alts.size() - 1)(rng)];
    uint32_t best = alts[0];
    for (uint32_t a : alts)
      if (alt_len(a) < alt_len(best)) best = a;
    return best;
  }

  const detail::CompiledGrammar& g_;
  std::vector<uint64_t> min_len_;
};

// A random edit: insert, delete or replace a byte, or truncate. New bytes come from the
// string itself, from `extra`, or are random.
inline std::string mutate(std::string s, std::mt19937& rng, const std::string& extra = "") {
  auto rnd = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  auto new_byte = [&]() -> char {
    size_t k = rnd(3);
    if (k == 0 && !s.empty()) return s[rnd(s.size())];
    if (k == 1 && !extra.empty()) return extra[rnd(extra.size())];
    return static_cast<char>(rnd(256));
  };
  switch (rnd(4)) {
    case 0: s.insert(s.begin() + static_cast<long>(rnd(s.size() + 1)), new_byte()); break;
    case 1:
      if (!s.empty()) s.erase(s.begin() + static_cast<long>(rnd(s.size())));
      break;
    case 2:
      if (!s.empty()) s[rnd(s.size())] = new_byte();
      break;
    default:
      if (!s.empty()) s.resize(rnd(s.size()));
      break;
  }
  return s;
}

// nlohmann's SAX parse: 1 valid; -1 invalid, and no completion can fix it (it failed
// before the end of the text, or after a complete value); 0 it failed at the end of the
// text (a viable prefix, or a token that is wrong where it stands); -2 a number out of
// double's range (not comparable).
inline int json_status(const std::string& s) {
  struct Sax : nlohmann::json_sax<nlohmann::json> {
    size_t pos = 0;
    int id = 0;
    bool trailing = false;
    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override { return true; }
    bool key(string_t&) override { return true; }
    bool end_object() override { return true; }
    bool start_array(std::size_t) override { return true; }
    bool end_array() override { return true; }
    bool parse_error(std::size_t p, const std::string&, const nlohmann::detail::exception& e) override {
      pos = p;
      id = e.id;
      trailing = std::string(e.what()).find("; expected end of input") != std::string::npos;
      return false;
    }
  } sax;
  if (nlohmann::json::sax_parse(s, &sax)) return 1;
  if (sax.id == 406) return -2;
  return sax.pos > s.size() && !sax.trailing ? 0 : -1;
}

}  // namespace glass::grammar::test
