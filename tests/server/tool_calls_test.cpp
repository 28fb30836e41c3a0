// The hermes tool call parser: calls and content of whole replies, and the same result
// from every way of cutting a reply into streamed pieces.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
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
  HermesToolCallParser parser;
  ToolCallPieces all;
  size_t from = 0;
  auto take = [&](const ToolCallPieces& p) {
    all.content += p.content;
    all.calls.insert(all.calls.end(), p.calls.begin(), p.calls.end());
  };
  for (size_t cut : cuts) {
    take(parser.feed(std::string_view(reply).substr(from, cut - from)));
    from = cut;
  }
  take(parser.feed(std::string_view(reply).substr(from)));
  take(parser.finish());
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
  for (const std::string body : {"\n{\"name\": \"f\", \"arguments\": {\"a\": 1}\n",   // unbalanced
                                 "\n{\"arguments\": {}}\n",                            // no name
                                 "\n{\"name\": 7, \"arguments\": {}}\n",               // name not a string
                                 "\n{\"name\": \"f\"}\n",                              // no arguments
                                 "\n{\"name\": \"f\", \"arguments\": [1]}\n",          // arguments not an object
                                 "\n{\"name\": \"f\", \"arguments\": \"[1]\"}\n",      // a string, not an object
                                 "\n{\"name\": \"f\", \"arguments\": \"{bad\"}\n",     // a string, not JSON
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
}

TEST(HermesToolCalls, UnclosedBlockAtTheEndIsContent) {
  const std::string cut = "Sure.\n<tool_call>\n{\"name\": \"get_time\", \"argum";
  const ToolCallPieces r = parse_tool_calls(kWeather + "\n" + cut);
  EXPECT_EQ(r.calls, std::vector<ToolCall>{kWeatherCall});
  EXPECT_EQ(r.content, "\n" + cut);  // whitespace after a call is kept before text
  EXPECT_EQ(parse_tool_calls("<tool_call>").content, "<tool_call>");
  EXPECT_EQ(parse_tool_calls(" <tool_call>{}").content, " <tool_call>{}");
}

TEST(HermesToolCalls, ArgumentsAsAJsonString) {
  const ToolCallPieces r =
      parse_tool_calls("<tool_call>\n{\"name\": \"get_time\", \"arguments\": \"{\\\"zone\\\": \\\"CET\\\"}\"}\n</tool_call>");
  EXPECT_EQ(r.calls, std::vector<ToolCall>{kTimeCall});
  EXPECT_EQ(r.content, "");
}

TEST(HermesToolCalls, ArgumentsKeepTheirOrderAndUnicode) {
  const ToolCallPieces r = parse_tool_calls(
      "<tool_call>{\"arguments\": {\"z\": \"\xe6\x9d\xad\xe5\xb7\x9e\", \"a\": [1, {\"b\": null}]}, \"name\": \"f\"}</tool_call>");
  EXPECT_EQ(r.calls, std::vector<ToolCall>{(ToolCall{"f", "{\"z\":\"\xe6\x9d\xad\xe5\xb7\x9e\",\"a\":[1,{\"b\":null}]}"})});
}

TEST(HermesToolCalls, ContentIsReleasedAsSoonAsItCannotStartATag) {
  HermesToolCallParser parser;
  EXPECT_EQ(parser.feed("Hello").content, "Hello");
  EXPECT_EQ(parser.feed(" wor").content, " wor");
  EXPECT_EQ(parser.feed("ld <to").content, "ld");  // " <to" may begin a block
  EXPECT_EQ(parser.feed("ol").content, "");
  EXPECT_EQ(parser.feed("s").content, " <tools");
  EXPECT_EQ(parser.feed("\n").content, "");  // a block may follow
  const ToolCallPieces opened = parser.feed("<tool_call>\n{\"name\": \"get_time\", ");
  EXPECT_EQ(opened.content, "");
  EXPECT_TRUE(opened.calls.empty());
  const ToolCallPieces closed = parser.feed("\"arguments\": {\"zone\": \"CET\"}}\n</tool_call>\n");
  EXPECT_EQ(closed.calls, std::vector<ToolCall>{kTimeCall});
  EXPECT_EQ(closed.content, "");
  EXPECT_EQ(parser.calls_found(), 1u);
  const ToolCallPieces end = parser.finish();
  EXPECT_EQ(end.content, "");
  EXPECT_TRUE(end.calls.empty());
}

// Every reply, cut into two and into three pieces at every position, parses as it does whole.
TEST(HermesToolCalls, EverySplitGivesTheWholeResult) {
  const std::vector<std::string> replies = {
      "Let me look.\n" + kWeather + "\nAnd then:\n" + kTime + "\n",
      kWeather + kTime,
      "a <tool_call>{bad}</tool_call> b\n" + kTime + " done <tool_c",
      "text\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}",  // unclosed
      "x </tool_call> <tool_call><tool_call>{\"name\": \"f\", \"arguments\": \"{}\"}</tool_call>",
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

TEST(HermesToolCalls, DeeplyNestedArgumentsAreContentNotACrash) {
  const std::string deep = "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": " + std::string(100000, '[') +
                           std::string(100000, ']') + "}}</tool_call>";
  const ToolCallPieces r = parse_tool_calls(deep);
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(r.content, deep);
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

// A forced call's reply (its grammar's shape) read as it streams: the name as soon as it
// is complete, the arguments compacted piece by piece, the same however the reply is cut.
TEST(ForcedToolCallReader, NamesFirstThenArgumentsInPiecesHoweverCut) {
  const std::string reply = std::string("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Pa ris \\\" }\",\n  \"days\": [1, 2]} }\n</tool_call>") +
                            "\n<tool_call>\n{\"name\": \"get_\\u0074ime\", \"arguments\": {}}\n</tool_call>";
  for (size_t step : {1u, 2u, 3u, 7u, 1000u}) {
    ForcedToolCallReader reader;
    std::vector<std::string> names, arguments;
    size_t argument_pieces = 0;
    for (size_t i = 0; i < reply.size(); i += step) {
      for (const ToolCallPart& part : reader.feed(std::string_view(reply).substr(i, step))) {
        if (part.first) {
          ASSERT_EQ(part.call, names.size());
          names.push_back(part.name);
          arguments.emplace_back();
        } else {
          ASSERT_EQ(part.call + 1, names.size());
          arguments.back() += part.arguments;
          ++argument_pieces;
        }
      }
    }
    EXPECT_EQ(names, (std::vector<std::string>{"get_weather", "get_time"})) << step;
    // Whitespace outside strings left out, inside kept, escapes as written.
    EXPECT_EQ(arguments, (std::vector<std::string>{R"({"city":"Pa ris \" }","days":[1,2]})", "{}"})) << step;
    if (step == 1) {
      EXPECT_GT(argument_pieces, 10u);
    }
    EXPECT_EQ(reader.calls_started(), 2u);
  }
  ForcedToolCallReader off;
  EXPECT_NE(test::thrown_error([&] { off.feed("Sure, <tool_call>"); }).find("does not start a <tool_call> block"),
            std::string::npos);
}

}  // namespace
}  // namespace glass
