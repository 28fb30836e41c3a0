// glass run: generate a continuation of a prompt, streamed to stdout as it is
// produced, with the sampling defaults of the checkpoint's generation_config.json.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <utility>

#include "base/checked_math.h"
#include "base/error.h"
#include "base/json_fields.h"
#include "base/mapped_file.h"
#include "cli/commands.h"
#include "cli/option_range.h"
#include "cli/generation_options.h"
#include "cli/grammar_options.h"
#include "cli/help_groups.h"
#include "cli/llama_flags.h"
#include "cli/model_session.h"
#include "cli/progress.h"
#include "cli/token_ids.h"
#include "runtime/chat_prompt.h"
#include "runtime/generator.h"
#include "runtime/reasoning.h"
#include "tokenizer/utf8.h"

namespace glass::cli {

namespace {

// Output objects keep their fields in the order written.
using OJson = nlohmann::ordered_json;

// JSON text that may hold token bytes that are not UTF-8 on their own.
std::string dump(const OJson& j) { return j.dump(-1, ' ', false, OJson::error_handler_t::replace); }

OJson finish_json(const FinishReason& f, const Tokenizer& tok) {
  OJson j = {{"reason", f.name()}};
  if (f.kind == FinishReason::Kind::eos) {
    j["token"] = f.token;
    if (tok.has_token(f.token)) j["token_text"] = tok.token_text(f.token);
  }
  if (f.kind == FinishReason::Kind::stop_string) j["stop"] = f.stop_string;
  return j;
}

OJson candidate_json(const Candidate& c, const Tokenizer& tok) {
  return {{"id", c.id}, {"text", std::string(tok.token_bytes(c.id))}, {"logit", c.logit},
          {"prob_before", c.prob_before}, {"prob_after", c.prob_after}};
}

// A token's bytes for a table cell: quoted, control characters and bytes that are not
// whole UTF-8 characters (a token may hold half of one) escaped, padded to `width`
// terminal columns.
std::string table_cell(std::string_view bytes, size_t width) {
  std::string out = "\"";
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  for (size_t i = 0; i < bytes.size();) {
    const unsigned char ch = p[i];
    const utf8::Sequence seq = utf8::classify(p + i, bytes.size() - i);
    if (seq.kind == utf8::SequenceKind::kComplete && ch >= 0x20) {
      if (ch == '"') out += "\\\"";
      else out.append(bytes.substr(i, seq.length));
      i += seq.length;
      continue;
    }
    char buf[8];
    if (ch == '\n') std::snprintf(buf, sizeof buf, "\\n");
    else if (ch == '\t') std::snprintf(buf, sizeof buf, "\\t");
    else std::snprintf(buf, sizeof buf, "\\x%02x", ch);
    out += buf;
    ++i;
  }
  out += '"';
  const size_t used = utf8::display_width(out);
  if (used < width) out.append(width - used, ' ');
  return out;
}

void print_step_table(FILE* out, int64_t step, const GenerationEvent& e, const Tokenizer& tok) {
  std::fprintf(out, "step %lld: chose %d %s (p %.4f -> %.4f)", static_cast<long long>(step), e.token,
               table_cell(tok.token_bytes(e.token), 0).c_str(), e.chosen.prob_before, e.chosen.prob_after);
  if (e.trace != nullptr) {
    std::fprintf(out, "  [vocab %lld", static_cast<long long>(e.trace->vocab));
    for (const auto& st : e.trace->steps)
      std::fprintf(out, " -> %s: %lld left", st.setting.c_str(), static_cast<long long>(st.surviving));
    std::fprintf(out, "]");
  }
  std::fprintf(out, "\n  %4s %8s %-20s %10s %10s %10s\n", "rank", "id", "token", "logit", "p before", "p after");
  auto row = [&](int64_t rank, const Candidate& c) {
    std::fprintf(out, "  %4lld %8d %s %10.4f %10.4f %10.4f%s\n", static_cast<long long>(rank), c.id,
                 table_cell(tok.token_bytes(c.id), 20).c_str(), c.logit, c.prob_before, c.prob_after,
                 c.id == e.token ? "  <- chosen" : "");
  };
  for (size_t i = 0; i < e.candidates.size(); ++i) row(static_cast<int64_t>(i) + 1, e.candidates[i]);
  // A sampled token from below the top N: its own row, with its rank.
  if (std::cmp_greater(e.chosen_rank, e.candidates.size())) {
    if (std::cmp_greater(e.chosen_rank, e.candidates.size() + 1)) std::fprintf(out, "  %4s\n", "...");
    row(e.chosen_rank, e.chosen);
  }
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string plural(int64_t n, const char* one, const char* many) {
  return str_cat(n, " ", n == 1 ? one : many);
}

// Why a sequence ended, in words: which token, which string, which limit.
std::string finish_sentence(const FinishReason& f, const Tokenizer& tok, const SamplingParams& params,
                            bool default_limit, int64_t context) {
  switch (f.kind) {
    case FinishReason::Kind::eos:
      return str_cat("stopped at the end-of-sequence token ", f.token,
                     tok.has_token(f.token) ? " " + table_cell(tok.token_bytes(f.token), 0) : "");
    case FinishReason::Kind::stop_string:
      return "stopped at the stop string " + table_cell(f.stop_string, 0);
    case FinishReason::Kind::length:
      return str_cat("stopped after ", plural(params.max_new_tokens.value_or(0), "new token", "new tokens"),
                     default_limit ? ", the default limit (as transformers; -n N for more)" : " (the -n limit)");
    case FinishReason::Kind::context:
      return str_cat("stopped: the context (", plural(context, "token", "tokens"), ") is full");
    case FinishReason::Kind::grammar:
      return "stopped: the grammar allowed no further token (it reached the matcher's limits; the output is cut short)";
  }
  return std::string(f.name());
}

}  // namespace

Command add_run_command(CLI::App& app) {
  struct Options {
    std::string model, format = "text";
    std::vector<std::string> prompts, prompt_files, ids;
    size_t show_top = 0;
    int64_t ctx_size = 0;
    bool no_special = false, chat = false, show_thinking = false, escapes = false, conversation = false;
    std::string system;
    ChatTemplateOptions template_options;
    GenerationOptions generation;
    GrammarOptions constraint;
    RuntimeOptions runtime;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("run", "Generate a continuation, streamed as it is produced");
  sub->add_option("-m,--model", o->model, "Checkpoint folder, GGUF file, or ORG/NAME[@REVISION] in the Hugging Face cache (default: the built-in demo model)");
  auto* prompt = sub->add_option("-p,--prompt", o->prompts, "Prompt text; repeat for a batch of prompts");
  auto* files = sub->add_option("-f,--file", o->prompt_files,
                                "Prompt from a text file (one trailing newline dropped, as llama.cpp does); repeat for a "
                                "batch, after the -p prompts");
  auto* ids = sub->add_option("--ids", o->ids, "Prompt as token ids, e.g. \"9707 11 1879\"; repeat for a batch");
  prompt->excludes(ids);
  files->excludes(ids);
  sub->add_flag("-e,--escape", o->escapes, "Process escapes in the prompt and --system: \\n \\r \\t \\' \\\" \\\\ \\xHH (llama.cpp's -e)");
  // llama.cpp's interactive modes: refused with the command that does it, see the callback.
  sub->add_flag("-i,--interactive,--conversation", o->conversation, "llama.cpp's -i / -cnv: use glass chat for a conversation");
  sub->add_option("--format", o->format, "text (stream), json (one object at the end) or ndjson (one per step)")
      ->capture_default_str();
  sub->add_option("--show-top", o->show_top, "Per step: the N best candidates before and after the processors");
  sub->add_option("-c,--ctx-size", o->ctx_size, "Context length (default: the model's max_position_embeddings)");
  sub->add_flag("--no-special", o->no_special, "Tokenize special tokens in the prompt text as plain text");
  auto* chat = sub->add_flag("--chat", o->chat, "Wrap each prompt as one user message with the checkpoint's chat template");
  sub->add_option("--system", o->system, "With --chat: a system message first")->needs(chat);
  const std::vector<CLI::Option*> template_flags = o->template_options.add_to(sub, true);
  for (CLI::Option* flag : template_flags) flag->needs(chat);
  sub->add_flag("--show-thinking", o->show_thinking,
                "Print the reasoning of models that think (Qwen3's <think> block), dimmed on a terminal");
  chat->excludes(ids);
  o->generation.add_to(sub);
  o->constraint.add_to(sub);
  o->runtime.add_to(sub);
  put_in_group(sub, "Model", {"-m", "--ctx-size", "--chat", "--system"});
  for (CLI::Option* flag : template_flags) flag->group("Model");
  put_in_group(sub, "Prompt", {"-p", "-f", "--ids", "-e", "--no-special", "-i"});
  put_in_group(sub, "Output", {"--format", "--show-top", "--show-thinking"});

  return {sub, [o, sub] {
            if (o->format != "text" && o->format != "json" && o->format != "ndjson")
              fail("--format: \"", o->format, "\" is not one of text, json, ndjson");
            // --show-top's tables are for a person at a terminal; a program reading stdout
            // gets the same per-step information as ndjson, unless it asked for a format.
            if (o->show_top > 0 && sub->count("--format") == 0 && ::isatty(STDOUT_FILENO) == 0) {
              o->format = "ndjson";
              std::fprintf(stderr, "glass: --show-top with stdout not a terminal: one JSON object per step on stdout "
                                   "(--format text for tables on stderr)\n");
            }
            // glass run generates once and exits; a conversation is glass chat's job, which
            // has its own flags (no batch, no --ids, no --format json), so say which command
            // rather than switch to it behind the user's back.
            if (o->conversation)
              fail("-i / -cnv / --interactive: glass run generates once; for a conversation run: glass chat",
                   o->model.empty() ? "" : " -m " + o->model);
            for (const std::string& path : o->prompt_files) {
              std::string text;
              try {
                text = read_text_file(path, kMaxTextFileBytes, "a prompt");
              } catch (const Error& e) {
                fail("-f: ", e.what());
              }
              if (text.ends_with('\n')) text.pop_back();
              o->prompts.push_back(std::move(text));
            }
            if (o->escapes) {
              for (std::string& text : o->prompts) text = process_escapes(text);
              o->system = process_escapes(o->system);
            }
            if (o->prompts.empty() && o->ids.empty()) fail("give a prompt with -p TEXT, -f FILE or --ids \"...\"");
            check_range("--ctx-size", o->ctx_size, 0, kMaxContextOption);
            check_range("--show-top", o->show_top, 0, kMaxShowTop);
            const jinja::OrderedJson template_vars = o->template_options.resolve();
            const std::optional<grammar::Grammar> grammar = o->constraint.resolve();
            const ModelSession session(o->model, o->runtime,
                                       {.tokenizer = Need::kYes, .chat_template = o->chat ? Need::kYes : Need::kNo});
            const std::string& dir = session.path();
            const Tokenizer& tokenizer = session.tokenizer();
            const DecoderModel& model = session.model();
            const ModelConfig& c = model.config();
            SamplingParams params = o->generation.resolve(dir, static_cast<int64_t>(tokenizer.vocab_size()));
            // transformers' generate() makes 20 new tokens when neither the call nor
            // generation_config.json says how many; so does glass run (chat and serve run
            // to the end of the reply).
            const bool default_limit = !params.max_new_tokens.has_value();
            if (default_limit) params.max_new_tokens = kDefaultMaxNewTokens;
            const int64_t context = o->ctx_size > 0 ? o->ctx_size : c.max_position_embeddings;

            std::vector<GenerationRequest> requests;
            EncodeOptions enc;
            enc.parse_special = !o->no_special;
            if (o->chat) {
              const ChatTemplate& tmpl = session.chat_template();
              o->template_options.warn_if_ignored(tmpl, template_vars);
              for (const auto& text : o->prompts)
                requests.push_back({encode_chat(tmpl, tokenizer, single_turn(text, o->system), nullptr, true, template_vars).ids,
                                    params, o->show_top, true});
            } else {
              for (const auto& text : o->prompts) requests.push_back({tokenizer.encode(text, enc), params, o->show_top, true});
            }
            for (const auto& list : o->ids) requests.push_back({parse_token_ids(list, "--ids"), params, o->show_top, true});
            for (GenerationRequest& r : requests) r.grammar = grammar;
            std::vector<int64_t> lengths;
            for (const auto& r : requests)
              lengths.push_back(std::min<int64_t>(
                  context, saturating_add(static_cast<int64_t>(r.prompt.size()), params.max_new_tokens.value_or(context))));
            KVCache cache(c, session.kv_type(), KVCache::capacity_for(lengths));

            // Models that think (their tokenizer has <think> tags) get their reasoning
            // apart from the answer, per sequence (handles are 0, 1, ... in order).
            std::vector<std::optional<ReasoningSplitter>> splitters;
            for (const auto& r : requests) splitters.push_back(reasoning_splitter_for(tokenizer, r.prompt));
            std::vector<ReasoningPieces> replies(requests.size());

            // With --show-top the tables are the stream (each names its token); the text
            // follows whole, on its own line, instead of between them.
            const bool stream = o->format == "text" && requests.size() == 1 && o->show_top == 0;
            ReplyPrinter printer(o->show_thinking);
            std::vector<int64_t> steps(requests.size(), 0);
            // A long prompt gets a progress bar on a terminal until the first token.
            int64_t prompt_total = 0;
            for (const auto& r : requests) prompt_total += static_cast<int64_t>(r.prompt.size());
            ProgressBar prefill_bar("prompt",
                                    progress_wanted(o->runtime.quiet) && prompt_total > Generator::kDefaultPrefillChunk);
            bool first_event = true;
            auto on_event = [&](const GenerationEvent& e) {
              if (first_event) prefill_bar.clear();
              first_event = false;
              const int64_t step = steps[e.handle]++;
              std::optional<ReasoningSplitter>& splitter = splitters[e.handle];
              const ReasoningPieces piece = split_piece(splitter, e.text, e.finish.has_value());
              replies[e.handle].reasoning += piece.reasoning;
              replies[e.handle].content += piece.content;
              const bool reasoning_found = splitter && splitter->found_reasoning();
              if (o->format == "ndjson") {
                OJson j = {{"type", "step"}, {"sequence", e.handle}, {"step", step}, {"token", e.token},
                          {"token_text", std::string(tokenizer.token_bytes(e.token))}, {"text", piece.content}};
                if (reasoning_found) j["reasoning_content"] = piece.reasoning;
                if (o->show_top > 0) {
                  OJson cands = OJson::array();
                  for (const Candidate& cand : e.candidates) cands.push_back(candidate_json(cand, tokenizer));
                  j["top"] = cands;
                  j["chosen"] = candidate_json(e.chosen, tokenizer);
                  j["chosen"]["rank"] = e.chosen_rank;
                  OJson chain = OJson::array();
                  if (e.trace != nullptr)
                    for (const auto& st : e.trace->steps) chain.push_back({{"step", st.setting}, {"surviving", st.surviving}});
                  j["processors"] = chain;
                }
                if (e.finish) j["finish"] = finish_json(*e.finish, tokenizer);
                std::cout << dump(j) << std::endl;
                return;
              }
              if (o->show_top > 0) print_step_table(stderr, step, e, tokenizer);
              if (stream) printer.print(piece, splitter ? &*splitter : nullptr);
            };

            Generator generator(model, session.kernels(), cache, tokenizer, context);
            std::vector<int> handles;
            for (auto& r : requests) handles.push_back(generator.add(std::move(r)));
            prefill_bar.update(0, static_cast<double>(prompt_total), str_cat("0 of ", prompt_total, " tokens"));
            while (!generator.idle()) {
              generator.step(on_event);
              if (first_event) {
                const int64_t done = generator.timings().prompt_tokens;
                prefill_bar.update(static_cast<double>(done), static_cast<double>(prompt_total),
                                   str_cat(done, " of ", prompt_total, " tokens"));
              }
            }
            prefill_bar.clear();
            std::vector<GenerationResult> results;
            for (int h : handles) results.push_back(*generator.take_result(h));
            const GenerationTimings& t = generator.timings();

            for (size_t i = 0; i < results.size(); ++i) {
              const GenerationResult& r = results[i];
              const auto completion = static_cast<int64_t>(r.tokens.size());
              const auto prompt_tokens = static_cast<int64_t>(r.prompt.size());
              const ReasoningSplitter* splitter = splitters[i] ? &*splitters[i] : nullptr;
              const bool reasoning_found = splitter != nullptr && splitter->found_reasoning();
              if (o->format == "text") {
                if (stream) {
                  printer.end(splitter);
                } else {
                  if (results.size() > 1) std::cout << "[" << i << "] ";
                  ReplyPrinter whole(o->show_thinking);
                  whole.print(replies[i], splitter);
                  whole.end(splitter);
                }
                std::cout << "\n";
              } else {
                OJson j = {{"ids", r.tokens}, {"text", replies[i].content}};
                if (reasoning_found) j["reasoning_content"] = replies[i].reasoning;
                j["finish_reason"] = r.finish.name();
                j["finish"] = finish_json(r.finish, tokenizer);
                j["seed"] = r.seed;
                j["usage"] = {{"prompt_tokens", prompt_tokens},
                              {"completion_tokens", completion},
                              {"total_tokens", prompt_tokens + completion}};
                if (reasoning_found)
                  j["usage"]["completion_tokens_details"] = {{"reasoning_tokens", splitter->reasoning_tokens()}};
                if (o->format == "ndjson") j["type"] = "done";
                if (results.size() > 1) j["sequence"] = i;
                std::cout << dump(j) << std::endl;
              }
            }
            std::cout.flush();
            for (size_t i = 0; i < results.size(); ++i)
              std::fprintf(stderr, "glass: %s%s; seed %llu\n", results.size() > 1 ? str_cat("[", i, "] ").c_str() : "",
                           finish_sentence(results[i].finish, tokenizer, params, default_limit, context).c_str(),
                           static_cast<unsigned long long>(results[i].seed));
            int64_t prompt_tokens = 0;
            for (const GenerationResult& r : results) prompt_tokens += static_cast<int64_t>(r.prompt.size());
            std::string prompt_part;
            if (t.prompt_tokens > 0)
              prompt_part = str_cat("prompt ", plural(t.prompt_tokens, "token", "tokens"), " in ",
                                    fixed(t.prompt_seconds, 3), " s (",
                                    fixed(t.prompt_tokens / std::max(1e-9, t.prompt_seconds), 1), " tok/s)");
            else
              prompt_part = str_cat("prompt ", plural(prompt_tokens, "token", "tokens"), ", not run (nothing to generate)");
            // The prompt pass makes each sequence's first token; the rest are decode steps.
            const int64_t decoded = std::max<int64_t>(0, t.generated_tokens - static_cast<int64_t>(results.size()));
            std::string generated_part = str_cat("generated ", plural(t.generated_tokens, "token", "tokens"));
            if (decoded > 0 && t.generation_seconds > 0)
              generated_part += str_cat(", ", decoded, " of them by decoding in ", fixed(t.generation_seconds, 3), " s (",
                                        fixed(decoded / t.generation_seconds, 1), " tok/s)");
            std::fprintf(stderr, "glass: %s; %s; %s\n", prompt_part.c_str(), generated_part.c_str(),
                         session.summary(&cache).c_str());
            return 0;
          }};
}

}  // namespace glass::cli
