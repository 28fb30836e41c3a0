// Flags shared by the commands that generate (`glass run`, `glass chat`, `glass serve`):
// sampling and stopping, which override the checkpoint's generation_config.json field by
// field, and the chat template's variables; and how a reply that reasons is printed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "chat/chat_template.h"
#include "runtime/reasoning.h"
#include "sampling/sampling_params.h"

namespace glass::cli {

// glass run's limit on new tokens when neither -n nor generation_config.json sets one:
// transformers' default (its max_length of 20, counted past the prompt).
inline constexpr int64_t kDefaultMaxNewTokens = 20;

// One --logit-bias value, llama.cpp's syntax: a token id, then the bias with its sign
// ("15043+1", "15043-100", "15043+0.5"). Errors name the flag.
TokenBias parse_logit_bias_flag(std::string_view text);

struct GenerationOptions {
  SamplingOverrides overrides;
  bool greedy = false;
  bool sample = false;
  bool ignore_eos = false;
  std::string chain_order;
  std::string seed;  // --seed as given: -1 (random, llama.cpp's spelling) or 0 .. 2^64-1
  std::vector<std::string> logit_bias;  // --logit-bias as given: TOKEN_ID+BIAS or TOKEN_ID-BIAS

  void add_to(CLI::App* sub);
  // The model's generation defaults (load_generation_defaults: a folder's
  // generation_config.json, a GGUF's general.sampling.*; a note about them on stderr), then
  // the flags. Errors name the flag or file; --logit-bias ids must be below `vocab` (the
  // tokenizer's).
  SamplingParams resolve(const std::string& model_path, int64_t vocab) const;
};

// --chat-template-kwargs JSON (run, chat, serve) and --no-think (run, chat): extra
// variables for the chat template, as apply_chat_template's keyword arguments.
struct ChatTemplateOptions {
  std::string kwargs_json;
  bool no_think = false;

  // Adds the flags (--no-think when `with_no_think`); returns them, for needs().
  std::vector<CLI::Option*> add_to(CLI::App* sub, bool with_no_think);
  // The variables: the --chat-template-kwargs object, with enable_thinking false for
  // --no-think. Errors name the flag.
  jinja::OrderedJson resolve() const;
  // Says on stderr when --no-think cannot work: the template renders the same without
  // enable_thinking (Qwen2.5's does not read it).
  void warn_if_ignored(const ChatTemplate& chat_template, const jinja::OrderedJson& vars) const;
};

// A reply on stdout as it streams: the answer as it comes; the reasoning only with
// --show-thinking, dimmed (ANSI faint) when stdout is a terminal and followed by a blank
// line before the answer. Without --show-thinking a terminal gets a dim note on stderr
// of how long the model thought.
class ReplyPrinter {
 public:
  explicit ReplyPrinter(bool show_thinking);
  // What `splitter` released for one step (null: a reply without a splitter, all answer).
  void print(const ReasoningPieces& pieces, const ReasoningSplitter* splitter);
  // After the reply's last pieces.
  void end(const ReasoningSplitter* splitter);

 private:
  void note(const ReasoningSplitter& splitter);

  bool show_thinking_;
  bool dim_stdout_;
  bool note_on_stderr_;
  bool shown_reasoning_ = false;
  bool shown_content_ = false;
  bool noted_ = false;
};

}  // namespace glass::cli
