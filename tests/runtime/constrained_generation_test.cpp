// Constrained decoding in the generation loop: a grammar's mask is a stage before the
// processors, every output that ends at an eos token is in the grammar's language, a
// grammar without an eos token to end it is refused, and a triggered grammar applies
// only from its trigger until its string is complete.
#include <gtest/gtest.h>

#include <memory>

#include "base/json_fields.h"
#include "grammar/json_schema.h"
#include "runtime/generator.h"
#include "kernels/backend.h"
#include "support/test_support.h"

namespace glass {
namespace {

// A tiny random model with the Qwen2.5 tokenizer (random weights: left alone, it would
// never write JSON).
struct QwenVocabularyModel {
  test::TempDir dir;
  std::unique_ptr<DecoderModel> model;
  std::unique_ptr<Tokenizer> tokenizer;
  QwenVocabularyModel() {
    ModelConfig c = test::tiny_config();
    c.vocab_size = 151936;
    c.max_position_embeddings = 512;
    test::write_tiny_checkpoint(dir.path(), c);
    for (const char* name : {"tokenizer.json", "tokenizer_config.json"})
      test::write_string(dir.file(name), test::read_string(test::demo_model_dir() + "/" + name));
    model = std::make_unique<DecoderModel>(DecoderModel::load(dir.path()));
    tokenizer = std::make_unique<Tokenizer>(Tokenizer::load(dir.path()));
  }
};

constexpr const char* kSchema = R"({
  "type": "object",
  "properties": {
    "city": {"type": "string", "maxLength": 8},
    "unit": {"enum": ["celsius", "fahrenheit"]},
    "days": {"type": "integer", "minimum": 1, "maximum": 14},
    "alerts": {"type": "boolean"}
  },
  "required": ["city", "unit", "days"],
  "additionalProperties": false
})";

// Code points of UTF-8 text: every byte that does not continue a character.
size_t code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// What the schema says, checked by hand (independently of the grammar).
bool valid_instance(const std::string& text, std::string* why) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const std::exception& e) {
    *why = e.what();
    return false;
  }
  if (!j.is_object()) return *why = "not an object", false;
  for (const char* key : {"city", "unit", "days"})
    if (!j.contains(key)) return *why = std::string("no ") + key, false;
  for (const auto& [key, value] : j.items()) {
    if (key == "city") {
      if (!value.is_string() || code_points(value.get<std::string>()) > 8) return *why = "city", false;
    } else if (key == "unit") {
      if (value != "celsius" && value != "fahrenheit") return *why = "unit", false;
    } else if (key == "days") {
      if (!value.is_number_integer() || value.get<int64_t>() < 1 || value.get<int64_t>() > 14) return *why = "days", false;
    } else if (key == "alerts") {
      if (!value.is_boolean()) return *why = "alerts", false;
    } else {
      return *why = "extra property " + key, false;
    }
  }
  return true;
}

SamplingParams sampled(uint64_t seed) {
  SamplingParams p;
  p.do_sample = true;
  p.temperature = 1.0f;
  p.seed = seed;
  p.max_new_tokens = 300;
  p.eos_token_ids = {151645, 151643};
  return p;
}

TEST(ConstrainedGeneration, EveryOutputThatEndsIsValidAgainstTheSchema) {
  QwenVocabularyModel f;
  Backend backend("cpu", 1);
  const grammar::Grammar g = grammar::json_schema_grammar(std::string_view(kSchema));
  const std::vector<int32_t> prompt = f.tokenizer->encode("Weather as JSON:");
  int ended = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    KVCache cache(f.model->config(), KVType::F32, 512);
    GenerationRequest r{prompt, sampled(seed)};
    r.grammar = g;
    r.skip_special_tokens = true;
    const auto results = Generator::run_all(*f.model, backend.kernels(), cache, *f.tokenizer, 512, {r});
    const GenerationResult& out = results.front();
    if (out.finish.kind != FinishReason::Kind::eos) continue;  // ran out of tokens: may be cut short
    ++ended;
    std::string why;
    EXPECT_TRUE(valid_instance(out.text, &why)) << "seed " << seed << ": " << why << "\n" << out.text;
  }
  // The bounded whitespace and lengths leave the model few ways to run on.
  EXPECT_GE(ended, 10);
}

TEST(ConstrainedGeneration, TheMaskIsAStageBeforeTheProcessors) {
  QwenVocabularyModel f;
  Backend backend("cpu", 1);
  KVCache cache(f.model->config(), KVType::F32, 512);
  GenerationRequest r{f.tokenizer->encode("Answer:"), sampled(3)};
  r.show_top = 5;
  r.params.top_k = 20;
  r.grammar = grammar::Grammar::from_gbnf(R"(root ::= ("yes" | "no") "." )");
  std::vector<std::string> first_stages;
  std::vector<int64_t> left;
  const auto results = Generator::run_all(*f.model, backend.kernels(), cache, *f.tokenizer, 512, {r},
                                          [&](const GenerationEvent& e) {
                                            ASSERT_NE(e.trace, nullptr);
                                            ASSERT_FALSE(e.trace->steps.empty());
                                            first_stages.push_back(e.trace->steps.front().setting);
                                            left.push_back(e.trace->steps.front().surviving);
                                          });
  const GenerationResult& out = results.front();
  EXPECT_TRUE(out.text == "yes." || out.text == "no.") << out.text;
  EXPECT_EQ(out.finish.kind, FinishReason::Kind::eos);
  ASSERT_FALSE(first_stages.empty());
  for (const std::string& s : first_stages) EXPECT_EQ(s, "grammar");
  // First step: the tokens that start "yes." or "no." ("y", "ye", "yes", "n", "no",
  // "no."...): a handful, far fewer than the vocabulary.
  EXPECT_GT(left.front(), 1);
  EXPECT_LT(left.front(), 20);
  // Last step: only the eos tokens are left.
  EXPECT_EQ(left.back(), 2);
}

TEST(ConstrainedGeneration, EachChoiceFollowsTheGrammar) {
  QwenVocabularyModel f;
  Backend backend("cpu", 1);
  KVCache cache(f.model->config(), KVType::F32, 4 * 512);
  Generator gen(*f.model, backend.kernels(), cache, *f.tokenizer, 512);
  GenerationRequest r{f.tokenizer->encode("Number:"), sampled(11)};
  r.grammar = grammar::Grammar::from_gbnf("root ::= [1-9] [0-9]{0,3}");
  const std::vector<int> handles = gen.add_choices(r, 4);
  while (!gen.idle()) gen.step({});
  for (int h : handles) {
    const GenerationResult out = *gen.take_result(h);
    ASSERT_FALSE(out.text.empty());
    EXPECT_LE(out.text.size(), 4u) << out.text;
    EXPECT_NE(out.text[0], '0') << out.text;
    for (char c : out.text) EXPECT_TRUE(c >= '0' && c <= '9') << out.text;
    EXPECT_EQ(out.finish.kind, FinishReason::Kind::eos) << out.text;
  }
}

TEST(ConstrainedGeneration, AGrammarNeedsAnEosToken) {
  QwenVocabularyModel f;
  Backend backend("cpu", 1);
  KVCache cache(f.model->config(), KVType::F32, 512);
  Generator gen(*f.model, backend.kernels(), cache, *f.tokenizer, 512);
  GenerationRequest r{f.tokenizer->encode("x"), sampled(1)};
  r.params.eos_token_ids.clear();  // ignore_eos
  r.grammar = grammar::json_object_grammar();
  const std::string message = test::thrown_error([&] { gen.add(r); });
  EXPECT_NE(message.find("a grammar needs an end-of-sequence token"), std::string::npos) << message;
}

// A hostile grammar whose first byte leads to a state past the matcher's limits leaves
// no token to choose: the sequence ends there, cut short, instead of failing the pass.
TEST(ConstrainedGeneration, AGrammarThatAllowsNothingEndsTheSequence) {
  QwenVocabularyModel f;
  Backend backend("cpu", 1);
  KVCache cache(f.model->config(), KVType::F32, 512);
  GenerationRequest hostile{f.tokenizer->encode("x"), sampled(1)};
  hostile.grammar = grammar::Grammar::from_gbnf(R"(root ::= "b" ("a"?){0,100000} "b")");
  GenerationRequest fine{f.tokenizer->encode("y"), sampled(2)};
  fine.grammar = grammar::Grammar::from_gbnf(R"(root ::= "ok")");
  const auto results = Generator::run_all(*f.model, backend.kernels(), cache, *f.tokenizer, 512, {hostile, fine});
  EXPECT_EQ(results[0].finish.kind, FinishReason::Kind::grammar);
  EXPECT_EQ(results[0].finish.openai_name(), "length");
  EXPECT_TRUE(results[0].tokens.empty());
  // The other sequence of the batch is not disturbed.
  EXPECT_EQ(results[1].text, "ok");
  EXPECT_EQ(results[1].finish.kind, FinishReason::Kind::eos);
}

// A model that greedily writes "Hi<tool_call> ok; more" (Hi, <tool_call>, " ok", ";",
// " more"), then eos.
struct TriggerModel {
  test::TempDir dir;
  std::unique_ptr<DecoderModel> model;
  std::unique_ptr<Tokenizer> tokenizer;
  TriggerModel() {
    const std::vector<int32_t> chain = {198, 13048, 151657, 5394, 26, 803, 151645};
    std::vector<std::pair<int32_t, int32_t>> next;
    for (size_t i = 0; i + 1 < chain.size(); ++i) next.emplace_back(chain[i], chain[i + 1]);
    test::write_successor_model(dir.path(), next, test::demo_model_dir());
    model = std::make_unique<DecoderModel>(DecoderModel::load(dir.path()));
    tokenizer = std::make_unique<Tokenizer>(Tokenizer::load(dir.path()));
  }
  // Greedy from "\n", each step's first stage ("" when no processor ran).
  GenerationResult run(GenerationRequest r, std::vector<std::string>* stages) const {
    Backend backend("cpu", 1);
    KVCache cache(model->config(), KVType::F32, 64);
    r.prompt = {198};
    r.params.eos_token_ids = {151645};
    r.params.max_new_tokens = 12;
    r.show_top = 3;
    return Generator::run_all(*model, backend.kernels(), cache, *tokenizer, 64, {r},
                              [&](const GenerationEvent& e) {
                                stages->push_back(e.trace->steps.empty() ? "" : e.trace->steps.front().setting);
                              })
        .front();
  }
};

TEST(ConstrainedGeneration, ATriggeredGrammarAppliesFromItsTriggerUntilComplete) {
  TriggerModel f;
  ASSERT_EQ(f.tokenizer->encode("Hi<tool_call> ok; more"), (std::vector<int32_t>{13048, 151657, 5394, 26, 803}));
  GenerationRequest r;
  r.grammar_trigger = "<tool_call>";

  // The grammar allows what the model writes: the same text, and the mask is a stage
  // exactly on the steps after the trigger up to the grammar's end.
  r.grammar = grammar::Grammar::from_gbnf(R"(root ::= " ok;")");
  std::vector<std::string> stages;
  GenerationResult out = f.run(r, &stages);
  EXPECT_EQ(out.text, "Hi<tool_call> ok; more");
  EXPECT_EQ(out.finish.kind, FinishReason::Kind::eos);
  EXPECT_EQ(stages, (std::vector<std::string>{"", "", "grammar", "grammar", "", ""}));

  // A grammar the model would not follow: after the trigger it writes the grammar's
  // string, then is free again (" more" and eos are the model's own).
  r.grammar = grammar::Grammar::from_gbnf(R"(root ::= " no" ";")");
  stages.clear();
  out = f.run(r, &stages);
  EXPECT_TRUE(out.text.starts_with("Hi<tool_call> no;")) << out.text;
  ASSERT_GE(stages.size(), 4u);
  EXPECT_EQ(stages[0], "");
  EXPECT_EQ(stages[1], "");
  EXPECT_EQ(stages[2], "grammar");
  const size_t constrained = static_cast<size_t>(std::count(stages.begin(), stages.end(), "grammar"));
  // Every constrained step wrote part of " no;", and nothing after it was constrained.
  EXPECT_LE(constrained, 4u);
  for (size_t i = 2; i < stages.size(); ++i) EXPECT_EQ(stages[i] == "grammar", i < 2 + constrained) << i;

  // Between the quiet span's tokens (a think block) the trigger does not count: here the
  // span opens at "Hi" and closes at " more", so "<tool_call>" is thought, not made.
  r.grammar_quiet = GenerationRequest::QuietSpan{13048, 803, false};
  stages.clear();
  out = f.run(r, &stages);
  EXPECT_EQ(out.text, "Hi<tool_call> ok; more");
  for (const std::string& s : stages) EXPECT_EQ(s, "");
  // Closed before the trigger, the span is no shelter; opened by the prompt, it is.
  r.grammar_quiet = GenerationRequest::QuietSpan{-1, 13048, true};
  stages.clear();
  out = f.run(r, &stages);
  EXPECT_TRUE(out.text.starts_with("Hi<tool_call> no;")) << out.text;
  r.grammar_quiet = GenerationRequest::QuietSpan{-1, 26, true};
  stages.clear();
  out = f.run(r, &stages);
  EXPECT_EQ(out.text, "Hi<tool_call> ok; more");
  r.grammar_quiet.reset();

  // Without the trigger in the output the grammar never applies; and a triggered grammar
  // needs no eos token, but a trigger needs a grammar.
  r.grammar_trigger = "<nothing>";
  stages.clear();
  out = f.run(r, &stages);
  EXPECT_EQ(out.text, "Hi<tool_call> ok; more");
  for (const std::string& s : stages) EXPECT_EQ(s, "");
  Backend backend("cpu", 1);
  KVCache cache(f.model->config(), KVType::F32, 64);
  Generator gen(*f.model, backend.kernels(), cache, *f.tokenizer, 64);
  GenerationRequest no_eos{{198}, {}};
  no_eos.grammar = grammar::Grammar::from_gbnf(R"(root ::= "x")");
  no_eos.grammar_trigger = "<tool_call>";
  EXPECT_NO_THROW(gen.add(no_eos));
  no_eos.grammar.reset();
  EXPECT_NE(test::thrown_error([&] { gen.add(no_eos); }).find("needs a grammar"), std::string::npos);
}

}  // namespace
}  // namespace glass
