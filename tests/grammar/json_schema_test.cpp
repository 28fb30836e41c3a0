// JSON Schema -> grammar: instances generated through the token mask always parse and
// validate (checked by a validator written here, apart from the converter); valid and
// invalid instances are told apart as the validator tells them; integer bounds, regex
// patterns (against PCRE2) and every refusal, with its keyword and path.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "base/json_fields.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar_test_util.h"
#include "tokenizer/regex.h"

namespace glass::grammar {
namespace {

// ---- a small validator for the subset (independent of the converter) ----

size_t code_points(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// An ECMAScript pattern for PCRE2 as glass compiles it (UTF, Unicode properties): a final
// '$' is the very end (PCRE2's '$' also matches before a final newline), \d and \w are ASCII.
std::string ecma_to_pcre(std::string p) {
  if (!p.empty() && p.back() == '$' && (p.size() < 2 || p[p.size() - 2] != '\\')) p = p.substr(0, p.size() - 1) + "\\z";
  std::string out;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '\\' && i + 1 < p.size()) {
      if (p[i + 1] == 'd') out += "[0-9]";
      else if (p[i + 1] == 'w') out += "[A-Za-z0-9_]";
      else out += p.substr(i, 2);
      ++i;
    } else {
      out.push_back(p[i]);
    }
  }
  return out;
}

bool regex_search(const std::string& pattern, const std::string& text) {
  Regex re(ecma_to_pcre(pattern), "test");
  std::vector<MatchSpan> spans;
  re.find_all(text, spans);
  return !spans.empty();
}

const OrderedJson& resolve_ref(const OrderedJson& root, const std::string& ref) {
  if (ref == "#") return root;
  size_t slash = ref.rfind('/');
  std::string defs = ref.substr(2, slash - 2);
  return root[defs][ref.substr(slash + 1)];
}

bool validate(const OrderedJson& v, const OrderedJson& s, const OrderedJson& root) {
  if (s.is_boolean()) return s.get<bool>();
  if (s.contains("$ref")) return validate(v, resolve_ref(root, s["$ref"].get<std::string>()), root);
  if (s.contains("anyOf")) {
    for (const auto& sub : s["anyOf"])
      if (validate(v, sub, root)) return true;
    return false;
  }
  if (s.contains("const") && v != s["const"]) return false;
  if (s.contains("enum")) {
    bool found = false;
    for (const auto& e : s["enum"]) found = found || e == v;
    if (!found) return false;
  }
  if (s.contains("type")) {
    std::vector<std::string> types;
    if (s["type"].is_string()) types.push_back(s["type"].get<std::string>());
    else for (const auto& t : s["type"]) types.push_back(t.get<std::string>());
    bool ok = false;
    for (const auto& t : types) {
      ok = ok || (t == "object" && v.is_object()) || (t == "array" && v.is_array()) || (t == "string" && v.is_string()) ||
           (t == "integer" && (v.is_number_integer() || v.is_number_unsigned())) || (t == "number" && v.is_number()) ||
           (t == "boolean" && v.is_boolean()) || (t == "null" && v.is_null());
    }
    if (!ok) return false;
  }
  if (v.is_object()) {
    const OrderedJson empty = OrderedJson::object();
    const OrderedJson& props = s.contains("properties") ? s["properties"] : empty;
    if (s.contains("required"))
      for (const auto& r : s["required"])
        if (!v.contains(r.get<std::string>())) return false;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (props.contains(it.key())) {
        if (!validate(it.value(), props[it.key()], root)) return false;
      } else if (s.contains("additionalProperties")) {
        if (!validate(it.value(), s["additionalProperties"], root)) return false;
      }
    }
  }
  if (v.is_array()) {
    if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) return false;
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) return false;
    if (s.contains("items"))
      for (const auto& x : v)
        if (!validate(x, s["items"], root)) return false;
  }
  if (v.is_string()) {
    std::string str = v.get<std::string>();
    if (s.contains("minLength") && code_points(str) < s["minLength"].get<size_t>()) return false;
    if (s.contains("maxLength") && code_points(str) > s["maxLength"].get<size_t>()) return false;
    if (s.contains("pattern") && !regex_search(s["pattern"].get<std::string>(), str)) return false;
    if (s.contains("format")) {
      std::string f = s["format"].get<std::string>();
      if (f == "date" && !regex_search(R"(^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$)", str)) return false;
      if (f == "uuid" && !regex_search(R"(^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$)", str)) return false;
    }
  }
  if (v.is_number()) {
    double d = v.get<double>();
    if (s.contains("minimum") && d < s["minimum"].get<double>()) return false;
    if (s.contains("maximum") && d > s["maximum"].get<double>()) return false;
    if (s.contains("exclusiveMinimum") && d <= s["exclusiveMinimum"].get<double>()) return false;
    if (s.contains("exclusiveMaximum") && d >= s["exclusiveMaximum"].get<double>()) return false;
  }
  return true;
}

using test::accepts;

// Strict schemas (additionalProperties false, as OpenAI's strict mode asks), with
// non-integer numbers bounded only at 0 (where exponents stay): for these the grammar's
// language is exactly the valid instances, with properties in the declared order.
const char* const kPersonSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "minLength": 1, "maxLength": 6},
    "age": {"type": "integer", "minimum": -5, "maximum": 120},
    "kind": {"enum": ["a", "b", 1, null, {"x": [true]}]},
    "score": {"type": ["number", "null"], "minimum": 0},
    "ok": {"type": "boolean"},
    "ids": {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
    "home": {
      "type": "object",
      "properties": {"city": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
      "required": ["zip"],
      "additionalProperties": false
    }
  },
  "required": ["name", "age", "home"],
  "additionalProperties": false
})";

const char* const kTreeSchema = R"({
  "$defs": {
    "node": {
      "type": "object",
      "properties": {
        "value": {"type": "integer"},
        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}
      },
      "required": ["value"],
      "additionalProperties": false
    }
  },
  "$ref": "#/$defs/node"
})";

const char* const kMixedSchema = R"({
  "type": "array",
  "items": {
    "anyOf": [
      {"type": "string", "pattern": "^[a-z]{2,4}-[0-9]+$"},
      {"type": "integer", "exclusiveMinimum": 9, "exclusiveMaximum": 1000},
      {"type": "string", "format": "date"},
      {"type": "string", "format": "uuid"},
      {"const": "fixed"},
      {"type": "object", "additionalProperties": {"type": "boolean"}}
    ]
  },
  "maxItems": 8
})";

// A byte-level vocabulary plus JSON-ish multi-byte tokens, some splitting characters.
std::shared_ptr<const TokenVocabulary> walk_vocab() {
  std::vector<std::string> t;
  for (int b = 0; b < 256; ++b) t.push_back(std::string(1, static_cast<char>(b)));
  for (const char* s : {"{\"", "\"}", "\":", "\": ", "\", \"", ", ", "true", "false", "null", "12", "0", "-", "[", "]", "[{",
                        "}]", "name", "age", "kind", "home", "zip", "city", "value", "children", "ids", "ok", "score",
                        "\"name\": \"", "é", "東京", "\xE6\x9D", "\xB1", "\n  ", "  ", "20", "12-", "ab-1", "-0", "9e", "\\u00e9",
                        "2024-01-3", "fixed", "\\\"", "\\n"})
    t.push_back(s);
  t.push_back("<eos>");
  return std::make_shared<const TokenVocabulary>(t, std::vector<int32_t>{static_cast<int32_t>(t.size() - 1)});
}

// Random generation through the mask, preferring multi-byte and ASCII tokens; nullopt
// when no end is reached within the step budget.
std::optional<std::string> random_walk(const Grammar& g, const std::shared_ptr<const TokenVocabulary>& vocab, std::mt19937& rng) {
  GrammarMatcher m(g, vocab);
  std::string out;
  for (int step = 0; step < 400; ++step) {
    TokenMask mask = m.mask();
    std::vector<int32_t> allowed, preferred;
    for (size_t id = 0; id < vocab->size(); ++id) {
      if (!mask.allowed(static_cast<int32_t>(id))) continue;
      allowed.push_back(static_cast<int32_t>(id));
      std::string_view b = vocab->bytes(static_cast<int32_t>(id));
      bool ascii_punct = b.size() == 1 && (b[0] == '"' || b[0] == ',' || b[0] == '}' || b[0] == ']' || b[0] == ':' || (b[0] >= '0' && b[0] <= '9') || (b[0] >= 'a' && b[0] <= 'f'));
      if (b.size() > 1 || ascii_punct) preferred.push_back(static_cast<int32_t>(id));
    }
    EXPECT_FALSE(allowed.empty()) << "a live matcher with nothing allowed after " << out;
    if (allowed.empty()) return std::nullopt;
    if (m.can_end() && (rng() % 4 == 0 || step > 200)) return out;
    const auto& pool = !preferred.empty() && rng() % 5 != 0 ? preferred : allowed;
    int32_t id = pool[rng() % pool.size()];
    if (vocab->is_end(id)) return out;
    EXPECT_TRUE(m.accept_token(id));
    out += vocab->bytes(id);
  }
  return std::nullopt;
}

TEST(GrammarJsonSchema, GeneratedInstancesAlwaysValidate) {
  auto vocab = walk_vocab();
  uint32_t seed = 1;
  for (const char* text : {kPersonSchema, kTreeSchema, kMixedSchema}) {
    OrderedJson schema = OrderedJson::parse(text);
    Grammar g = json_schema_grammar(schema);
    std::mt19937 rng(seed++);
    int done = 0;
    for (int i = 0; i < 60; ++i) {
      auto doc = random_walk(g, vocab, rng);
      if (!doc) continue;
      ++done;
      OrderedJson v;
      ASSERT_NO_THROW(v = OrderedJson::parse(*doc)) << *doc;
      EXPECT_TRUE(validate(v, schema, schema)) << *doc;
      if (testing::Test::HasFailure()) return;
    }
    EXPECT_GT(done, 30) << text;
  }
}

TEST(GrammarJsonSchema, JsonObjectModeGeneratesObjects) {
  auto vocab = walk_vocab();
  Grammar g = json_object_grammar();
  std::mt19937 rng(9);
  int done = 0;
  for (int i = 0; i < 60; ++i) {
    auto doc = random_walk(g, vocab, rng);
    if (!doc) continue;
    ++done;
    OrderedJson v;
    ASSERT_NO_THROW(v = OrderedJson::parse(*doc)) << *doc;
    EXPECT_TRUE(v.is_object()) << *doc;
  }
  EXPECT_GT(done, 30);
  EXPECT_TRUE(accepts(g, R"({"a": [1, {"b": null}], "c": "d"})"));
  EXPECT_FALSE(accepts(g, "[1]"));
  EXPECT_FALSE(accepts(g, "{\"a\":      1}"));  // more whitespace than the bound
  GrammarMatcher m(g);
  EXPECT_FALSE(m.accept_bytes(" {"));  // no leading whitespace
}

// Mutations of valid instances: the grammar accepts exactly those the validator accepts.
TEST(GrammarJsonSchema, AcceptsExactlyTheValidInstances) {
  struct Case {
    const char* schema;
    std::vector<const char*> valid;
  };
  const Case cases[] = {
      {kPersonSchema,
       {R"({"name": "Al", "age": 30, "home": {"zip": "12345"}})",
        R"({"name": "Zoë", "age": -5, "kind": {"x": [true]}, "score": 0.5, "ok": false, "ids": [1, -2], "home": {"city": "東京", "zip": "00000"}})",
        R"({"name": "a\"b", "age": 120, "kind": null, "score": null, "home": {"zip": "99999"}})"}},
      {kTreeSchema, {R"({"value": 1, "children": [{"value": 2}, {"value": 3, "children": []}]})"}},
      {kMixedSchema, {R"(["ab-12", 10, 999, "2024-02-29", "123e4567-e89b-12d3-a456-426614174000", "fixed", {"x": true}, {}])"}},
  };
  std::mt19937 rng(3);
  for (const auto& c : cases) {
    OrderedJson schema = OrderedJson::parse(c.schema);
    Grammar g = json_schema_grammar(schema);
    int valid_count = 0, invalid_count = 0;
    for (const char* text : c.valid) {
      OrderedJson base = OrderedJson::parse(text);
      ASSERT_TRUE(validate(base, schema, schema)) << text;
      for (int i = 0; i < 150; ++i) {
        OrderedJson v = base;
        // Change one value somewhere: a replacement of another kind, a dropped key or item.
        std::vector<OrderedJson*> nodes{&v};
        for (size_t k = 0; k < nodes.size(); ++k) {
          OrderedJson& n = *nodes[k];
          if (n.is_object())
            for (auto it = n.begin(); it != n.end(); ++it) nodes.push_back(&it.value());
          if (n.is_array())
            for (auto& x : n) nodes.push_back(&x);
        }
        OrderedJson& target = *nodes[rng() % nodes.size()];
        const OrderedJson replacements[] = {nullptr, 0, 7, -6, 121, 1.5, "", "abcdefg", "ab-1", "2024-13-01", true,
                                            OrderedJson::array(), OrderedJson::object(), "fixed", 1000, 9, "12345"};
        int kind = static_cast<int>(rng() % 3);
        if (i == 0) {
          // the instance itself
        } else if (kind == 0 || !(target.is_object() || target.is_array()) || target.empty()) {
          target = replacements[rng() % std::size(replacements)];
        } else if (target.is_object()) {
          auto it = target.begin();
          std::advance(it, static_cast<long>(rng() % target.size()));
          target.erase(it.key());
        } else {
          target.erase(target.begin() + static_cast<long>(rng() % target.size()));
        }
        bool expected = validate(v, schema, schema);
        for (const std::string& dumped : {v.dump(), v.dump(2)}) {
          EXPECT_EQ(accepts(g, dumped), expected) << dumped;
          if (testing::Test::HasFailure()) return;
        }
        (expected ? valid_count : invalid_count)++;
      }
    }
    EXPECT_GT(valid_count, 10);
    EXPECT_GT(invalid_count, 30);
  }
}

TEST(GrammarJsonSchema, PropertyOrderOptionalAndAdditional) {
  Grammar g = json_schema_grammar(std::string_view(
      R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"},"c":{"type":"boolean"}},"required":["b"]})"));
  EXPECT_TRUE(accepts(g, R"({"b":"x"})"));
  EXPECT_TRUE(accepts(g, R"({"a":1,"b":"x","c":true})"));
  EXPECT_TRUE(accepts(g, R"({"a":1,"b":"x"})"));
  EXPECT_TRUE(accepts(g, R"({"b":"x","c":false})"));
  EXPECT_FALSE(accepts(g, R"({"b":"x","a":1})"));   // declared order
  EXPECT_FALSE(accepts(g, R"({"a":1})"));           // b required
  EXPECT_FALSE(accepts(g, R"({"b":"x","d":1})"));   // no additional properties generated
  EXPECT_FALSE(accepts(g, R"({"b":"x",})"));
  EXPECT_FALSE(accepts(g, R"({,"b":"x"})"));
  Grammar all_optional = json_schema_grammar(std::string_view(R"({"properties":{"a":{},"b":{}}})"));
  EXPECT_TRUE(accepts(all_optional, "{}"));
  EXPECT_TRUE(accepts(all_optional, R"({"b":[1,{"z":null}]})"));
  EXPECT_FALSE(accepts(all_optional, R"({"b":1,"a":2})"));
  Grammar map = json_schema_grammar(std::string_view(R"({"type":"object","additionalProperties":{"type":"integer"}})"));
  EXPECT_TRUE(accepts(map, R"({"x":1,"y":2})"));
  EXPECT_FALSE(accepts(map, R"({"x":"1"})"));
  Grammar nullable = json_schema_grammar(std::string_view(R"({"type":["string","null"]})"));
  EXPECT_TRUE(accepts(nullable, "null"));
  EXPECT_TRUE(accepts(nullable, "\"s\""));
  EXPECT_FALSE(accepts(nullable, "1"));
  Grammar any = json_schema_grammar(std::string_view("{}"));
  EXPECT_TRUE(accepts(any, "[1,\"a\",{\"b\":null}]"));
  Grammar items = json_schema_grammar(std::string_view(R"({"type":"array","minItems":2,"maxItems":3})"));
  EXPECT_FALSE(accepts(items, "[1]"));
  EXPECT_TRUE(accepts(items, "[1,2]"));
  EXPECT_TRUE(accepts(items, "[1, 2, 3]"));
  EXPECT_FALSE(accepts(items, "[1,2,3,4]"));
  Grammar length = json_schema_grammar(std::string_view(R"({"type":"string","minLength":2,"maxLength":3})"));
  EXPECT_TRUE(accepts(length, "\"é\\n\""));     // two characters, one escaped
  EXPECT_FALSE(accepts(length, "\"é\""));
  EXPECT_FALSE(accepts(length, "\"abcd\""));
}

TEST(GrammarJsonSchema, IntegerBoundsAreExact) {
  struct B {
    const char* keywords;
    long lo, hi;  // expected inclusive range within [-3000, 3000]
  };
  const B cases[] = {
      {R"("minimum": -15, "maximum": 123)", -15, 123},
      {R"("minimum": 7, "maximum": 7)", 7, 7},
      {R"("minimum": 0, "maximum": 1000)", 0, 1000},
      {R"("minimum": -1000, "maximum": -5)", -1000, -5},
      {R"("minimum": 95)", 95, 3000},
      {R"("maximum": -3)", -3000, -3},
      {R"("exclusiveMinimum": 9, "exclusiveMaximum": 100)", 10, 99},
      {R"("minimum": 1.5, "maximum": 20.5)", 2, 20},
      {R"("minimum": -2999, "maximum": 2999)", -2999, 2999},
      {R"("minimum": 100, "maximum": 1999)", 100, 1999},
  };
  for (const auto& c : cases) {
    std::string schema = str_cat(R"({"type": "integer", )", c.keywords, "}");
    Grammar g = json_schema_grammar(std::string_view(schema));
    for (long n = -3000; n <= 3000; ++n) {
      bool in = n >= c.lo && n <= c.hi;
      ASSERT_EQ(accepts(g, std::to_string(n)), in) << schema << " n=" << n;
    }
    EXPECT_FALSE(accepts(g, "-0"));
    EXPECT_FALSE(accepts(g, "007"));
    EXPECT_FALSE(accepts(g, "1.0"));
  }
  Grammar big = json_schema_grammar(std::string_view(R"({"type":"integer","minimum":-9223372036854775807,"maximum":9223372036854775807})"));
  EXPECT_TRUE(accepts(big, "9223372036854775807"));
  EXPECT_FALSE(accepts(big, "9223372036854775808"));
  EXPECT_TRUE(accepts(big, "-9223372036854775807"));
  Grammar nonneg = json_schema_grammar(std::string_view(R"({"type":"number","minimum":0})"));
  EXPECT_TRUE(accepts(nonneg, "1.5e3"));
  EXPECT_FALSE(accepts(nonneg, "-1"));
}

// Bounds on non-integer numbers, exactly: every accepted string is within them, and every
// plain decimal within them is accepted (exponent forms are written only on a half-line
// from 0).
TEST(GrammarJsonSchema, NumberBoundsAreExact) {
  const std::vector<std::string> schemas = {
      R"({"type": "number", "minimum": 0.25, "maximum": 2.5})",
      R"({"type": "number", "exclusiveMinimum": -1.5, "exclusiveMaximum": 0})",
      R"({"type": "number", "minimum": -0.05, "exclusiveMaximum": 0.05})",
      R"({"type": "number", "exclusiveMinimum": 0})",
      R"({"type": "number", "maximum": -0.1})",
      R"({"type": "number", "maximum": 0})",
      R"({"type": "number", "minimum": 1e-05, "maximum": 0.5})",
      R"({"type": "number", "minimum": 0, "maximum": 0})",
      R"({"type": "number", "minimum": 10, "maximum": 20.75})",
      R"({"type": "number", "exclusiveMinimum": 2.5, "maximum": 2.75})",
      R"({"type": "number", "minimum": -20, "maximum": -10.5, "exclusiveMaximum": -10.5})",
      R"({"type": "number", "minimum": 3, "exclusiveMinimum": 2.999, "maximum": 100})",
      R"({"minimum": -7.125})",
  };
  std::vector<std::string> candidates;
  for (int i = -25; i <= 25; ++i)
    for (const char* f : {"", ".0", ".00001", ".00002", ".05", ".0499", ".1", ".125", ".25", ".2499", ".25001", ".5", ".75",
                          ".7501", ".999", ".9999999"}) {
      const std::string integer = std::to_string(std::abs(i));
      candidates.push_back((i < 0 ? "-" : "") + integer + f);
    }
  for (const char* e : {"1e2", "2.5E-1", "-1e-3", "0e0", "-0", "-0.5e1", "00.5", "1.", ".5", "+1"}) candidates.push_back(e);
  for (const std::string& text : schemas) {
    SCOPED_TRACE(text);
    const OrderedJson schema = OrderedJson::parse(text);
    const Grammar g = json_schema_grammar(std::string_view(text));
    size_t accepted = 0;
    for (const std::string& c : candidates) {
      OrderedJson value;
      try {
        value = OrderedJson::parse(c);
      } catch (const std::exception&) {
        EXPECT_FALSE(accepts(g, c)) << c;
        continue;
      }
      const bool valid = validate(value, schema, schema);
      const bool plain = c.find_first_of("eE") == std::string::npos && !c.starts_with("-0");
      const bool in = accepts(g, c);
      accepted += in;
      EXPECT_TRUE(!in || valid) << c << " accepted but out of bounds";
      EXPECT_TRUE(in || !valid || !plain) << c << " within bounds but refused";
    }
    EXPECT_GT(accepted, 0u);
  }
  const auto error_of = [](const std::string& schema) -> std::string {
    try {
      json_schema_grammar(std::string_view(schema));
    } catch (const GrammarError& e) {
      return e.what();
    }
    return "accepted";
  };
  // Exponents where no bound limits them.
  EXPECT_TRUE(accepts(json_schema_grammar(std::string_view(R"({"type": "number", "minimum": -1})")), "1.5e3"));
  EXPECT_FALSE(accepts(json_schema_grammar(std::string_view(R"({"type": "number", "minimum": 1})")), "1.5e3"));
  for (const std::string bad : {R"({"type": "number", "minimum": 1, "exclusiveMaximum": 1})",
                                R"({"type": "number", "minimum": 2.5, "maximum": 2.25})",
                                R"({"type": "number", "exclusiveMinimum": 0, "maximum": 0})"}) {
    EXPECT_NE(error_of(bad).find("no number satisfies the bounds"), std::string::npos) << bad;
  }
  EXPECT_NE(error_of(R"({"type": "number", "maximum": 1e300})").find("at #/maximum"), std::string::npos);
}

TEST(GrammarJsonSchema, PatternsAgreeWithPcre2) {
  struct P {
    const char* pattern;
    std::vector<std::string> examples;  // matching strings, mutated below
  };
  const P patterns[] = {
      {"^[a-z]{2,4}-[0-9]+$", {"ab-1", "abcd-0123"}},
      {"^(ab|cd)*e?$", {"abcde", ""}},
      {"^\\d{3}(\\.\\d+)?$", {"123", "123.45"}},
      {"^[^a-c\"\\\\]{1,3}$", {"xé", "d\n"}},
      {"^(?:x|y\\.|\\\\|\")+$", {"x\\\"y.", "y."}},
      {"b+c", {"abbcd", "bc"}},
      {"^\\w+@\\w+\\.(com|org)$", {"a_1@b.com", "x@y.org"}},
      {"^.{2}$", {"é\"", "ab"}},
      {"^[\\s\\S]?$", {"\n", ""}},
  };
  const std::vector<std::string> alphabet = {"a", "b", "c", "d", "e", "x", "y", ".", "-", "0", "1", "2", "3", "@",
                                             "\\", "\"", " ", "\n", "\xC3\xA9", "_"};
  std::mt19937 rng(4);
  for (const auto& p : patterns) {
    Grammar g = json_schema_grammar(OrderedJson{{"type", "string"}, {"pattern", p.pattern}});
    int yes = 0, no = 0;
    for (int i = 0; i < 2000; ++i) {
      // Strings as lists of characters, so edits never cut one.
      std::vector<std::string> chars;
      const std::string& ex = p.examples[rng() % p.examples.size()];
      for (size_t k = 0; k < ex.size(); ++k) {
        size_t len = (static_cast<unsigned char>(ex[k]) & 0xE0) == 0xC0 ? 2 : 1;
        chars.push_back(ex.substr(k, len));
        k += len - 1;
      }
      int edits = static_cast<int>(rng() % 3);
      for (int k = 0; k < edits; ++k) {
        size_t at = rng() % (chars.size() + 1);
        if (rng() % 2 || chars.empty()) {
          chars.insert(chars.begin() + static_cast<long>(at), alphabet[rng() % alphabet.size()]);
        } else {
          chars.erase(chars.begin() + static_cast<long>(std::min(at, chars.size() - 1)));
        }
      }
      std::string s;
      for (const auto& c : chars) s += c;
      bool expected = regex_search(p.pattern, s);
      std::string json = OrderedJson(s).dump();
      ASSERT_EQ(accepts(g, json), expected) << p.pattern << " on " << json;
      (expected ? yes : no)++;
    }
    EXPECT_GT(yes, 50) << p.pattern;
    EXPECT_GT(no, 50) << p.pattern;
  }
}

// Tool calls: two tools' parameter schemas composed inside the hermes wrapper.
TEST(GrammarJsonSchema, ComposedToolCallGrammar) {
  OrderedJson weather = OrderedJson::parse(R"({"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1,"maximum":7}},"required":["city"],"additionalProperties":false})");
  OrderedJson search = OrderedJson::parse(R"({"$defs":{"q":{"type":"string","minLength":1}},"type":"object","properties":{"query":{"$ref":"#/$defs/q"}},"required":["query"]})");
  std::string g = "root ::= \"<tool_call>\\n{\\\"name\\\": \" (call-0 | call-1) \"}\\n</tool_call>\"\n";
  g += "call-0 ::= " + gbnf_quote("\"get_weather\", \"arguments\": ") + " args-0\n";
  g += "call-1 ::= " + gbnf_quote("\"web_search\", \"arguments\": ") + " args-1\n";
  g += json_schema_rules(weather, "args-0");
  g += json_schema_rules(search, "args-1");
  g += json_common_gbnf();
  Grammar grammar = Grammar::from_gbnf(g);
  EXPECT_TRUE(accepts(grammar, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>"));
  EXPECT_TRUE(accepts(grammar, "<tool_call>\n{\"name\": \"web_search\", \"arguments\": {\"query\": \"x\"}}\n</tool_call>"));
  EXPECT_FALSE(accepts(grammar, "<tool_call>\n{\"name\": \"web_search\", \"arguments\": {\"query\": \"\"}}\n</tool_call>"));
  EXPECT_FALSE(accepts(grammar, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 8}}\n</tool_call>"));
  EXPECT_FALSE(accepts(grammar, "<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_THROW((void)json_schema_rules(weather, "root"), GrammarError);
  EXPECT_THROW((void)json_schema_rules(weather, "bad name"), GrammarError);
  EXPECT_THROW((void)json_schema_rules(OrderedJson::parse(R"({"type": 5})"), "args-2"), GrammarError);
}

std::string schema_error(std::string_view text) {
  try {
    (void)json_schema_grammar(text);
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(GrammarJsonSchema, BadSchemasAreRefusedWithKeywordAndPath) {
  struct Bad {
    const char* schema;
    const char* expect;
  };
  const Bad cases[] = {
      {R"({"type": 5})", "at #/type: 'type' must be a string or an array of strings"},
      {R"({"type": "strng"})", "at #/type: unknown type \"strng\""},
      {R"({"properties": {"a": {"not": {"type": "string"}}}})", "at #/properties/a/not: unsupported keyword 'not'"},
      {R"({"type": "array", "items": {"oneOf": [{}]}})", "at #/items/oneOf: unsupported keyword 'oneOf'"},
      {R"({"type":"object","properties":{"a/b":{"minProperties":1}}})", "at #/properties/a~1b/minProperties: unsupported keyword"},
      {R"({"$ref": "https://example.com/s.json"})", "only local references"},
      {R"({"$ref": "#/$defs/missing"})", "points to nothing"},
      {R"({"type": "string", "format": "email"})", "at #/format: unsupported format \"email\""},
      {R"({"type": "string", "pattern": "^(?=a)b$"})", "at #/pattern: pattern /^(?=a)b$/: at offset 2: lookaround"},
      {R"({"type": "string", "pattern": "(a)\\1"})", "the escape \\1 is not supported"},
      {R"({"type": "string", "pattern": "^a|b$"})", "an anchor with '|' at the top level"},
      {R"({"type": "object", "properties": {"a": {}}, "required": ["b"]})", "required property \"b\" is not in 'properties'"},
      {R"({"type": "array", "minItems": -1})", "at #/minItems: 'minItems' must be a non-negative integer"},
      {R"({"type": "array", "minItems": 3, "maxItems": 2})", "'maxItems' is less than 'minItems'"},
      {R"({"type": "integer", "minimum": 5, "maximum": 4})", "no integer satisfies the bounds"},
      {R"({"type": "integer", "minimum": "0"})", "at #/minimum: 'minimum' must be a number"},
      {R"({"anyOf": []})", "at #/anyOf: 'anyOf' must be a non-empty array"},
      {R"({"enum": 3})", "'enum' must be a non-empty array"},
      {R"(false)", "accepts no value"},
      {R"([1, 2])", "expected a schema"},
      {R"({"type": "string", "maxLength": 1000000000})", "more than the supported"},
      {R"({"type": "array", "items": [{}]})", "tuple validation"},
      {R"({"type": "object"  )", "not valid JSON"},
      {R"({"$defs": {"a": {"type": "object", "properties": {"x": {"$ref": "#/$defs/a"}}, "required": ["x"]}}, "$ref": "#/$defs/a"})",
       "no finite JSON value satisfies the schema: the $ref cycle through #/$defs/a has no base case"},
      {R"({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"})",
       "no finite JSON value satisfies the schema"},
  };
  for (const auto& c : cases) {
    std::string err = schema_error(c.schema);
    EXPECT_NE(err.find(c.expect), std::string::npos) << c.schema << "\n" << err;
    EXPECT_EQ(err.rfind("json schema: ", 0), 0u) << err;
  }
  // A cycle with a base case is fine.
  EXPECT_EQ(schema_error(kTreeSchema), "(no error)");
  EXPECT_EQ(schema_error(R"({"$defs":{"l":{"anyOf":[{"type":"null"},{"type":"array","items":{"$ref":"#/$defs/l"},"minItems":1}]}},"$ref":"#/$defs/l"})"),
            "(no error)");
}

TEST(GrammarJsonSchema, DeepNestingIsRefusedNotCrashed) {
  // 10,000 nested schemas as text: refused by the JSON reader's depth limit.
  std::string deep;
  for (int i = 0; i < 10000; ++i) deep += R"({"type":"array","items":)";
  deep += "{}";
  deep += std::string(10000, '}');
  EXPECT_NE(schema_error(deep).find("json schema: "), std::string::npos);
  // Built directly (no parser limit): refused by the converter's own depth limit.
  OrderedJson s = OrderedJson::object();
  for (int i = 0; i < 100; ++i) s = OrderedJson{{"type", "array"}, {"items", s}};
  try {
    (void)json_schema_grammar(s);
    FAIL();
  } catch (const GrammarError& e) {
    EXPECT_NE(std::string(e.what()).find("nested more than"), std::string::npos) << e.what();
  }
  // 60 levels work.
  OrderedJson ok = OrderedJson{{"type", "integer"}};
  for (int i = 0; i < 60; ++i) ok = OrderedJson{{"type", "array"}, {"items", ok}};
  Grammar g = json_schema_grammar(ok);
  EXPECT_TRUE(accepts(g, std::string(60, '[') + "1" + std::string(60, ']')));
}

}  // namespace
}  // namespace glass::grammar
