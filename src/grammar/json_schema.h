// JSON Schema (the subset OpenAI's structured outputs document) and JSON mode as GBNF.
//
// Supported, per keyword:
//   type            "object" "array" "string" "number" "integer" "boolean" "null", or an
//                   array of them (["string", "null"]: nullable). Without `type` the kind
//                   comes from the other keywords (properties -> object, items -> array),
//                   or any JSON value (`{}` and `true` too).
//   properties, required
//                   properties are generated in the order the schema gives them; required
//                   ones always, optional ones may be left out.
//   additionalProperties
//                   false, or absent: only the declared properties are generated (an
//                   instance with no extra properties is valid either way). true or a schema
//                   on an object without `properties`: a map with any keys.
//   items, minItems, maxItems
//   enum, const     any JSON values: the value's tokens as nlohmann writes them
//                   (strings escaped only where JSON must), whitespace between them.
//   pattern         an ECMAScript regex subset: literals, escapes, . \d \w \s \D \W \S,
//                   classes, groups (capturing and (?:)), |, * + ? {m} {m,} {m,n} (lazy
//                   forms too), ^ at the start and $ at the end (unanchored ends match
//                   any text, as JSON Schema says). Refused: backreferences, lookaround,
//                   \b, and anything else.
//   minLength, maxLength (code points, escapes count as one)
//   format          date, time, date-time, uuid; others are refused.
//   minimum, maximum, exclusiveMinimum, exclusiveMaximum
//                   enforced exactly. integers: within int64. numbers: bounds below 1e18
//                   with at most 40 decimals, compared digit by digit with the bound's
//                   shortest decimal form (0.1 is 0.1, not the double nearest it); where a
//                   bound limits them, numbers are written as plain decimals (no exponent).
//   anyOf, $ref ("#", "#/$defs/name", "#/definitions/name"; local only), $defs, definitions
//   Annotations (title, description, default, examples, $schema, $id, $comment) are
//   ignored. Every other keyword is refused, naming it and its JSON path.
//
// Whitespace: at most one space, or a newline and up to 20 spaces or tabs of
// indentation, between tokens (so a model cannot spend its tokens on blank space).
#pragma once

#include <string>
#include <string_view>

#include "base/json_fields.h"
#include "grammar/grammar.h"

namespace glass::grammar {

// GBNF whose root is an instance of `schema`. Throws GrammarError ("json schema: at
// #/properties/x: ...") for unsupported keywords and invalid schemas, including a schema
// no finite value satisfies (a $ref cycle with no base case).
std::string json_schema_to_gbnf(const OrderedJson& schema);
// `schema_text` is parsed as JSON first (errors name "json schema").
std::string json_schema_to_gbnf(std::string_view schema_text);
// Compiled: json_schema_to_gbnf then Grammar::from_gbnf.
Grammar json_schema_grammar(const OrderedJson& schema);
Grammar json_schema_grammar(std::string_view schema_text);

// Composing grammars, e.g. for tool calls (tool_choice "required" or a named function),
// where each tool's parameters schema goes inside a fixed wrapper:
//
//   std::string g = "root ::= \"<tool_call>\\n{\\\"name\\\": \" (call-0 | call-1) \"}\\n</tool_call>\"\n";
//   g += "call-0 ::= " + gbnf_quote("\"get_weather\", \"arguments\": ") + " args-0\n";
//   g += json_schema_rules(tools[0].parameters, "args-0");   // likewise call-1, args-1
//   g += json_common_gbnf();                                   // once
//   Grammar grammar = Grammar::from_gbnf(g);
//
// json_schema_rules: the rules for instances of `schema`, its start rule named
// `rule_name` (letters, digits, '-'; not root, space or json-*) and every other rule
// prefixed with it, without the shared rules (space, json-*) that json_common_gbnf()
// holds. Checked like json_schema_to_gbnf. gbnf_quote: a GBNF string literal of `text`.
std::string json_schema_rules(const OrderedJson& schema, const std::string& rule_name);
const std::string& json_common_gbnf();
std::string gbnf_quote(std::string_view text);

// response_format {"type": "json_object"}: any JSON object.
const std::string& json_object_gbnf();
Grammar json_object_grammar();

// A regex (the subset `pattern` supports) as a GBNF expression over the characters of a
// JSON string's contents (escaped as JSON needs). Throws GrammarError. For tests.
std::string regex_to_gbnf(std::string_view regex);

}  // namespace glass::grammar
