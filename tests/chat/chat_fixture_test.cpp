// Every case of every chat-templates/*.json fixture: the rendered prompt must be
// byte-identical to Python Jinja2's, and an error wherever Jinja2 raised one. Where a
// fixture tokenizer folder ships one of the templates, the case is also rendered through
// ChatTemplate::from_checkpoint.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>

#include "base/error.h"
#include "base/mapped_file.h"
#include "chat/chat_template.h"
#include "support/test_support.h"

namespace glass {
namespace {

using jinja::OrderedJson;

// The renderer's clock: strftime_now() sees 2026-01-15.
jinja::RenderOptions fixture_options() {
  jinja::RenderOptions o;
  o.now = [] {
    std::tm t{};
    t.tm_year = 2026 - 1900;
    t.tm_mon = 0;
    t.tm_mday = 15;
    t.tm_wday = 4;  // Thursday
    t.tm_yday = 14;
    return t;
  };
  return o;
}

OrderedJson read_fixture(const std::string& path) { return OrderedJson::parse(read_text_file(path)); }

// Case fields that are not template variables; any others are passed to the template.
bool is_case_field(const std::string& key) {
  return key == "template" || key == "conversation" || key == "expected" || key == "error";
}

jinja::Value var(const OrderedJson& j) { return jinja::value_from_json(j); }

// ChatTemplate passes what transformers passes: `documents` and every special token the
// tokenizer config sets. The fixtures pass only their case fields, so the checkpoint path
// is compared only for templates that cannot see the difference.
bool uses_more_than_the_fixture_passes(const std::string& text) {
  for (const char* name : {"documents", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token",
                           "additional_special_tokens"})
    if (text.find(name) != std::string::npos) return true;
  return false;
}

// A checkpoint folder of the fixtures whose chat template is `text`, if any.
std::string checkpoint_with_template(const std::string& text) {
  namespace fs = std::filesystem;
  for (const auto& entry : fs::directory_iterator(test::fixtures_root())) {
    const std::string config = entry.path().string() + "/tokenizer_config.json";
    if (!fs::exists(config)) continue;
    const OrderedJson j = read_fixture(config);
    if (j.contains("chat_template") && j["chat_template"].is_string() && j["chat_template"] == text)
      return entry.path().string();
  }
  return "";
}

class ChatTemplateCase : public ::testing::Test {
 public:
  ChatTemplateCase(std::string template_name, std::string template_text, std::string checkpoint, OrderedJson c)
      : name_(std::move(template_name)),
        text_(std::move(template_text)),
        checkpoint_(std::move(checkpoint)),
        case_(std::move(c)) {}

  void TestBody() override {
    const bool expects_error = case_.contains("error");
    ASSERT_TRUE(expects_error || (case_.contains("expected") && case_["expected"].is_string()))
        << "case has neither \"expected\" nor \"error\"";
    jinja::Variables vars;
    for (const auto& [key, value] : case_.items())
      if (!is_case_field(key)) vars.emplace_back(key, var(value));

    std::string rendered, error;
    try {
      rendered = jinja::Template::parse(text_, name_).render(vars, fixture_options());
    } catch (const Error& e) {
      error = e.what();
    }
    if (expects_error) {
      ASSERT_FALSE(error.empty()) << "Jinja2 raised " << case_["error"] << " but glass rendered:\n" << rendered;
      // raise_exception's message must come through; other Python exception texts differ.
      const std::string expected = case_["error"].get<std::string>();
      const std::string prefix = "TemplateError: ";
      if (expected.rfind(prefix, 0) == 0) {
        EXPECT_NE(error.find(expected.substr(prefix.size())), std::string::npos) << error;
      }
      return;
    }
    ASSERT_TRUE(error.empty()) << error;
    EXPECT_EQ(rendered, case_["expected"].get<std::string>());

    // The same case through the checkpoint loader, where a fixture folder has this template.
    const std::string& dir = checkpoint_;
    if (dir.empty()) return;
    OrderedJson extra = OrderedJson::object();
    for (const auto& [key, value] : case_.items())
      if (!is_case_field(key) && key != "messages" && key != "tools" && key != "add_generation_prompt") extra[key] = value;
    const ChatTemplate chat = ChatTemplate::from_checkpoint(dir);
    const OrderedJson tools = case_.contains("tools") ? case_["tools"] : OrderedJson();
    EXPECT_EQ(chat.render(case_["messages"], tools, case_.value("add_generation_prompt", false), extra,
                          fixture_options()),
              case_["expected"].get<std::string>())
        << "through ChatTemplate::from_checkpoint(" << dir << ")";
  }

 private:
  std::string name_, text_, checkpoint_;
  OrderedJson case_;
};

std::string test_name(size_t index, const OrderedJson& c) {
  std::string name = std::to_string(index) + "_" + c.value("template", std::string("template")) + "_" +
                     c.value("conversation", std::string("case"));
  if (c.contains("add_generation_prompt")) name += c["add_generation_prompt"] == true ? "_gen" : "_nogen";
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

size_t register_file(const std::string& path) {
  const OrderedJson fixture = read_fixture(path);
  const OrderedJson& templates = fixture.at("templates");
  const OrderedJson& cases = fixture.at("cases");
  const std::string suite = "ChatTemplates_" + std::filesystem::path(path).stem().string();
  std::map<std::string, std::string> checkpoints;  // template name -> fixture folder shipping it
  for (const auto& [name, text] : templates.items())
    if (!uses_more_than_the_fixture_passes(text)) checkpoints[name] = checkpoint_with_template(text);
  for (size_t i = 0; i < cases.size(); ++i) {
    const OrderedJson& c = cases[i];
    const std::string template_name = c.at("template").get<std::string>();
    const std::string text = templates.at(template_name).get<std::string>();
    const std::string checkpoint = checkpoints[template_name];
    ::testing::RegisterTest(suite.c_str(), test_name(i, c).c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [=]() -> ::testing::Test* {
                              return new ChatTemplateCase(template_name, text, checkpoint, c);
                            });
  }
  return cases.size();
}

// A long conversation as a chat server gets one: a system prompt, 20 tools, and 1000
// messages of user turns, assistant turns with reasoning and tool calls, and tool results,
// about 1.5 MB of text.
OrderedJson long_conversation(OrderedJson& tools) {
  tools = OrderedJson::array();
  for (int t = 0; t < 20; ++t) {
    OrderedJson properties = OrderedJson::object();
    for (int p = 0; p < 6; ++p)
      properties["param_" + std::to_string(p)] = {{"type", p % 2 ? "integer" : "string"},
                                                  {"description", "Parameter " + std::to_string(p) + " of the tool."}};
    tools.push_back({{"type", "function"},
                     {"function",
                      {{"name", "tool_" + std::to_string(t)},
                       {"description", "Does task " + std::to_string(t) + " and reports what it found."},
                       {"parameters", {{"type", "object"}, {"properties", properties}, {"required", {"param_0"}}}}}}});
  }
  auto text = [](const std::string& what, int i, size_t words) {
    std::string s = what + " " + std::to_string(i) + ":";
    for (size_t w = 0; w < words; ++w) s += " word" + std::to_string(w % 97) + (w % 13 == 12 ? ".\n" : "");
    return s;
  };
  OrderedJson messages = OrderedJson::array();
  messages.push_back({{"role", "system"}, {"content", text("You are a helpful assistant", 0, 300)}});
  for (int turn = 0; messages.size() < 1000; ++turn) {
    messages.push_back({{"role", "user"}, {"content", text("Question", turn, 200)}});
    OrderedJson call = {{"type", "function"},
                        {"function",
                         {{"name", "tool_" + std::to_string(turn % 20)},
                          {"arguments", {{"param_0", text("query", turn, 10)}, {"param_1", turn}}}}}};
    messages.push_back({{"role", "assistant"},
                        {"content", "<think>\n" + text("Reasoning", turn, 100) + "\n</think>\n\n" +
                                        text("Let me look", turn, 20)},
                        {"tool_calls", {call, call}}});
    messages.push_back({{"role", "tool"}, {"content", text("Result", turn, 150)}});
    messages.push_back({{"role", "tool"}, {"content", text("Result", turn, 150)}});
    messages.push_back({{"role", "assistant"}, {"content", text("Answer", turn, 250)}});
  }
  return messages;
}

// Real templates on a long conversation with tools stay far below every budget: each
// renders within a tenth of each default budget (call depth excepted: they use no macros).
TEST(ChatTemplateBudgets, LongConversationsWithToolsUseATenthOfEachBudgetAtMost) {
  OrderedJson tools;
  const OrderedJson messages = long_conversation(tools);
  const jinja::RenderLimits defaults;
  jinja::RenderOptions tenth = fixture_options();
  tenth.limits.max_output_bytes = defaults.max_output_bytes / 10;
  tenth.limits.max_string_bytes = defaults.max_string_bytes / 10;
  tenth.limits.max_items = defaults.max_items / 10;
  tenth.limits.max_allocated_bytes = defaults.max_allocated_bytes / 10;
  tenth.limits.max_work = defaults.max_work / 10;
  tenth.limits.max_recursion_depth = defaults.max_recursion_depth / 10;
  jinja::RenderUsage usage;
  tenth.usage = &usage;
  size_t rendered_templates = 0;
  for (const auto& file : test::fixture_files("chat-templates")) {
    const OrderedJson fixture = read_fixture(file);
    for (const auto& [name, text] : fixture.at("templates").items()) {
      if (name.find("Qwen") == std::string::npos) continue;  // Qwen2.5, Qwen3, QwQ, R1-Distill-Qwen
      SCOPED_TRACE(name);
      jinja::Variables vars = {{"messages", var(messages)}, {"tools", var(tools)},
                               {"add_generation_prompt", jinja::Value::boolean(true)},
                               {"bos_token", jinja::Value::string("<s>")}, {"eos_token", jinja::Value::string("</s>")}};
      std::string rendered;
      ASSERT_NO_THROW(rendered = jinja::Template::parse(text.get<std::string>(), name).render(vars, tenth));
      EXPECT_NE(rendered.find("Answer 199: word0"), std::string::npos);
      EXPECT_NE(rendered.find("tool_19"), std::string::npos);
      std::printf("%s: %zu messages, output %llu bytes, largest string %llu bytes, largest list %llu items, "
                  "allocated %llu bytes, work %llu steps, call depth %d, recursion depth %d\n",
                  name.c_str(), messages.size(), static_cast<unsigned long long>(usage.output_bytes),
                  static_cast<unsigned long long>(usage.largest_string_bytes),
                  static_cast<unsigned long long>(usage.largest_list_items),
                  static_cast<unsigned long long>(usage.allocated_bytes), static_cast<unsigned long long>(usage.work),
                  usage.call_depth, usage.recursion_depth);
      ++rendered_templates;
    }
  }
  EXPECT_GE(rendered_templates, 2u);  // Qwen2.5 and Qwen3 at least
}

}  // namespace
}  // namespace glass

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const auto files = glass::test::fixture_files("chat-templates");
  if (files.empty()) {
    std::fprintf(stderr, "no chat template fixtures (chat-templates/*.json) under %s\n",
                 glass::test::fixtures_root().c_str());
    return 1;
  }
  size_t cases = 0;
  for (const auto& f : files) cases += glass::register_file(f);
  if (cases == 0) {
    std::fprintf(stderr, "the chat template fixtures under %s have no cases\n", glass::test::fixtures_root().c_str());
    return 1;
  }
  return RUN_ALL_TESTS();
}
