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

std::optional<ToolCall> parse_hermes_call(std::string_view body) {
  OrderedJson call;
  try {
    call = parse_ordered_json(body, "a <tool_call> block");
  } catch (const Error&) {
    return std::nullopt;
  }
  if (!call.is_object()) return std::nullopt;
  const auto name = call.find("name");
  const auto arguments = call.find("arguments");
  if (name == call.end() || !name->is_string() || arguments == call.end()) return std::nullopt;
  OrderedJson object;
  if (arguments->is_object()) {
    object = *arguments;
  } else if (arguments->is_string()) {
    // Some replies write the arguments as OpenAI sends them, a JSON string.
    try {
      object = parse_ordered_json(arguments->get_ref<const std::string&>(), "a tool call's arguments");
    } catch (const Error&) {
      return std::nullopt;
    }
    if (!object.is_object()) return std::nullopt;
  } else {
    return std::nullopt;
  }
  // Bytes that are not UTF-8 cannot be in parsed JSON strings, so dump() does not throw.
  return ToolCall{name->get<std::string>(), object.dump()};
}

void HermesToolCallParser::advance(ToolCallPieces& out) {
  for (;;) {
    switch (state_) {
      case State::kAfterCall:
        // Whitespace between calls (or after the last) is the template's; before text
        // it is kept, so that text around a call does not run together.
        if (leading_space(held_) == held_.size()) return;
        state_ = State::kContent;
        continue;
      case State::kContent: {
        const size_t open = held_.find(kToolCallOpen);
        if (open != std::string::npos) {
          // The whitespace before the tag goes with the block: dropped with a call,
          // restored with text that only looks like one.
          const std::string_view before = std::string_view(held_).substr(0, open);
          const size_t space = trailing_space(before);
          out.content.append(before.substr(0, before.size() - space));
          block_prefix_ = std::string(before.substr(before.size() - space));
          held_.erase(0, open + kToolCallOpen.size());
          searched_ = 0;
          state_ = State::kInBlock;
          continue;
        }
        // Hold back a tag that may be arriving and the whitespace before it.
        size_t keep = partial_tag_at_end(held_, kToolCallOpen);
        keep += trailing_space(std::string_view(held_).substr(0, held_.size() - keep));
        out.content.append(held_, 0, held_.size() - keep);
        held_.erase(0, held_.size() - keep);
        return;
      }
      case State::kInBlock: {
        const size_t close = held_.find(kToolCallClose, searched_);
        if (close == std::string::npos) {
          searched_ = held_.size() - partial_tag_at_end(held_, kToolCallClose);
          return;
        }
        const std::string_view body = std::string_view(held_).substr(0, close);
        if (std::optional<ToolCall> call = parse_hermes_call(body)) {
          out.calls.push_back(std::move(*call));
          ++calls_found_;
          state_ = State::kAfterCall;
        } else {
          out.content += block_prefix_;
          out.content += kToolCallOpen;
          out.content += body;
          out.content += kToolCallClose;
          state_ = State::kContent;
        }
        held_.erase(0, close + kToolCallClose.size());
        block_prefix_.clear();
        continue;
      }
    }
  }
}

ToolCallPieces HermesToolCallParser::feed(std::string_view text) {
  held_.append(text);
  ToolCallPieces out;
  advance(out);
  return out;
}

ToolCallPieces HermesToolCallParser::finish() {
  ToolCallPieces out;
  if (state_ == State::kInBlock) out.content = block_prefix_ + std::string(kToolCallOpen) + held_;  // never closed: as written
  else if (state_ == State::kContent) out.content = held_;  // whitespace, or a "<tool_call>" cut short
  // kAfterCall holds only whitespace next to a call.
  held_.clear();
  block_prefix_.clear();
  state_ = State::kContent;
  return out;
}

ToolCallPieces parse_tool_calls(std::string_view reply) {
  HermesToolCallParser parser;
  ToolCallPieces all = parser.feed(reply);
  ToolCallPieces rest = parser.finish();
  all.content += rest.content;
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

std::string forced_tool_call_gbnf(ToolCallFormat format, const nlohmann::ordered_json& tools,
                                  const std::vector<std::string>& allowed, bool parallel) {
  if (format != ToolCallFormat::hermes)
    fail("tool_choice: this model's tool-call format is none (its chat template does not ask for <tool_call> blocks; "
         "--tool-call-parser hermes if it does write them): a call cannot be forced");
  // Each call: the block with the function's name and its arguments, in the spacing
  // Qwen's templates show the model (and the parser reads any spacing).
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
    if (schema.is_object() && schema.contains("type") && schema["type"] != "object")
      fail(str_cat("tools[", i, "].function.parameters: must describe an object (the call's arguments), not type ",
                   schema["type"].dump()));
    try {
      rules += grammar::json_schema_rules(schema, args);
    } catch (const Error& e) {
      fail(str_cat("tools[", i, "].function.parameters: ", e.what()));
    }
    rules += rule + " ::= " + grammar::gbnf_quote(str_cat("<tool_call>\n{\"name\": ", nlohmann::ordered_json(name).dump(), ", \"arguments\": ")) +
             " " + args + " " + grammar::gbnf_quote("}\n</tool_call>") + "\n";
    calls += (calls.empty() ? "" : " | ") + rule;
  }
  if (calls.empty()) fail("tool_choice: no function of 'tools' may be called");
  // A named function is called once; "required" may call several when parallel.
  const bool several = parallel && allowed.empty();
  std::string gbnf = "root ::= call" + std::string(several ? " (\"\\n\" call)*" : "") + "\n";
  gbnf += "call ::= " + calls + "\n";
  gbnf += rules;
  gbnf += grammar::json_common_gbnf();
  return gbnf;
}

std::vector<ToolCallPart> ForcedToolCallReader::feed(std::string_view text) {
  static constexpr std::string_view kHead = "<tool_call>\n{\"name\": ";
  static constexpr std::string_view kArgs = ", \"arguments\": ";
  static constexpr std::string_view kClose = "}\n</tool_call>";
  std::vector<ToolCallPart> parts;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (state_ == State::kHeader) {
      if (held_.empty() && c == '\n' && calls_ > 0) continue;  // the newline between blocks
      held_ += c;
      if (held_.size() <= kHead.size()) {
        if (kHead.substr(0, held_.size()) != held_) fail("forced tool call: the reply does not start a <tool_call> block");
        continue;
      }
      if (!held_.ends_with(kArgs)) continue;
      // The name: a JSON string (a name holding ", \"arguments\": " parses too, as a whole).
      const std::string quoted = held_.substr(kHead.size(), held_.size() - kHead.size() - kArgs.size());
      nlohmann::ordered_json name;
      try {
        name = nlohmann::ordered_json::parse(quoted);
      } catch (const std::exception&) {
        continue;  // the ", \"arguments\": " was inside the name
      }
      if (!name.is_string()) fail("forced tool call: the name is not a string");
      parts.push_back({calls_, true, name.get<std::string>(), ""});
      held_.clear();
      state_ = State::kArguments;
      depth_ = 0;
      in_string_ = escaped_ = false;
    } else if (state_ == State::kArguments) {
      if (in_string_) {
        if (escaped_) escaped_ = false;
        else if (c == '\\') escaped_ = true;
        else if (c == '"') in_string_ = false;
      } else if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
        continue;  // whitespace between JSON tokens: left out, as a compact dump does
      } else if (c == '"') {
        in_string_ = true;
      } else if (c == '{' || c == '[') {
        ++depth_;
      } else if (c == '}' || c == ']') {
        --depth_;
      }
      if (parts.empty() || parts.back().call != calls_ || parts.back().first) parts.push_back({calls_, false, "", ""});
      parts.back().arguments += c;
      if (depth_ == 0 && !in_string_) state_ = State::kClosing;
    } else {
      // The schema's grammar may end the arguments with whitespace.
      if (held_.empty() && (c == ' ' || c == '\n' || c == '\t' || c == '\r')) continue;
      held_ += c;
      if (kClose.substr(0, held_.size()) != held_) fail("forced tool call: the arguments are not followed by the block's end");
      if (held_.size() == kClose.size()) {
        held_.clear();
        ++calls_;
        state_ = State::kHeader;
      }
    }
  }
  return parts;
}

}  // namespace glass
