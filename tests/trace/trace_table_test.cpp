// The terminal table of glass trace: it fits the width it is given, however long the prompt.
#include <gtest/gtest.h>

#include <sstream>

#include "tokenizer/utf8.h"
#include "trace/trace_report.h"

namespace glass {
namespace {

LensToken lens_token(int32_t id, double prob, std::string text) {
  LensToken t;
  t.id = id;
  t.prob = prob;
  t.logit = 1;
  t.text = std::move(text);
  return t;
}

// `n` positions whose tokens are long, wide (CJK) or empty, two layers and the logits.
TraceReport long_report(int n) {
  TraceReport r;
  r.model_dir = "/models/tiny";
  r.backend = "reference (scalar, 1 thread)";
  r.config.num_layers = 2;
  r.config.vocab_size = 100;
  const std::vector<std::string> texts = {" international", "世界", "", "\n", " a", "인공지능은"};
  std::string prompt;
  for (int p = 0; p < n; ++p) {
    r.ids.push_back(10 + p);
    r.token_texts.push_back(texts[p % texts.size()]);
    r.positions.push_back(p);
    prompt += texts[p % texts.size()];
  }
  r.prompt_text = prompt;
  r.layers = {0, 1};
  StageRecord embed;
  embed.stage = "embed";
  embed.axes = {{"pos", n}, {"hidden", 8}};
  embed.positions = r.positions;
  for (int p = 0; p < n; ++p) {
    TensorStats s;
    s.add(0.5f);
    embed.per_position.push_back(s);
    embed.overall.merge(s);
    embed.first.push_back({0.125f, -0.25f, 0.5f, 1e-5f, -3.5f, 2.f, 8.f, 0.0625f});
  }
  r.stages = {embed};
  LogitLens l;
  l.top_k = 2;
  l.positions = r.positions;
  l.tokens = r.ids;
  for (int layer = 0; layer < 2; ++layer) {
    LensLayer ll;
    ll.layer = layer;
    for (int p = 0; p < n; ++p)
      ll.top.push_back({lens_token(p, 0.5, texts[(p + 1) % texts.size()] + "很长的词元文本"), lens_token(1, 0.25, "x")});
    l.layers.push_back(ll);
  }
  l.final_top = l.layers.back().top;
  l.last_layer_max_abs_diff = 0.0;
  r.lens = l;
  return r;
}

std::vector<std::string> table_lines(const TraceReport& r, const TableOptions& options) {
  std::ostringstream out;
  print_trace_table(r, out, options);
  std::vector<std::string> lines;
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(TraceTable, EveryLineFitsTheWidth) {
  const TraceReport r = long_report(40);
  for (size_t width : {60u, 80u, 100u, 120u}) {
    TableOptions options;
    options.width = width;
    for (bool per_position : {false, true}) {
      options.per_position = per_position;
      for (const std::string& line : table_lines(r, options))
        EXPECT_LE(utf8::display_width(line), width) << "width " << width << ": " << line;
    }
  }
}

TEST(TraceTable, LensStacksPositionsInBlocksThatFit) {
  const TraceReport r = long_report(13);
  TableOptions options;
  options.width = 100;  // a 10-column label and five 18-column cells
  const auto lines = table_lines(r, options);
  std::vector<size_t> headers;
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].starts_with("          pos ")) headers.push_back(i);
  ASSERT_EQ(headers.size(), 3u) << "13 positions in blocks of 5, 5 and 3";
  EXPECT_NE(lines[headers[0]].find("pos 4 "), std::string::npos) << lines[headers[0]];
  EXPECT_EQ(lines[headers[0]].find("pos 5 "), std::string::npos) << lines[headers[0]];
  EXPECT_NE(lines[headers[2]].find("pos 12 "), std::string::npos) << lines[headers[2]];
  // Under each header a row per layer and the logits, then a blank line before the next block.
  for (size_t b = 0; b < headers.size(); ++b) {
    ASSERT_LT(headers[b] + 3, lines.size());
    EXPECT_TRUE(lines[headers[b] + 1].starts_with("layer0 ")) << lines[headers[b] + 1];
    EXPECT_TRUE(lines[headers[b] + 2].starts_with("layer1 ")) << lines[headers[b] + 2];
    EXPECT_TRUE(lines[headers[b] + 3].starts_with("logits ")) << lines[headers[b] + 3];
    if (b + 1 < headers.size()) {
      EXPECT_EQ(headers[b + 1], headers[b] + 5);
    }
  }
  // Wider terminals take more positions per block.
  options.width = 200;
  size_t wide_headers = 0;
  for (const std::string& line : table_lines(r, options)) wide_headers += line.starts_with("          pos ");
  EXPECT_EQ(wide_headers, 2u) << "blocks of 10";
}

TEST(TraceTable, LongLinesWrapWithoutLosingText) {
  const TraceReport r = long_report(40);
  TableOptions options;
  options.width = 80;
  const auto lines = table_lines(r, options);
  // The tokens line and its continuations, indented under the first token, hold every token.
  std::string tokens = " ";
  bool in_tokens = false;
  for (const std::string& line : lines) {
    if (line.starts_with("tokens     ")) in_tokens = true;
    else if (!line.starts_with("           ")) in_tokens = false;
    if (in_tokens) tokens += line.substr(11) + " ";
  }
  for (int p = 0; p < 40; ++p) {
    std::string item(1, ' ');  // appended: GCC 12 warns falsely about "literal" + std::string
    item += std::to_string(p) + ":" + std::to_string(10 + p);
    EXPECT_NE(tokens.find(item), std::string::npos) << p;
  }
  EXPECT_NE(tokens.find("5:15=\"인공지능은\""), std::string::npos) << tokens;
  // A prompt wraps at its spaces; one without spaces (as Chinese or Japanese is written) is
  // cut between characters. Either way all of it is there.
  const auto prompt_lines = [&](const std::string& text) {
    TraceReport with = r;
    with.prompt_text = text;
    std::vector<std::string> pieces;
    bool in_prompt = false;
    for (const std::string& line : table_lines(with, options)) {
      if (line.starts_with("prompt     ")) in_prompt = true;
      else if (!line.starts_with("           ")) in_prompt = false;
      if (in_prompt) pieces.push_back(line.substr(11));
    }
    return pieces;
  };
  const std::string english = "The quick brown fox jumps over the lazy dog, and then  twice over the lazy cat again.";
  auto pieces = prompt_lines(english);
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0] + " " + pieces[1], quoted_token(english));
  const std::string japanese = "大規模言語モデルの内部を一層ずつ見る長い長い日本語の文で、空白がひとつもない";
  pieces = prompt_lines(japanese);
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0] + pieces[1], quoted_token(japanese));
  EXPECT_EQ(utf8::display_width(pieces[0]), 69u) << "the quote and as many wide characters as fit in 69 columns";
}

TEST(TraceTable, FirstValuesStopWhereTheLineWouldOverflow) {
  TraceReport r = long_report(3);
  r.lens.reset();
  TableOptions options;
  options.first_values = 8;
  options.width = 400;
  auto lines = table_lines(r, options);
  const auto embed = [&] {
    for (const std::string& line : lines)
      if (line.starts_with("embed ")) return line;
    return std::string();
  };
  EXPECT_NE(embed().find("0.125 -0.25 0.5 1e-05 -3.5 2 8 0.0625"), std::string::npos) << embed();
  EXPECT_EQ(embed().find("…"), std::string::npos) << "all eight shown";
  options.width = 80;
  lines = table_lines(r, options);
  EXPECT_NE(embed().find("0.125 -0.25"), std::string::npos) << embed();
  EXPECT_TRUE(embed().ends_with(" …")) << embed();
  EXPECT_LE(utf8::display_width(embed()), 80u);
}

TEST(TraceTable, QuotedTokenEscapesControlsAndHalfCharacters) {
  EXPECT_EQ(quoted_token(" world"), "\" world\"");
  EXPECT_EQ(quoted_token("世界"), "\"世界\"");
  EXPECT_EQ(quoted_token("a\"b\\\n\t\x01"), "\"a\\\"b\\\\\\n\\t\\x01\"");
  // A token may hold part of a character: its bytes are shown, not passed to the terminal.
  EXPECT_EQ(quoted_token("\xe4\xb8"), "\"\\xe4\\xb8\"");
  EXPECT_EQ(quoted_token("\x96\xe7\x95\x8c"), "\"\\x96界\"");
  // C1 controls would act on a terminal (U+009B is CSI).
  EXPECT_EQ(quoted_token("\xc2\x9b" "31m\xc2\xa0"), "\"\\u009b31m\xc2\xa0\"");
  // Cut to a number of columns between the quotes, "…" the last of them.
  EXPECT_EQ(short_quoted_token(" international", 9), "\" interna…\"");
  EXPECT_EQ(short_quoted_token("世界世界世界", 9), "\"世界世界…\"");
  EXPECT_EQ(short_quoted_token("世界世界世界", 8), "\"世界世…\"");
  EXPECT_EQ(short_quoted_token("abcdefghi", 9), "\"abcdefghi\"");
  EXPECT_EQ(short_quoted_token("\n\n\n\n\n", 9), "\"\\n\\n\\n\\n…\"") << "escapes take columns";
}

}  // namespace
}  // namespace glass
