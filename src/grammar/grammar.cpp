// GBNF parsing and compilation to byte-level rules (grammar.h).
#include "grammar/grammar.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "grammar/grammar_internal.h"
#include "grammar/utf8_ranges.h"

namespace glass::grammar {
namespace {

using detail::ByteSet;
using detail::Elem;
using detail::ElemKind;
using Seq = std::vector<Elem>;

struct BuildRule {
  std::string name;
  std::vector<Seq> alts;
  bool defined = false;
  bool generated = false;
  size_t first_use = 0;  // offset of the first reference (for "undefined rule")
  size_t defined_at = 0;
};

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

std::string quote_char(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string("'") + c + "'";
  char buf[16];
  std::snprintf(buf, sizeof buf, "byte 0x%02X", u);
  return buf;
}

class Parser {
 public:
  Parser(std::string_view text, const GrammarLimits& limits) : text_(text), limits_(limits) {}

  std::shared_ptr<detail::CompiledGrammar> run() {
    if (text_.size() > limits_.max_text_bytes)
      throw GrammarError(str_cat("grammar: the text is ", text_.size(), " bytes, more than the limit of ",
                                 limits_.max_text_bytes));
    parse_rules();
    check_definitions();
    return compile();
  }

 private:
  // ---- errors and positions ----
  std::pair<int, int> line_col(size_t offset) const {
    int line = 1, col = 1;
    for (size_t i = 0; i < offset && i < text_.size(); ++i) {
      unsigned char c = static_cast<unsigned char>(text_[i]);
      if (c == '\n') {
        ++line;
        col = 1;
      } else if ((c & 0xC0) != 0x80) {
        ++col;
      }
    }
    return {line, col};
  }
  [[noreturn]] void error_at(size_t offset, const std::string& what) const {
    auto [line, col] = line_col(offset);
    throw GrammarError(str_cat("grammar: line ", line, ", column ", col, ": ", what), line, col);
  }
  std::string where(size_t offset) const {
    auto [line, col] = line_col(offset);
    return str_cat("line ", line, ", column ", col);
  }
  std::string found() const {
    if (pos_ >= text_.size()) return "the end of the grammar";
    if (text_[pos_] == '\n') return "the end of the line";
    return quote_char(text_[pos_]);
  }

  // ---- lexing ----
  bool eof() const { return pos_ >= text_.size(); }
  char peek() const { return eof() ? '\0' : text_[pos_]; }
  void skip_space() {
    while (!eof()) {
      char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (!eof() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }
  std::string parse_name() {
    size_t start = pos_;
    while (!eof() && is_name_char(text_[pos_])) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }
  // At a name: is it the start of a new rule (`name ::=`)?
  bool at_rule_start() {
    size_t save = pos_;
    parse_name();
    skip_space();
    bool yes = text_.substr(pos_, 3) == "::=";
    pos_ = save;
    return yes;
  }
  // One code point of literal text (UTF-8 in the grammar, or an escape).
  uint32_t parse_char(const char* context) {
    size_t start = pos_;
    unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if (c == '\\') {
      ++pos_;
      if (eof()) error_at(pos_, str_cat("expected an escape after '\\' in ", context));
      char e = text_[pos_++];
      switch (e) {
        case 'n': return '\n';
        case 't': return '\t';
        case 'r': return '\r';
        case '\\': case '"': case '\'': case '[': case ']': case '-': case '^': case '/': case '.':
        case '(': case ')': case '|': case '*': case '+': case '?': case '{': case '}':
          return static_cast<unsigned char>(e);
        case 'x': return parse_hex(2, start);
        case 'u': return parse_hex(4, start);
        case 'U': return parse_hex(8, start);
        default:
          error_at(start, str_cat("unknown escape '\\", std::string(1, e), "' in ", context,
                                  " (known: \\n \\t \\r \\\\ \\\" \\xHH \\uHHHH \\UHHHHHHHH)"));
      }
    }
    // UTF-8 sequence.
    int len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || pos_ + len > text_.size()) error_at(start, "invalid UTF-8 in the grammar text");
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (int i = 1; i < len; ++i) {
      unsigned char d = static_cast<unsigned char>(text_[pos_ + i]);
      if ((d & 0xC0) != 0x80) error_at(start, "invalid UTF-8 in the grammar text");
      cp = (cp << 6) | (d & 0x3F);
    }
    static const uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      error_at(start, "invalid UTF-8 in the grammar text");
    pos_ += len;
    return cp;
  }
  uint32_t parse_hex(int digits, size_t start) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      char h = peek();
      int d = (h >= '0' && h <= '9') ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10 : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
      if (d < 0) error_at(pos_, str_cat("expected ", digits, " hex digits in the escape, found ", found()));
      v = v * 16 + static_cast<uint32_t>(d);
      ++pos_;
    }
    if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
      error_at(start, "the escape is not a Unicode scalar value (surrogate or past U+10FFFF)");
    return v;
  }

  // ---- building ----
  uint32_t rule_id(const std::string& name, size_t use_offset) {
    auto it = by_name_.find(name);
    if (it != by_name_.end()) return it->second;
    uint32_t id = static_cast<uint32_t>(rules_.size());
    rules_.push_back(BuildRule{name, {}, false, false, use_offset, 0});
    by_name_.emplace(name, id);
    return id;
  }
  uint32_t new_rule(std::vector<Seq> alts, const char* kind) {
    uint32_t id = static_cast<uint32_t>(rules_.size());
    std::string name = str_cat(current_rule_name_, "/", kind, ++generated_count_);
    rules_.push_back(BuildRule{name, std::move(alts), true, true, 0, 0});
    return id;
  }
  void count_elems(size_t n) {
    elem_count_ += n;
    if (elem_count_ > limits_.max_elements)
      error_at(pos_, str_cat("the grammar is too large (more than ", limits_.max_elements, " compiled elements)"));
  }
  Elem bytes_elem(const ByteSet& s) {
    auto [it, inserted] = set_index_.emplace(s, static_cast<uint32_t>(sets_.size()));
    if (inserted) sets_.push_back(s);
    return Elem{ElemKind::kBytes, it->second};
  }
  Elem byte_elem(uint8_t b) {
    ByteSet s{};
    s[b >> 6] |= uint64_t{1} << (b & 63);
    return bytes_elem(s);
  }
  void append_code_point(Seq& seq, uint32_t cp) {
    char buf[4];
    int n = encode_utf8(cp, buf);
    count_elems(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) seq.push_back(byte_elem(static_cast<uint8_t>(buf[i])));
  }
  // A character class (code point ranges, sorted and merged) as an item.
  Seq class_item(const std::vector<CodeRange>& ranges) {
    std::vector<Utf8Sequence> seqs = utf8_sequences(ranges);
    if (seqs.empty()) {
      // Matches nothing: a rule with no alternatives (never productive).
      return Seq{Elem{ElemKind::kRef, new_rule({}, "empty")}};
    }
    bool all_single = std::all_of(seqs.begin(), seqs.end(), [](const Utf8Sequence& s) { return s.size() == 1; });
    if (all_single) {
      count_elems(1);
      return Seq{bytes_elem(seqs[0][0])};
    }
    std::string key;
    for (const auto& s : seqs) {
      for (const auto& b : s) key.append(reinterpret_cast<const char*>(b.data()), sizeof(ByteSet));
      key.push_back('|');
    }
    auto it = class_rules_.find(key);
    if (it != class_rules_.end()) {
      count_elems(1);
      return Seq{Elem{ElemKind::kRef, it->second}};
    }
    std::vector<Seq> alts;
    for (const auto& s : seqs) {
      Seq alt;
      count_elems(s.size() + 1);
      for (const auto& b : s) alt.push_back(bytes_elem(b));
      alts.push_back(std::move(alt));
    }
    uint32_t id = new_rule(std::move(alts), "class");
    class_rules_.emplace(std::move(key), id);
    count_elems(1);
    return Seq{Elem{ElemKind::kRef, id}};
  }

  // ---- grammar structure ----
  void parse_rules() {
    skip_space();
    while (!eof()) {
      size_t start = pos_;
      if (!is_name_char(peek())) error_at(pos_, str_cat("expected a rule name, found ", found()));
      std::string name = parse_name();
      skip_space();
      if (text_.substr(pos_, 3) != "::=")
        error_at(pos_, str_cat("expected '::=' after the rule name '", name, "', found ", found()));
      pos_ += 3;
      uint32_t id = rule_id(name, start);
      if (rules_[id].defined)
        error_at(start, str_cat("rule '", name, "' is defined twice (first at ", where(rules_[id].defined_at), ")"));
      rules_[id].defined = true;
      rules_[id].defined_at = start;
      current_rule_name_ = name;
      generated_count_ = 0;
      std::vector<Seq> alts = parse_alternatives(0);
      skip_space();
      if (peek() == ')') error_at(pos_, "unexpected ')' with no '(' open");
      rules_[id].alts = std::move(alts);
    }
  }

  std::vector<Seq> parse_alternatives(int depth) {
    std::vector<Seq> alts;
    alts.push_back(parse_sequence(depth));
    while (true) {
      skip_space();
      if (peek() != '|') break;
      ++pos_;
      alts.push_back(parse_sequence(depth));
    }
    return alts;
  }

  Seq parse_sequence(int depth) {
    Seq seq;
    while (true) {
      skip_space();
      if (eof()) break;
      char c = peek();
      size_t item_start = pos_;
      Seq item;
      if (c == '|' || c == ')') {
        break;
      } else if (c == '"') {
        ++pos_;
        while (true) {
          if (eof()) error_at(item_start, "expected '\"' to close this string (the grammar ended first)");
          if (peek() == '"') break;
          if (peek() == '\n') error_at(item_start, "expected '\"' to close this string before the end of the line");
          append_code_point(item, parse_char("a string"));
        }
        ++pos_;
      } else if (c == '[') {
        ++pos_;
        bool negated = false;
        if (peek() == '^') {
          negated = true;
          ++pos_;
        }
        std::vector<CodeRange> ranges;
        while (true) {
          if (eof()) error_at(pos_, str_cat("expected ']' to close the character class opened at ", where(item_start)));
          if (peek() == ']') break;
          if (peek() == '\n') error_at(pos_, str_cat("expected ']' to close the character class opened at ", where(item_start)));
          uint32_t lo = parse_char("a character class");
          uint32_t hi = lo;
          if (peek() == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
            ++pos_;
            size_t hi_at = pos_;
            if (eof()) error_at(pos_, "expected the end of the range");
            hi = parse_char("a character class");
            if (hi < lo) error_at(hi_at, "the range's end comes before its start");
          }
          ranges.push_back({lo, hi});
        }
        ++pos_;
        ranges = normalize_ranges(std::move(ranges));
        if (negated) ranges = complement_ranges(ranges);
        item = class_item(ranges);
      } else if (c == '.') {
        ++pos_;
        item = class_item(normalize_ranges({{0, 0x10FFFF}}));
      } else if (c == '(') {
        if (depth + 1 > limits_.max_nesting)
          error_at(pos_, str_cat("groups nested more than ", limits_.max_nesting, " deep"));
        ++pos_;
        std::vector<Seq> alts = parse_alternatives(depth + 1);
        skip_space();
        if (peek() != ')')
          error_at(pos_, str_cat("expected ')' to close the group opened at ", where(item_start), ", found ", found()));
        ++pos_;
        if (alts.size() == 1) {
          item = std::move(alts[0]);
        } else {
          count_elems(1);
          item = Seq{Elem{ElemKind::kRef, new_rule(std::move(alts), "group")}};
        }
      } else if (is_name_char(c)) {
        if (at_rule_start()) break;
        std::string name = parse_name();
        count_elems(1);
        item = Seq{Elem{ElemKind::kRef, rule_id(name, item_start)}};
      } else if (c == '<' || (c == '!' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '<')) {
        error_at(pos_, "token references (<[id]>, <token>, !<...>) are not supported; match the token's text instead");
      } else {
        error_at(pos_, str_cat("expected a string, a character class, a rule name, '(' or '|', found ", found()));
      }
      parse_repetition(item);
      seq.insert(seq.end(), item.begin(), item.end());
    }
    return seq;
  }

  uint32_t parse_count() {
    if (!(peek() >= '0' && peek() <= '9')) error_at(pos_, str_cat("expected a number in the repetition, found ", found()));
    uint64_t v = 0;
    size_t start = pos_;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + static_cast<uint64_t>(peek() - '0');
      if (v > limits_.max_repetition)
        error_at(start, str_cat("the repetition count is more than the limit of ", limits_.max_repetition));
      ++pos_;
    }
    return static_cast<uint32_t>(v);
  }

  // Applies a repetition operator after `item`, if there is one.
  void parse_repetition(Seq& item) {
    size_t save = pos_;
    skip_space();
    char c = peek();
    if (c != '*' && c != '+' && c != '?' && c != '{') {
      pos_ = save;
      return;
    }
    size_t op_at = pos_;
    uint32_t min = 0, max = 0;
    bool unbounded = false;
    ++pos_;
    if (c == '*') {
      unbounded = true;
    } else if (c == '+') {
      min = 1;
      unbounded = true;
    } else if (c == '?') {
      max = 1;
    } else {
      skip_space();
      min = parse_count();
      skip_space();
      if (peek() == ',') {
        ++pos_;
        skip_space();
        if (peek() == '}') {
          unbounded = true;
        } else {
          max = parse_count();
          if (max < min) error_at(op_at, str_cat("in {", min, ",", max, "} the maximum is less than the minimum"));
        }
      } else {
        max = min;
      }
      skip_space();
      if (peek() != '}') error_at(pos_, str_cat("expected '}' to close the repetition, found ", found()));
      ++pos_;
    }
    if (item.empty()) return;  // "" repeated is ""
    // One element to repeat: a group of several becomes a rule.
    Elem x = item.size() == 1 ? item[0] : Elem{ElemKind::kRef, new_rule({item}, "seq")};
    Seq out;
    count_elems(static_cast<size_t>(min) + 3);
    for (uint32_t i = 0; i < min; ++i) out.push_back(x);
    if (unbounded) {
      // star ::= x star | ""
      uint32_t star = new_rule({}, "star");
      rules_[star].alts = {Seq{x, Elem{ElemKind::kRef, star}}, Seq{}};
      out.push_back(Elem{ElemKind::kRef, star});
    } else if (max > min) {
      // opt1 ::= x | "" ;  optk ::= x opt(k-1) | ""
      count_elems(static_cast<size_t>(max - min) * 3);
      uint32_t prev = new_rule({Seq{x}, Seq{}}, "opt");
      for (uint32_t k = 1; k < max - min; ++k)
        prev = new_rule({Seq{x, Elem{ElemKind::kRef, prev}}, Seq{}}, "opt");
      out.push_back(Elem{ElemKind::kRef, prev});
    }
    item = std::move(out);
  }

  void check_definitions() {
    auto root = by_name_.find("root");
    if (root == by_name_.end() || !rules_[root->second].defined)
      throw GrammarError("grammar: there is no rule named 'root' (the start rule)");
    for (const auto& r : rules_)
      if (!r.defined) error_at(r.first_use, str_cat("rule '", r.name, "' is used but never defined"));
  }

  // ---- analysis and flattening ----
  std::shared_ptr<detail::CompiledGrammar> compile() {
    const size_t n = rules_.size();
    uint32_t root = by_name_.at("root");
    // Occurrences of each rule inside alternatives: (rule, alt).
    std::vector<std::vector<std::pair<uint32_t, uint32_t>>> uses(n);
    for (uint32_t r = 0; r < n; ++r)
      for (uint32_t a = 0; a < rules_[r].alts.size(); ++a)
        for (const Elem& e : rules_[r].alts[a])
          if (e.kind == ElemKind::kRef) uses[e.value].push_back({r, a});

    // Productive rules (some derivation terminates): worklist over unresolved references.
    std::vector<char> productive(n, 0);
    {
      std::vector<std::vector<uint32_t>> pending(n);
      std::vector<uint32_t> work;
      for (uint32_t r = 0; r < n; ++r) {
        pending[r].resize(rules_[r].alts.size());
        for (uint32_t a = 0; a < rules_[r].alts.size(); ++a) {
          uint32_t refs = 0;
          for (const Elem& e : rules_[r].alts[a]) refs += e.kind == ElemKind::kRef;
          pending[r][a] = refs;
          if (refs == 0 && !productive[r]) {
            productive[r] = 1;
            work.push_back(r);
          }
        }
      }
      while (!work.empty()) {
        uint32_t s = work.back();
        work.pop_back();
        for (auto [r, a] : uses[s])
          if (--pending[r][a] == 0 && !productive[r]) {
            productive[r] = 1;
            work.push_back(r);
          }
      }
    }
    if (!productive[root]) {
      std::string names;
      int listed = 0;
      for (uint32_t r = 0; r < n && listed < 10; ++r)
        if (!productive[r] && !rules_[r].generated) {
          names += str_cat(listed ? ", " : "", "'", rules_[r].name, "'");
          ++listed;
        }
      throw GrammarError(str_cat(
          "grammar: the grammar accepts nothing: no derivation of 'root' terminates (rules with no finite "
          "derivation: ", names, ")"));
    }
    // Drop alternatives that cannot finish.
    for (auto& r : rules_) {
      std::erase_if(r.alts, [&](const Seq& alt) {
        return std::any_of(alt.begin(), alt.end(),
                           [&](const Elem& e) { return e.kind == ElemKind::kRef && !productive[e.value]; });
      });
    }
    // Nullable rules.
    std::vector<char> nullable(n, 0);
    {
      std::vector<std::vector<std::pair<uint32_t, uint32_t>>> uses2(n);
      std::vector<std::vector<uint32_t>> pending(n);
      std::vector<uint32_t> work;
      for (uint32_t r = 0; r < n; ++r) {
        pending[r].resize(rules_[r].alts.size());
        for (uint32_t a = 0; a < rules_[r].alts.size(); ++a) {
          const Seq& alt = rules_[r].alts[a];
          bool has_bytes = std::any_of(alt.begin(), alt.end(), [](const Elem& e) { return e.kind == ElemKind::kBytes; });
          if (has_bytes) {
            pending[r][a] = UINT32_MAX;
            continue;
          }
          pending[r][a] = static_cast<uint32_t>(alt.size());
          for (const Elem& e : alt) uses2[e.value].push_back({r, a});
          if (alt.empty() && !nullable[r]) {
            nullable[r] = 1;
            work.push_back(r);
          }
        }
      }
      while (!work.empty()) {
        uint32_t s = work.back();
        work.pop_back();
        for (auto [r, a] : uses2[s])
          if (pending[r][a] != UINT32_MAX && --pending[r][a] == 0 && !nullable[r]) {
            nullable[r] = 1;
            work.push_back(r);
          }
      }
    }
    check_left_recursion(nullable);

    auto g = std::make_shared<detail::CompiledGrammar>();
    g->retire_states = limits_.retire_states;
    g->byte_sets = sets_;
    g->root = root;
    g->rule_alts.resize(n);
    g->rule_names.resize(n);
    for (uint32_t r = 0; r < n; ++r) {
      g->rule_names[r] = rules_[r].name;
      for (const Seq& alt : rules_[r].alts) {
        g->rule_alts[r].push_back(static_cast<uint32_t>(g->elems.size()));
        g->elems.insert(g->elems.end(), alt.begin(), alt.end());
        g->elems.push_back(Elem{ElemKind::kEnd, 0});
      }
    }
    detail::init_state_cache(*g);
    if (detail::initial_state_too_large(*g))
      throw GrammarError(
          "grammar: the grammar is too ambiguous for the matcher: its start state has more than 8192 parses "
          "(e.g. an optional item under a large repetition count, like (\"a\"?){0,10000}); simplify it");
    return g;
  }

  // Left recursion: a rule that reaches itself, through references preceded only by
  // nullable items, with at least one reference that is not in tail position (a tail
  // reference replaces the caller's frame, so a cycle of tail references does not grow the
  // stack). Tarjan's strongly connected components, iteratively.
  void check_left_recursion(const std::vector<char>& nullable) {
    const uint32_t n = static_cast<uint32_t>(rules_.size());
    struct Edge {
      uint32_t to;
      bool tail;
    };
    std::vector<std::vector<Edge>> edges(n);
    for (uint32_t r = 0; r < n; ++r)
      for (const Seq& alt : rules_[r].alts)
        for (size_t i = 0; i < alt.size(); ++i) {
          if (alt[i].kind != ElemKind::kRef) break;
          edges[r].push_back({alt[i].value, i + 1 == alt.size()});
          if (!nullable[alt[i].value]) break;
        }
    std::vector<uint32_t> index(n, UINT32_MAX), low(n, 0), comp(n, UINT32_MAX), stack;
    std::vector<char> on_stack(n, 0);
    uint32_t counter = 0, comps = 0;
    struct Frame {
      uint32_t v;
      size_t next;
    };
    for (uint32_t s = 0; s < n; ++s) {
      if (index[s] != UINT32_MAX) continue;
      std::vector<Frame> call{{s, 0}};
      index[s] = low[s] = counter++;
      stack.push_back(s);
      on_stack[s] = 1;
      while (!call.empty()) {
        Frame& f = call.back();
        if (f.next < edges[f.v].size()) {
          uint32_t w = edges[f.v][f.next++].to;
          if (index[w] == UINT32_MAX) {
            index[w] = low[w] = counter++;
            stack.push_back(w);
            on_stack[w] = 1;
            call.push_back({w, 0});
          } else if (on_stack[w]) {
            low[f.v] = std::min(low[f.v], index[w]);
          }
          continue;
        }
        uint32_t v = f.v;
        call.pop_back();
        if (!call.empty()) low[call.back().v] = std::min(low[call.back().v], low[v]);
        if (low[v] == index[v]) {
          while (true) {
            uint32_t w = stack.back();
            stack.pop_back();
            on_stack[w] = 0;
            comp[w] = comps;
            if (w == v) break;
          }
          ++comps;
        }
      }
    }
    for (uint32_t r = 0; r < n; ++r)
      for (const Edge& e : edges[r])
        if (!e.tail && comp[r] == comp[e.to]) {
          std::string name = rules_[r].name;
          throw GrammarError(str_cat("grammar: rule '", name,
                                     "' is left-recursive (it can reach itself again before reading any "
                                     "input), which is not supported; write it with repetition instead, "
                                     "e.g. `list ::= item (\",\" item)*`"));
        }
  }

  std::string_view text_;
  GrammarLimits limits_;
  size_t pos_ = 0;
  std::vector<BuildRule> rules_;
  std::unordered_map<std::string, uint32_t> by_name_;
  std::map<ByteSet, uint32_t> set_index_;
  std::vector<ByteSet> sets_;
  std::unordered_map<std::string, uint32_t> class_rules_;
  size_t elem_count_ = 0;
  std::string current_rule_name_;
  int generated_count_ = 0;
};

std::string byte_set_text(const ByteSet& s) {
  std::string out = "[";
  int b = 0;
  auto hex = [](int v) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02X", v);
    return std::string(buf);
  };
  while (b < 256) {
    if (!detail::byte_set_has(s, static_cast<uint8_t>(b))) {
      ++b;
      continue;
    }
    int e = b;
    while (e + 1 < 256 && detail::byte_set_has(s, static_cast<uint8_t>(e + 1))) ++e;
    auto one = [&](int v) { return (v > 0x20 && v < 0x7f && v != '\\' && v != ']' && v != '-') ? std::string(1, static_cast<char>(v)) : hex(v); };
    out += one(b);
    if (e > b) {
      out.push_back('-');
      out.append(one(e));
    }
    b = e + 1;
  }
  return out + "]";
}

}  // namespace

Grammar Grammar::from_gbnf(std::string_view text, const GrammarLimits& limits) {
  Parser parser(text, limits);
  return Grammar(parser.run());
}

size_t Grammar::rule_count() const { return impl_->rule_alts.size(); }
size_t Grammar::element_count() const { return impl_->elems.size(); }

std::string Grammar::dump() const {
  const auto& g = *impl_;
  std::ostringstream os;
  for (size_t r = 0; r < g.rule_alts.size(); ++r) {
    os << g.rule_names[r] << " ::=";
    for (size_t a = 0; a < g.rule_alts[r].size(); ++a) {
      if (a) os << " |";
      for (uint32_t p = g.rule_alts[r][a]; g.elems[p].kind != ElemKind::kEnd; ++p) {
        const Elem& e = g.elems[p];
        if (e.kind == ElemKind::kRef)
          os << ' ' << g.rule_names[e.value];
        else
          os << ' ' << byte_set_text(g.byte_sets[e.value]);
      }
      if (g.elems[g.rule_alts[r][a]].kind == ElemKind::kEnd) os << " \"\"";
    }
    os << '\n';
  }
  return os.str();
}

}  // namespace glass::grammar
