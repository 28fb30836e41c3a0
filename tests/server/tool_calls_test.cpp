// The hermes tool call reader: calls and content of whole replies, the same result from
// every way of cutting a reply into streamed pieces, and the grammars that make a call
// the model begins a valid one.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "grammar/matcher.h"
#include "runtime/tool_calls.h"
#include "support/test_support.h"

namespace glass {

// For gtest's messages (found by argument-dependent lookup).
void PrintTo(const ToolCall& c, std::ostream* os) { *os << c.name << "(" << c.arguments << ")"; }

namespace {

const std::string kWeather = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>";
const std::string kTime = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}\n</tool_call>";
const ToolCall kWeatherCall{"get_weather", R"({"city":"Paris","days":2})"};
const ToolCall kTimeCall{"get_time", R"({"zone":"CET"})"};

// Feeds `reply` cut at `cuts` (ascending offsets), then finishes.
ToolCallPieces feed_in_pieces(const std::string& reply, const std::vector<size_t>& cuts) {
  HermesToolCallReader reader;
  ToolCallPieces all;
  size_t from = 0;
  auto take = [&](const ToolCallReading& r) {
    all.content += r.content;
    for (const ToolCallPart& part : r.parts) {
      if (part.first) all.calls.push_back({part.name, ""});
      all.calls.back().arguments += part.arguments;
    }
  };
  for (size_t cut : cuts) {
    take(reader.feed(std::string_view(reply).substr(from, cut - from)));
    from = cut;
  }
  take(reader.feed(std::string_view(reply).substr(from)));
  take(reader.finish());
  return all;
}

TEST(HermesToolCalls, OneCall) {
  const ToolCallPieces r = parse_tool_calls(kWeather);
  EXPECT_EQ(r.content, "");
  EXPECT_EQ(r.calls, std::vector<ToolCall>{kWeatherCall});
}

TEST(HermesToolCalls, SeveralCallsWithTextBeforeAndBetween) {
  EXPECT_EQ(parse_tool_calls(kWeather + "\n" + kTime).calls, (std::vector<ToolCall>{kWeatherCall, kTimeCall}));
  EXPECT_EQ(parse_tool_calls(kWeather + "\n" + kTime + "\n").content, "");

  const ToolCallPieces r = parse_tool_calls("Let me look.\n" + kWeather + "\nAnd the time:\n" + kTime);
  EXPECT_EQ(r.content, "Let me look.\nAnd the time:");
  EXPECT_EQ(r.calls, (std::vector<ToolCall>{kWeatherCall, kTimeCall}));
}

TEST(HermesToolCalls, PlainTextIsContentByteForByte) {
  for (const std::string text : {"", "Hello", "  Hello\n\n", "a < b and <tool", "x </tool_call> y", "<tool_cal", "\n"}) {
    const ToolCallPieces r = parse_tool_calls(text);
    EXPECT_EQ(r.content, text);
    EXPECT_TRUE(r.calls.empty());
  }
}

TEST(HermesToolCalls, TextThatOnlyLooksLikeACallStaysContent) {
  for (const std::string body : {"\n{\"arguments\": {}}\n",                            // no name
                                 "\n{\"arguments\": {}, \"name\": \"f\"}\n",           // the name not first
                                 "\n{\"name\": 7, \"arguments\": {}}\n",               // name not a string
                                 "\n{\"name\": \"\\x\", \"arguments\": {}}\n",         // not a JSON string
                                 "\n{\"name\": \"f\"}\n",                              // no arguments
                                 "\n{\"name\": \"f\", \"arguments\": [1]}\n",          // arguments not an object
                                 "\n{\"name\": \"f\", \"arguments\": \"{}\"}\n",       // a string, not an object
                                 "\n{\"name\" \"f\", \"arguments\": {}}\n",            // no colon
                                 "\n[\"f\"]\n", ""}) {
    SCOPED_TRACE(body);
    const std::string reply = "Before \n<tool_call>" + body + "</tool_call>\n after";
    const ToolCallPieces r = parse_tool_calls(reply);
    EXPECT_EQ(r.content, reply);
    EXPECT_TRUE(r.calls.empty());
  }
  // A bad block beside a good one: the good one is a call, the bad one content.
  const ToolCallPieces mixed = parse_tool_calls("<tool_call>{oops}</tool_call>\n" + kTime);
  EXPECT_EQ(mixed.content, "<tool_call>{oops}</tool_call>");
  EXPECT_EQ(mixed.calls, std::vector<ToolCall>{kTimeCall});
  // A tag inside a block that is no call opens the next block.
  const ToolCallPieces nested = parse_tool_calls("<tool_call>x" + kTime);
  EXPECT_EQ(nested.content, "<tool_call>x");
  EXPECT_EQ(nested.calls, std::vector<ToolCall>{kTimeCall});
}

TEST(HermesToolCalls, AnyJsonSpacingAndEscapesAsWritten) {
  const ToolCallPieces r = parse_tool_calls(
      "<tool_call>{\"name\":\"get_\\u0074ime\",\n  \"arguments\" :{ \"zone\" : \"C E\\\"T\" ,\"n\": [ 1 , {\"b\": null} ] }\n}\t</tool_call>");
  EXPECT_EQ(r.calls, std::vector<ToolCall>{(ToolCall{"get_time", R"({"zone":"C E\"T","n":[1,{"b":null}]})"})});
  EXPECT_EQ(r.content, "");
  const ToolCallPieces unicode =
      parse_tool_calls("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"z\": \"\xe6\x9d\xad\xe5\xb7\x9e\"}}\n</tool_call>");
  EXPECT_EQ(unicode.calls, std::vector<ToolCall>{(ToolCall{"f", "{\"z\":\"\xe6\x9d\xad\xe5\xb7\x9e\"}"})});
}

TEST(HermesToolCalls, ABlockCutOffBeforeItsArgumentsIsContent) {
  const std::string cut = "Sure.\n<tool_call>\n{\"name\": \"get_time\", \"argum";
  const ToolCallPieces r = parse_tool_calls(kWeather + "\n" + cut);
  EXPECT_EQ(r.calls, std::vector<ToolCall>{kWeatherCall});
  EXPECT_EQ(r.content, "\n" + cut);  // whitespace after a call is kept before text
  EXPECT_EQ(parse_tool_calls("<tool_call>").content, "<tool_call>");
  EXPECT_EQ(parse_tool_calls(" <tool_call>{").content, " <tool_call>{");
}

// Once its arguments begin, a call is released; what comes after is the grammar's to
// keep valid. Without it, the reader does not take anything back.
TEST(HermesToolCalls, ACallCutOffInItsArgumentsKeepsWhatWasGenerated) {
  const ToolCallPieces cut = parse_tool_calls("<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CE");
  EXPECT_EQ(cut.calls, std::vector<ToolCall>{(ToolCall{"get_time", R"({"zone":"CE)"})});
  EXPECT_EQ(cut.content, "");
  // Arguments closed, the block not: the text after them is content.
  const ToolCallPieces unclosed = parse_tool_calls("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}\n</tool_call>\nok");
  EXPECT_EQ(unclosed.calls, std::vector<ToolCall>{(ToolCall{"f", R"({"a":1})"})});
  EXPECT_EQ(unclosed.content, "\n</tool_call>\nok");
}

TEST(HermesToolCalls, ContentIsReleasedAsSoonAsItCannotStartATag) {
  HermesToolCallReader reader;
  EXPECT_EQ(reader.feed("Hello").content, "Hello");
  EXPECT_EQ(reader.feed(" wor").content, " wor");
  EXPECT_EQ(reader.feed("ld <to").content, "ld");  // " <to" may begin a block
  EXPECT_EQ(reader.feed("ol").content, "");
  EXPECT_EQ(reader.feed("s").content, " <tools");
  EXPECT_EQ(reader.feed("\n").content, "");  // a block may follow
  const ToolCallReading header = reader.feed("<tool_call>\n{\"name\": \"get_time\", ");
  EXPECT_EQ(header.content, "");
  EXPECT_TRUE(header.parts.empty());
  // The name when the arguments begin, then the arguments as they come.
  const ToolCallReading begun = reader.feed("\"arguments\": {\"zo");
  ASSERT_EQ(begun.parts.size(), 1u);
  EXPECT_TRUE(begun.parts[0].first);
  EXPECT_EQ(begun.parts[0].name, "get_time");
  EXPECT_EQ(begun.parts[0].arguments, "{\"zo");
  EXPECT_EQ(reader.calls_started(), 1u);
  const ToolCallReading rest = reader.feed("ne\": \"CET\"}}\n</tool_call>\n");
  ASSERT_EQ(rest.parts.size(), 1u);
  EXPECT_FALSE(rest.parts[0].first);
  EXPECT_EQ(rest.parts[0].call, 0u);
  EXPECT_EQ(rest.parts[0].arguments, "ne\":\"CET\"}");
  EXPECT_EQ(rest.content, "");
  const ToolCallReading end = reader.finish();
  EXPECT_EQ(end.content, "");
  EXPECT_TRUE(end.parts.empty());
}

// Every reply, cut into two and into three pieces at every position, reads as it does whole.
TEST(HermesToolCalls, EverySplitGivesTheWholeResult) {
  const std::vector<std::string> replies = {
      "Let me look.\n" + kWeather + "\nAnd then:\n" + kTime + "\n",
      kWeather + kTime,
      "a <tool_call>{bad}</tool_call> b\n" + kTime + " done <tool_c",
      "text\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1, \"}\"]",  // cut in the arguments
      "x </tool_call> <tool_call><tool_call>{\"name\": \"f\", \"arguments\": {}} </tool_call>",
      "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>oops",
  };
  for (const std::string& reply : replies) {
    SCOPED_TRACE(reply);
    const ToolCallPieces whole = parse_tool_calls(reply);
    for (size_t i = 0; i <= reply.size(); ++i) {
      const ToolCallPieces two = feed_in_pieces(reply, {i});
      ASSERT_EQ(two.content, whole.content) << "cut at " << i;
      ASSERT_EQ(two.calls, whole.calls) << "cut at " << i;
      for (size_t j = i; j <= reply.size(); ++j) {
        const ToolCallPieces three = feed_in_pieces(reply, {i, j});
        ASSERT_EQ(three.content, whole.content) << "cut at " << i << " and " << j;
        ASSERT_EQ(three.calls, whole.calls) << "cut at " << i << " and " << j;
      }
    }
  }
  // One byte at a time too.
  const std::string reply = replies.front();
  std::vector<size_t> every;
  for (size_t i = 1; i < reply.size(); ++i) every.push_back(i);
  const ToolCallPieces bytes = feed_in_pieces(reply, every);
  EXPECT_EQ(bytes.content, "Let me look.\nAnd then:");
  EXPECT_EQ(bytes.calls, (std::vector<ToolCall>{kWeatherCall, kTimeCall}));
}

TEST(HermesToolCalls, DeeplyNestedArgumentsAreReadWithoutRecursion) {
  const std::string nested = std::string(100000, '[') + std::string(100000, ']');
  const std::string deep = "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": " + nested + "}}</tool_call>";
  const ToolCallPieces r = parse_tool_calls(deep);
  EXPECT_EQ(r.calls, std::vector<ToolCall>{(ToolCall{"f", "{\"a\":" + nested + "}"})});
  EXPECT_EQ(r.content, "");
}

TEST(HermesToolCalls, TheFormatComesFromWhatTheTemplateWrites) {
  EXPECT_EQ(tool_call_format_of(ChatTemplate::from_checkpoint(test::demo_model_dir())), ToolCallFormat::hermes);  // Qwen2.5's
  EXPECT_EQ(tool_call_format_of(ChatTemplate::from_checkpoint(test::qwen3_tokenizer_dir())), ToolCallFormat::hermes);
  EXPECT_EQ(tool_call_format_of(ChatTemplate::from_text("{% for m in messages %}{{ m.content }}{% endfor %}", "plain")),
            ToolCallFormat::none);
  // Named in a comment only: the model is never told to write it.
  EXPECT_EQ(tool_call_format_of(ChatTemplate::from_text("{# <tool_call> #}{{ messages[0].content }}", "comment")),
            ToolCallFormat::none);
  EXPECT_EQ(tool_call_format_of(ChatTemplate::from_text("{{ raise_exception('no tools') }}", "refuses")), ToolCallFormat::none);
  EXPECT_EQ(parse_tool_call_format("hermes", "--tool-call-parser"), ToolCallFormat::hermes);
  EXPECT_EQ(parse_tool_call_format("none", "--tool-call-parser"), ToolCallFormat::none);
  try {
    parse_tool_call_format("mistral", "--tool-call-parser");
    FAIL() << "accepted mistral";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--tool-call-parser"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("mistral"), std::string::npos) << e.what();
  }
}

// Pieces of a reply as the server streams them: the name first, then the arguments in
// pieces, compacted, the same however the reply is cut.
TEST(HermesToolCallReader, NamesFirstThenArgumentsInPiecesHoweverCut) {
  const std::string reply = std::string("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Pa ris \\\" }\",\n  \"days\": [1, 2]} }\n</tool_call>") +
                            "\n<tool_call>\n{\"name\": \"get_\\u0074ime\", \"arguments\": {}}\n</tool_call>";
  for (size_t step : {1u, 2u, 3u, 7u, 1000u}) {
    HermesToolCallReader reader;
    std::vector<std::string> names, arguments;
    size_t argument_pieces = 0;
    for (size_t i = 0; i < reply.size(); i += step) {
      const ToolCallReading read = reader.feed(std::string_view(reply).substr(i, step));
      EXPECT_EQ(read.content, "");
      for (const ToolCallPart& part : read.parts) {
        if (part.first) {
          ASSERT_EQ(part.call, names.size());
          names.push_back(part.name);
          arguments.emplace_back();
        } else {
          ASSERT_EQ(part.call + 1, names.size());
          ++argument_pieces;
        }
        arguments.back() += part.arguments;
      }
    }
    EXPECT_EQ(reader.finish().content, "");
    EXPECT_EQ(names, (std::vector<std::string>{"get_weather", "get_time"})) << step;
    // Whitespace outside strings left out, inside kept, escapes as written.
    EXPECT_EQ(arguments, (std::vector<std::string>{R"({"city":"Pa ris \" }","days":[1,2]})", "{}"})) << step;
    if (step == 1) {
      EXPECT_GT(argument_pieces, 10u);
    }
    EXPECT_EQ(reader.calls_started(), 2u);
  }
}

// The grammars of tool calls: what they accept, checked string by string.
TEST(ToolCallGrammars, TriggeredAcceptsOneValidCallInAnySpacingForcedTheTemplatesShape) {
  const auto tools = nlohmann::ordered_json::parse(R"([
      {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
          "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}}},
      {"type": "function", "function": {"name": "get_time"}},
      {"type": "function", "function": {"name": "odd", "parameters": {"type": "object",
          "properties": {"x": {"type": "string", "contentEncoding": "base64"}}}}}])");
  const grammar::Grammar triggered =
      grammar::Grammar::from_gbnf(tool_call_gbnf(ToolCallFormat::hermes, tools, ToolCallGrammar::triggered));
  const auto complete = [](const grammar::Grammar& g, const std::string& text) {
    grammar::GrammarMatcher m(g);
    return m.accept_bytes(text) && m.is_complete();
  };
  const auto prefix = [](const grammar::Grammar& g, const std::string& text) {
    grammar::GrammarMatcher m(g);
    return m.accept_bytes(text);
  };
  EXPECT_EQ(tool_call_trigger(ToolCallFormat::hermes), "<tool_call>");
  for (const std::string text : {"\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
                                 "{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}</tool_call>",
                                 " {\"name\": \"get_time\", \"arguments\": {}} </tool_call>",
                                 // A schema the grammar cannot express: any object.
                                 "\n{\"name\": \"odd\", \"arguments\": {\"y\": [1, null]}}\n</tool_call>"}) {
    EXPECT_TRUE(complete(triggered, text)) << text;
    EXPECT_FALSE(complete(triggered, text.substr(0, text.size() - 1))) << text;
  }
  for (const std::string text : {"\n{\"name\": \"get_wea", "\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "}) {
    EXPECT_TRUE(prefix(triggered, text)) << text;
  }
  for (const std::string text : {"\n{\"name\": \"absent\"", "\n{\"arguments\"", "\n{\"name\": \"get_weather\", \"arguments\": {}}",
                                 "\n{\"name\": \"get_weather\", \"arguments\": {\"city\": 7}}",
                                 "\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>\n", "Sure"}) {
    EXPECT_FALSE(complete(triggered, text) || prefix(triggered, text)) << text;
  }

  const grammar::Grammar required =
      grammar::Grammar::from_gbnf(tool_call_gbnf(ToolCallFormat::hermes, nlohmann::ordered_json::array({tools[0], tools[1]}),
                                                 ToolCallGrammar::forced, {}, true));
  const std::string weather = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
  const std::string time = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
  grammar::GrammarMatcher both(required);
  EXPECT_TRUE(both.accept_bytes(weather + "\n" + time) && both.can_end());
  EXPECT_FALSE(prefix(required, "<tool_call>{\"name\""));  // forced: the template's spacing
  const grammar::Grammar named = grammar::Grammar::from_gbnf(
      tool_call_gbnf(ToolCallFormat::hermes, tools, ToolCallGrammar::forced, {"get_time"}));
  EXPECT_TRUE(complete(named, time));
  EXPECT_FALSE(prefix(named, weather));
  // Forced, a schema the grammar cannot express is refused, naming it.
  EXPECT_NE(test::thrown_error([&] { tool_call_gbnf(ToolCallFormat::hermes, tools, ToolCallGrammar::forced); })
                .find("tools[2].function.parameters"),
            std::string::npos);
  EXPECT_NE(test::thrown_error([&] { tool_call_gbnf(ToolCallFormat::none, tools, ToolCallGrammar::triggered); })
                .find("format is none"),
            std::string::npos);
}

}  // namespace
}  // namespace glass
