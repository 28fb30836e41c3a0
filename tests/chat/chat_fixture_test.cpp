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
