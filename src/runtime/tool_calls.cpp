#include "runtime/tool_calls.h"

#include <algorithm>

#include "base/json_fields.h"
#include "grammar/json_schema.h"
#include "runtime/tag_scan.h"

namespace glass {

namespace {

constexpr std::string_view kToolCallOpen = "<tool_call>";
constexpr std::string_view kToolCallClose = "</tool_call>";

}  // namespace

void HermesToolCallReader::read_argument(char c, ToolCallReading& out) {
  if (in_string_) {
    if (escaped_) escaped_ = false;
    else if (c == '\\') escaped_ = true;
    else if (c == '"') in_string_ = false;
  } else if (is_space(c)) {
    return;  // whitespace between JSON tokens: left out, as a compact dump does
  } else if (c == '"') {
    in_string_ = true;
  } else if (c == '{' || c == '[') {
    ++depth_;
  } else if (c == '}' || c == ']') {
    --depth_;
  }
  if (out.parts.empty() || out.parts.back().call != calls_) out.parts.push_back({calls_, false, "", ""});
  out.parts.back().arguments += c;
  if (depth_ == 0 && !in_string_) {
    state_ = State::kClosing;
    header_.clear();
    header_step_ = 0;
    literal_ = 0;
  }
}

bool HermesToolCallReader::read_header(char c, ToolCallReading& out) {
  // The tokens of `{"name": STRING, "arguments": {`, whitespace allowed before each.
  enum Step { kBrace, kNameKey, kNameColon, kName, kComma, kArgumentsKey, kArgumentsColon, kArguments };
  static constexpr std::string_view kNameLiteral = "\"name\"", kArgumentsLiteral = "\"arguments\"";
  header_ += c;
  if (header_step_ == kName && !name_.empty()) {
    // In the name's string, up to its closing quote.
    name_ += c;
    if (escaped_) escaped_ = false;
    else if (c == '\\') escaped_ = true;
    else if (c == '"') ++header_step_;
    return true;
  }
  if (literal_ == 0 && is_space(c)) return true;
  const auto literal = [&](std::string_view text) {
    if (c != text[literal_]) return false;
    if (++literal_ == text.size()) {
      literal_ = 0;
      ++header_step_;
    }
    return true;
  };
  switch (header_step_) {
    case kBrace: return c == '{' && ++header_step_;
    case kNameKey: return literal(kNameLiteral);
    case kNameColon: return c == ':' && ++header_step_;
    case kName:
      if (c != '"') return false;
      name_ = "\"";
      escaped_ = false;
      return true;
    case kComma: return c == ',' && ++header_step_;
    case kArgumentsKey: return literal(kArgumentsLiteral);
    case kArgumentsColon: return c == ':' && ++header_step_;
    default: break;
  }
  if (c != '{') return false;
  // A JSON string as written may still be no string (a bad escape, bytes that are not
  // UTF-8): then this is no call.
  std::string name;
  try {
    name = parse_ordered_json(name_, "a tool call's name").get<std::string>();
  } catch (const Error&) {
    return false;
  }
  out.parts.push_back({calls_, true, std::move(name), ""});
  state_ = State::kArguments;
  depth_ = 0;
  in_string_ = escaped_ = false;
  read_argument(c, out);
  return true;
}

void HermesToolCallReader::read(ToolCallReading& out) {
  static constexpr std::string_view kClosingBrace = "}";
  size_t i = 0;
  while (i < input_.size()) {
    const char c = input_[i];
    switch (state_) {
      case State::kContent: {
        const std::string_view rest = std::string_view(input_).substr(i);
        const size_t open = rest.find(kToolCallOpen);
        if (open == std::string_view::npos) {
          // Hold back a tag that may be arriving and the whitespace before it.
          size_t keep = partial_tag_at_end(rest, kToolCallOpen);
          keep += trailing_space(rest.substr(0, rest.size() - keep));
          out.content.append(rest.substr(0, rest.size() - keep));
          input_.erase(0, input_.size() - keep);
          return;
        }
        // The whitespace before the tag goes with the block: dropped with a call,
        // restored with text that only looks like one.
        const std::string_view before = rest.substr(0, open);
        const size_t space = trailing_space(before);
        out.content.append(before.substr(0, before.size() - space));
        block_prefix_ = std::string(before.substr(before.size() - space));
        i += open + kToolCallOpen.size();
        state_ = State::kHeader;
        header_.clear();
        name_.clear();
        header_step_ = 0;
        literal_ = 0;
        continue;
      }
      case State::kHeader:
        ++i;
        if (!read_header(c, out)) {
          // Not a call: the tag is content, and its text is read again as content.
          out.content += block_prefix_;
          out.content += kToolCallOpen;
          block_prefix_.clear();
          input_ = header_ + input_.substr(i);
          i = 0;
          state_ = State::kContent;
        }
        continue;
      case State::kArguments:
        ++i;
        read_argument(c, out);
        continue;
      case State::kClosing: {
        ++i;
        header_ += c;
        if (literal_ == 0 && is_space(c)) continue;
        const std::string_view expected = header_step_ == 0 ? kClosingBrace : kToolCallClose;
        if (c == expected[literal_]) {
          if (++literal_ < expected.size()) continue;
          literal_ = 0;
          if (++header_step_ < 2) continue;
          ++calls_;
          block_prefix_.clear();
          state_ = State::kAfterCall;
          continue;
        }
        // Only without the grammar: the call stands as released; what follows its
        // arguments is content.
        ++calls_;
        block_prefix_.clear();
        input_ = header_ + input_.substr(i);
        i = 0;
        state_ = State::kContent;
        continue;
      }
      case State::kAfterCall: {
        // Whitespace between calls (or after the last) is the template's; before text
        // it is kept, so that text around a call does not run together.
        const std::string_view rest = std::string_view(input_).substr(i);
        if (leading_space(rest) == rest.size()) {
          input_.erase(0, i);
          return;
        }
        state_ = State::kContent;
        continue;
      }
    }
  }
  input_.clear();
}

ToolCallReading HermesToolCallReader::feed(std::string_view text) {
  input_.append(text);
  ToolCallReading out;
  read(out);
  return out;
}

ToolCallReading HermesToolCallReader::finish() {
  ToolCallReading out;
  if (state_ == State::kHeader) out.content = block_prefix_ + std::string(kToolCallOpen) + header_;  // never a call: as written
  else if (state_ == State::kContent) out.content = input_;  // whitespace, or a "<tool_call>" cut short
  // kAfterCall holds only whitespace next to a call; a call cut off in its arguments or
  // before its </tool_call> stays as released.
  input_.clear();
  header_.clear();
  block_prefix_.clear();
  state_ = State::kContent;
  return out;
}

ToolCallPieces parse_tool_calls(std::string_view reply) {
  HermesToolCallReader reader;
  ToolCallReading read = reader.feed(reply);
  ToolCallReading rest = reader.finish();
  ToolCallPieces all{read.content + rest.content, {}};
  for (ToolCallPart& part : read.parts) {
    if (part.first) all.calls.push_back({std::move(part.name), ""});
    all.calls.back().arguments += part.arguments;
  }
  return all;
}

ToolCallFormat parse_tool_call_format(std::string_view name, const std::string& source) {
  if (name == "hermes") return ToolCallFormat::hermes;
  if (name == "none") return ToolCallFormat::none;
  fail(source, ": unknown tool call parser '", std::string(name), "'; glass has hermes and none");
}

ToolCallFormat tool_call_format_of(const ChatTemplate& chat_template) {
  // By what the template writes rather than its source text: a template that only
  // mentions the tag in a comment or a branch never taken does not prompt for it.
  const OrderedJson messages = OrderedJson::array({{{"role", "user"}, {"content", "Hi"}}});
  const OrderedJson tools = OrderedJson::array(
      {{{"type", "function"},
        {"function", {{"name", "probe"}, {"description", "A probe"}, {"parameters", {{"type", "object"}, {"properties", OrderedJson::object()}}}}}}});
  try {
    const std::string prompt = chat_template.render(messages, tools, true);
    return prompt.find(kToolCallOpen) != std::string::npos ? ToolCallFormat::hermes : ToolCallFormat::none;
  } catch (const Error&) {
    return ToolCallFormat::none;
  }
}

std::string_view tool_call_trigger(ToolCallFormat format) {
  return format == ToolCallFormat::hermes ? kToolCallOpen : std::string_view();
}

std::string tool_call_gbnf(ToolCallFormat format, const nlohmann::ordered_json& tools, ToolCallGrammar kind,
                           const std::vector<std::string>& allowed, bool parallel) {
  if (format != ToolCallFormat::hermes)
    fail("tool_choice: this model's tool-call format is none (its chat template does not ask for <tool_call> blocks; "
         "--tool-call-parser hermes if it does write them): a call cannot be forced");
  const bool forced = kind == ToolCallGrammar::forced;
  std::string calls, rules;
  for (size_t i = 0; i < tools.size(); ++i) {
    const nlohmann::ordered_json& function = tools[i]["function"];
    const std::string name = function["name"].get<std::string>();
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), name) == allowed.end()) continue;
    const std::string rule = str_cat("call-", i), args = str_cat("args-", i);
    // A function without parameters takes an empty object (as OpenAI calls it).
    nlohmann::ordered_json schema = {{"type", "object"},
                                     {"properties", nlohmann::ordered_json::object()},
                                     {"additionalProperties", false}};
    if (auto it = function.find("parameters"); it != function.end() && !it->is_null()) schema = *it;
    std::string args_rules;
    try {
      if (schema.is_object() && schema.contains("type") && schema["type"] != "object")
        fail("must describe an object (the call's arguments), not type ", schema["type"].dump());
      args_rules = grammar::json_schema_rules(schema, args);
    } catch (const Error& e) {
      if (forced) fail(str_cat("tools[", i, "].function.parameters: ", e.what()));
      args_rules = grammar::json_schema_rules({{"type", "object"}, {"additionalProperties", true}}, args);
    }
    rules += args_rules;
    const std::string quoted_name = grammar::gbnf_quote(nlohmann::ordered_json(name).dump());
    if (forced) {
      // In the spacing Qwen's templates show the model.
      rules += rule + " ::= " + grammar::gbnf_quote(str_cat(kToolCallOpen, "\n{\"name\": ")) + " " + quoted_name + " " +
               grammar::gbnf_quote(", \"arguments\": ") + " " + args + " " + grammar::gbnf_quote(str_cat("}\n", kToolCallClose)) + "\n";
    } else {
      // After the trigger, in any JSON spacing (the argument rules end with their own).
      rules += rule + " ::= space \"{\" space \"\\\"name\\\"\" space \":\" space " + quoted_name +
               " space \",\" space \"\\\"arguments\\\"\" space \":\" space " + args + " \"}\" space " +
               grammar::gbnf_quote(kToolCallClose) + "\n";
    }
    calls += (calls.empty() ? "" : " | ") + rule;
  }
  if (calls.empty()) fail("tool_choice: no function of 'tools' may be called");
  // A named function is called once; "required" may call several when parallel.
  const bool several = forced && parallel && allowed.empty();
  std::string gbnf = "root ::= call" + std::string(several ? " (\"\\n\" call)*" : "") + "\n";
  gbnf += "call ::= " + calls + "\n";
  gbnf += rules;
  gbnf += grammar::json_common_gbnf();
  return gbnf;
}

}  // namespace glass
