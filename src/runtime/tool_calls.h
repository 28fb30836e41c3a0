// Tool calls in a reply, in the hermes format that Qwen2.5 and Qwen3 are trained on:
//   Let me look.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>
// (one or several blocks, possibly after some text). The parser reads the reply's text as
// it streams and separates the content from the calls:
//   - a complete <tool_call>...</tool_call> block whose body is a JSON object with a
//     string "name" and "arguments" an object (or a string holding a JSON object) is a
//     call; the whitespace before it, and the whitespace after it up to the next call or
//     the end (the template's newlines), is not content;
//   - anything else is content, byte for byte: text outside blocks, a block whose body is
//     not such a call (with its tags and the whitespace around it), a block never closed.
// Content is released as soon as it cannot be the start of a <tool_call> (a partial tag,
// and whitespace that a tag may still follow, are held back); a call is released whole
// when its block closes, so that nothing released is ever taken back.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_template.h"

namespace glass {

struct ToolCall {
  std::string name;
  std::string arguments;  // a JSON object, compact (OpenAI's "arguments" string)
  bool operator==(const ToolCall&) const = default;
};

struct ToolCallPieces {
  std::string content;
  std::vector<ToolCall> calls;
};

class HermesToolCallParser {
 public:
  // The next piece of the reply (may be empty): returns what is now certain.
  ToolCallPieces feed(std::string_view text);
  // The reply ended: releases what was held back (a partial tag, an unclosed block) as
  // content. Call once, after the last feed().
  ToolCallPieces finish();

  // Calls released so far.
  size_t calls_found() const { return calls_found_; }

 private:
  enum class State {
    kContent,    // outside blocks
    kInBlock,    // after <tool_call>, waiting for </tool_call>
    kAfterCall,  // after a call: whitespace here is not content
  };
  void advance(ToolCallPieces& out);

  State state_ = State::kContent;
  std::string held_;          // text not yet released
  std::string block_prefix_;  // in a block: the whitespace before its <tool_call>
  size_t searched_ = 0;       // in a block: bytes of held_ known not to start </tool_call>
  size_t calls_found_ = 0;
};

// The call a block's body (between the tags) makes, if it is one.
std::optional<ToolCall> parse_hermes_call(std::string_view body);

// The whole reply at once; the same as feeding it in pieces.
ToolCallPieces parse_tool_calls(std::string_view reply);

// How a model writes tool calls, hence how the server reads them out of replies.
enum class ToolCallFormat { none, hermes };

// "hermes" or "none" (glass serve --tool-call-parser); throws glass::Error naming `source`
// for anything else.
ToolCallFormat parse_tool_call_format(std::string_view name, const std::string& source);

// The format a chat template asks for: hermes when, given a tool, it tells the model to
// write <tool_call> blocks (Qwen2.5's and Qwen3's do); none otherwise, or when it cannot
// render a conversation with a tool.
ToolCallFormat tool_call_format_of(const ChatTemplate& chat_template);

// A grammar (GBNF) whose every string is a reply of tool calls in `format` (hermes: the
// <tool_call> blocks, one per line), each calling one of the functions of `tools` (an
// OpenAI tools array) named in `allowed` (all when empty), with arguments valid against
// that function's `parameters` schema (none: an empty object). One call or, when
// `parallel` and `allowed` is empty (tool_choice "required"), several. For tool_choice "required" or a named function. Throws
// glass::Error naming "tools[i].function.parameters" for a schema the grammar cannot
// express, or for the format none.
std::string forced_tool_call_gbnf(ToolCallFormat format, const nlohmann::ordered_json& tools,
                                  const std::vector<std::string>& allowed, bool parallel);

// A piece of a call as a reply streams: the call's number, and on its first piece its
// name; then pieces of its arguments (compact JSON: the model's whitespace outside
// strings left out), which joined make the whole arguments.
struct ToolCallPart {
  size_t call = 0;
  bool first = false;
  std::string name;       // on the first piece
  std::string arguments;  // this piece of the arguments ("" on a first piece before any)
};

// Reads the reply of a forced call (one written under forced_tool_call_gbnf's grammar, so
// exactly `<tool_call>\n{"name": NAME, "arguments": {...}}\n</tool_call>` blocks, a newline
// apart) as it streams: the name as soon as it is complete, the arguments piece by piece
// as they are generated, which a free-form reply cannot do (its block may turn out not to
// be a call). Anything off that shape (the grammar was not applied) throws glass::Error.
class ForcedToolCallReader {
 public:
  std::vector<ToolCallPart> feed(std::string_view text);
  size_t calls_started() const { return calls_; }

 private:
  enum class State { kHeader, kArguments, kClosing };
  State state_ = State::kHeader;
  std::string held_;  // kHeader: the block's text so far; kClosing: the text after the arguments
  size_t calls_ = 0;
  int depth_ = 0;  // of braces and brackets in the arguments, outside strings
  bool in_string_ = false, escaped_ = false;
};

}  // namespace glass
