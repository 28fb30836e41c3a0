// glass chat: an interactive conversation with the checkpoint's chat template. Replies
// stream as they are produced and end at an eos token (<|im_end|> for Qwen2.5-Instruct).
// Reads one message per line, so it works from a terminal or a pipe:
//   /reset  forget the conversation     /system TEXT  set the system message (and reset)
//   /exit   or end of input (Ctrl-D)
// /reset and /system are acknowledged on stderr, from a pipe too. A reply starts at its
// first non-whitespace character: a first token such as " squid" would otherwise start it
// with a space (shown, in the JSON line and in the history alike).
// With --format jsonl each reply is one JSON line (replies may contain newlines), for
// scripts. A model that thinks (Qwen3) has its reasoning kept apart: shown with
// --show-thinking, in "reasoning_content" of the JSON lines, and left out of the
// conversation's history (the answer alone is what the template gets back, as Qwen
// advises).
#include <chrono>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/commands.h"
#include "cli/option_range.h"
#include "cli/generation_options.h"
#include "cli/model_session.h"
#include "runtime/chat_prompt.h"
#include "runtime/generator.h"
#include "runtime/reasoning.h"

namespace glass::cli {

namespace {

void drop_leading_whitespace(std::string& text) {
  text.erase(0, std::min(text.find_first_not_of(" \t\r\n"), text.size()));
}

}  // namespace

Command add_chat_command(CLI::App& app) {
  struct Options {
    std::string model, system, format = "text";
    int64_t ctx_size = 0;
    bool show_thinking = false;
    bool no_prefix_cache = false;
    ChatTemplateOptions template_options;
    GenerationOptions generation;
    RuntimeOptions runtime;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("chat", "Interactive chat; one message per line on stdin (/reset, /system TEXT, /exit)");
  sub->add_option("-m,--model", o->model, "Checkpoint folder, GGUF file, or ORG/NAME[@REVISION] in the Hugging Face cache (default: the built-in demo model)");
  sub->add_option("--system", o->system, "System message");
  sub->add_option("-c,--ctx-size", o->ctx_size, "Context length (default: the model's max_position_embeddings)");
  sub->add_option("--format", o->format, "text (streamed) or jsonl (one JSON object per reply)")->capture_default_str();
  o->template_options.add_to(sub, true);
  sub->add_flag("--no-prefix-cache", o->no_prefix_cache,
                "Compute the whole conversation at every turn (by default, the KV blocks of earlier turns are kept and "
                "only what is new is computed)");
  sub->add_flag("--show-thinking", o->show_thinking,
                "Print the reasoning of models that think (Qwen3's <think> block), dimmed on a terminal");
  // llama.cpp users type these to converse; chat always does, so they change nothing.
  sub->add_flag("-i,--interactive,--conversation")
      ->description("llama.cpp's -i / -cnv: accepted; glass chat is always a conversation");
  o->generation.add_to(sub);
  o->runtime.add_to(sub);

  return {sub, [o] {
            if (o->format != "text" && o->format != "jsonl") fail("--format: \"", o->format, "\" is not one of text, jsonl");
            const bool jsonl = o->format == "jsonl";
            check_range("--ctx-size", o->ctx_size, 0, kMaxContextOption);
            const jinja::OrderedJson template_vars = o->template_options.resolve();
            const ModelSession session(o->model, o->runtime, {.tokenizer = Need::kYes, .chat_template = Need::kYes});
            const std::string& dir = session.path();
            const Tokenizer& tokenizer = session.tokenizer();
            const ChatTemplate& tmpl = session.chat_template();
            o->template_options.warn_if_ignored(tmpl, template_vars);
            const DecoderModel& model = session.model();
            const SamplingParams params = o->generation.resolve(dir, static_cast<int64_t>(tokenizer.vocab_size()));
            const int64_t context = o->ctx_size > 0 ? o->ctx_size : model.config().max_position_embeddings;
            KVCache cache(model.config(), session.kv_type(), context, KVCacheOptions{.prefix_cache = !o->no_prefix_cache});
            const bool interactive = ::isatty(STDIN_FILENO) != 0;

            std::string system = o->system;
            jinja::OrderedJson history = jinja::OrderedJson::array();
            if (interactive)
              std::fprintf(stderr, "glass chat: %s; /reset, /system TEXT, /exit or Ctrl-D\n", dir.c_str());
            std::string line;
            int64_t replies = 0;
            for (;;) {
              if (interactive) {
                std::cout << "> " << std::flush;
              }
              if (!read_line(std::cin, line, "stdin")) break;
              if (!line.empty() && line.back() == '\r') line.pop_back();
              if (line.empty()) continue;
              if (line == "/exit" || line == "/quit") break;
              if (line == "/reset") {
                history = jinja::OrderedJson::array();
                std::fprintf(stderr, "glass: conversation reset\n");
                continue;
              }
              if (line.rfind("/system", 0) == 0 && (line.size() == 7 || line[7] == ' ')) {
                system = line.size() > 8 ? line.substr(8) : "";
                history = jinja::OrderedJson::array();
                std::fprintf(stderr, system.empty() ? "glass: system message cleared; conversation reset\n"
                                                    : "glass: system message set; conversation reset\n");
                continue;
              }
              jinja::OrderedJson messages = jinja::OrderedJson::array();
              if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
              for (const auto& m : history) messages.push_back(m);
              messages.push_back({{"role", "user"}, {"content", line}});
              const ChatPrompt prompt = encode_chat(tmpl, tokenizer, messages, nullptr, true, template_vars);
              if (static_cast<int64_t>(prompt.ids.size()) >= context) {
                std::fprintf(stderr, "glass: the conversation (%zu tokens) fills the context of %lld; /reset to start over\n",
                             prompt.ids.size(), static_cast<long long>(context));
                std::cout << "\n" << std::flush;
                continue;
              }
              // Each turn's prompt is the whole conversation; the prefix cache holds the
              // blocks of the turns before, so only what changed is computed.
              Generator gen(model, session.kernels(), cache, tokenizer, context);
              const int handle = gen.add({prompt.ids, params});
              std::optional<ReasoningSplitter> splitter = reasoning_splitter_for(tokenizer, prompt.ids);
              ReasoningPieces reply;
              ReplyPrinter printer(o->show_thinking);
              const auto turn_start = std::chrono::steady_clock::now();
              std::optional<double> first_token_seconds;
              while (!gen.idle())
                gen.step([&](const GenerationEvent& e) {
                  if (!first_token_seconds)
                    first_token_seconds =
                        std::chrono::duration<double>(std::chrono::steady_clock::now() - turn_start).count();
                  ReasoningPieces piece = split_piece(splitter, e.text, e.finish.has_value());
                  if (reply.content.empty()) drop_leading_whitespace(piece.content);
                  reply.reasoning += piece.reasoning;
                  reply.content += piece.content;
                  if (!jsonl) printer.print(piece, splitter ? &*splitter : nullptr);
                });
              const GenerationResult r = *gen.take_result(handle);
              const bool reasoning_found = splitter && splitter->found_reasoning();
              if (jsonl) {
                nlohmann::ordered_json j = {{"reply", reply.content}};
                if (reasoning_found) j["reasoning_content"] = reply.reasoning;
                j["finish_reason"] = r.finish.name();
                j["prompt_tokens"] = prompt.ids.size();
                j["cached_tokens"] = r.cached_tokens;  // of prompt_tokens: earlier turns' blocks
                j["completion_tokens"] = r.tokens.size();
                j["seconds_to_first_token"] = first_token_seconds.value_or(0.0);
                j["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - turn_start).count();
                if (reasoning_found) j["reasoning_tokens"] = splitter->reasoning_tokens();
                std::cout << j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
              } else {
                printer.end(splitter ? &*splitter : nullptr);
              }
              std::cout << "\n" << std::flush;
              if (r.finish.kind != FinishReason::Kind::eos)
                std::fprintf(stderr, "glass: reply ended by %s\n", r.finish.describe().c_str());
              history.push_back(messages.back());
              history.push_back({{"role", "assistant"}, {"content", reply.content}});
              ++replies;
            }
            if (interactive) std::cout << "\n";
            std::fprintf(stderr, "glass: %s; %s\n", replies == 1 ? "1 reply" : str_cat(replies, " replies").c_str(),
                         session.summary(&cache).c_str());
            return 0;
          }};
}

}  // namespace glass::cli
