// Tool calls in a reply, in the hermes format that Qwen2.5 and Qwen3 are trained on:
//   Let me look.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>
// (one or several blocks, possibly after some text).
//
// The server generates a reply with tools under a grammar (tool_call_gbnf): once the model
// writes <tool_call>, what follows must be a valid call of one of the tools, so a call can
// be streamed as OpenAI streams one, its name first and then its arguments piece by piece,
// without waiting for the block to close. The reader below separates the content from the
// calls as the reply streams:
//   - a block whose text after <tool_call> begins {"name": STRING, "arguments": { (any
//     whitespace between the tokens) is a call: its name is released when its arguments
//     begin, then the arguments as generated, compacted (whitespace outside strings left
//     out, escapes as written), up to the object's closing brace; the block's closing
//     `}` and </tool_call> follow. The whitespace before the block, and after it up to the
//     next block or the end, is not content;
//   - anything else is content, byte for byte: text outside blocks, a block whose text
//     does not begin like a call (with its tag and the whitespace before it), a block cut
//     off before its arguments begin.
// Content is released as soon as it cannot be the start of a <tool_call> (a partial tag,
// and whitespace that a tag may still follow, are held back). Nothing released is taken
// back: a reply cut off inside a call's arguments (max_tokens) leaves the call with the
// arguments generated so far, as OpenAI's do; only the grammar makes the arguments valid.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_template.h"

namespace glass {

// A piece of a call as a reply streams: the call's number, and on its first piece its
// name; then pieces of its arguments, which joined make the whole arguments.
struct ToolCallPart {
  size_t call = 0;
  bool first = false;
  std::string name;       // on the first piece
  std::string arguments;  // this piece of the arguments (may be empty)
};

// What a piece of a reply releases: content, and pieces of calls.
struct ToolCallReading {
  std::string content;
  std::vector<ToolCallPart> parts;
};

class HermesToolCallReader {
 public:
  // The next piece of the reply (may be empty): returns what is now certain.
  ToolCallReading feed(std::string_view text);
  // The reply ended: releases what was held back (a partial tag, a block that never
  // became a call) as content. Call once, after the last feed().
  ToolCallReading finish();
  // Calls begun so far.
  size_t calls_started() const { return calls_ + (state_ == State::kArguments || state_ == State::kClosing); }

 private:
  enum class State {
    kContent,    // outside blocks
    kHeader,     // after <tool_call>, before the arguments begin
    kArguments,  // in the arguments object
    kClosing,    // after the arguments: the block's "}" and </tool_call>
    kAfterCall,  // after a call: whitespace here is not content
  };
  // Reads the header's next byte; false when the block is not a call.
  bool read_header(char c, ToolCallReading& out);
  void read_argument(char c, ToolCallReading& out);
  void read(ToolCallReading& out);

  State state_ = State::kContent;
  std::string input_;         // text not yet read (kContent: held back)
  std::string block_prefix_;  // in a block: the whitespace before its <tool_call>
  std::string header_;        // kHeader: the block's text so far; kClosing: the closing text so far
  int header_step_ = 0;       // kHeader: the token expected next; kClosing: 0 before "}", 1 after
  size_t literal_ = 0;        // bytes of the expected literal ("name", </tool_call>...) matched
  std::string name_;          // kHeader: the name's JSON string as written
  size_t calls_ = 0;  // calls closed: the number of the call being read
  int64_t depth_ = 0;  // of braces and brackets in the arguments, outside strings
  bool in_string_ = false, escaped_ = false;
};

// A whole reply: the content, and the calls joined from their pieces.
struct ToolCall {
  std::string name;
  std::string arguments;  // a JSON object, compact (OpenAI's "arguments" string)
  bool operator==(const ToolCall&) const = default;
};
struct ToolCallPieces {
  std::string content;
  std::vector<ToolCall> calls;
};
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

// The text that opens a call in `format` (hermes: "<tool_call>").
std::string_view tool_call_trigger(ToolCallFormat format);

// Grammars (GBNF) for tool calls in `format` (hermes), each call naming one of the
// functions of `tools` (an OpenAI tools array) with arguments valid against that
// function's `parameters` schema (none: an empty object). Throws glass::Error for the
// format none.
//   forced: every string is a reply of calls only, <tool_call> blocks a newline apart, in
//     the spacing Qwen's templates show: for tool_choice "required" (`allowed` empty: any
//     function; several calls when `parallel`) or a named function (`allowed` = {name}:
//     one call). Throws glass::Error naming "tools[i].function.parameters" for a schema
//     the grammar cannot express.
//   triggered: what follows the trigger in one call, through </tool_call> (any JSON
//     spacing): for tool_choice "auto", applied each time the model writes the trigger
//     (GenerationRequest::grammar_trigger). A function whose schema the grammar cannot
//     express takes any JSON object, rather than refusing a request that may not call it.
enum class ToolCallGrammar { forced, triggered };
std::string tool_call_gbnf(ToolCallFormat format, const nlohmann::ordered_json& tools, ToolCallGrammar kind,
                           const std::vector<std::string>& allowed = {}, bool parallel = false);

}  // namespace glass
