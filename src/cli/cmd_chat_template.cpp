// glass chat-template: the prompt a checkpoint's chat template makes of a conversation,
// exactly as transformers' apply_chat_template(tokenize=False) would.
#include <iostream>
#include <iterator>
#include <memory>

#include "runtime/model_files.h"
#include "base/error.h"
#include "base/json_fields.h"
#include "base/mapped_file.h"
#include "chat/chat_template.h"
#include "cli/commands.h"
#include "cli/model_source.h"

namespace glass::cli {

namespace {

using jinja::OrderedJson;

OrderedJson parse_json_text(const std::string& text, const std::string& source) { return parse_ordered_json(text, source); }

}  // namespace

Command add_chat_template_command(CLI::App& app) {
  struct Options {
    std::string model, messages, tools, template_name;
    std::vector<std::string> vars;
    bool no_generation_prompt = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("chat-template", "Print the prompt a checkpoint's chat template makes of messages");
  sub->add_option("-m,--model", o->model, "Checkpoint or tokenizer folder, or a GGUF file (default: the built-in demo model, Qwen2.5's template)");
  sub->add_option("--messages", o->messages,
                  "JSON file: an array of messages, or an object with \"messages\" (and \"tools\"); default: stdin");
  sub->add_option("--tools", o->tools, "JSON file with an array of tool schemas");
  sub->add_flag("--no-generation-prompt", o->no_generation_prompt, "Do not open an assistant turn at the end");
  sub->add_option("--template", o->template_name, "Which of several named chat templates (default: \"default\")");
  sub->add_option("--var", o->vars, "Extra template variable NAME=JSON, e.g. enable_thinking=false (repeatable)");

  return {sub, [o] {
            std::string dir = o->model;
            if (!dir.empty()) dir = local_model_path(dir, "");
            if (dir.empty()) {
              dir = demo_model_dir();
              std::cerr << "glass: no -m given: using the built-in demo model's chat template (Qwen2.5)\n";
            }
            const ChatTemplate chat = load_model_chat_template(dir, o->template_name);

            std::string text, source;
            if (o->messages.empty() || o->messages == "-") {
              text = read_stream(std::cin, "stdin");
              source = "stdin";
            } else {
              text = read_text_file(o->messages);
              source = o->messages;
            }
            OrderedJson messages = parse_json_text(text, source);
            OrderedJson tools;
            if (messages.is_object()) {
              // An OpenAI-style request body: {"messages": [...], "tools": [...]}.
              if (!messages.contains("messages")) fail(source, ": an object needs a \"messages\" array");
              if (messages.contains("tools")) tools = messages["tools"];
              messages = OrderedJson(messages["messages"]);
            }
            if (!messages.is_array()) fail(source, ": messages must be a JSON array");
            if (!o->tools.empty()) tools = parse_json_text(read_text_file(o->tools), o->tools);

            OrderedJson vars = OrderedJson::object();
            for (const std::string& v : o->vars) {
              const size_t eq = v.find('=');
              if (eq == std::string::npos || eq == 0) fail("--var ", v, ": expected NAME=JSON");
              vars[v.substr(0, eq)] = parse_json_text(v.substr(eq + 1), "--var " + v.substr(0, eq));
            }
            std::cout << chat.render(messages, tools, !o->no_generation_prompt, vars) << std::flush;
            return 0;
          }};
}

}  // namespace glass::cli
