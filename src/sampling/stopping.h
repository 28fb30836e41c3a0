// Why and when generation stops: eos tokens, stop strings over the streamed text,
// max_new_tokens, the context length.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sampling/sampling_params.h"

namespace glass {

struct FinishReason {
  enum class Kind {
    eos,          // an eos token was generated (`token`); it is not printed
    stop_string,  // the text produced a stop string (`stop_string`); it is not printed
    length,       // max_new_tokens were generated
    context,      // prompt + generated tokens fill the context length
    grammar,      // the request's grammar allowed no token (a hostile grammar hit the matcher's limits)
  };
  Kind kind = Kind::length;
  int32_t token = -1;       // for eos
  std::string stop_string;  // for stop_string

  static FinishReason eos(int32_t token) { return {Kind::eos, token, {}}; }
  static FinishReason stop(std::string s) { return {Kind::stop_string, -1, std::move(s)}; }
  static FinishReason length() { return {Kind::length, -1, {}}; }
  static FinishReason context() { return {Kind::context, -1, {}}; }
  static FinishReason grammar() { return {Kind::grammar, -1, {}}; }

  // glass's own name: "eos", "stop_string", "length", "context", "grammar".
  std::string_view name() const;
  // OpenAI's finish_reason: "stop" for eos and stop strings, "length" for the others (the
  // output is cut short).
  std::string_view openai_name() const;
  // For people: `eos (token 151645)`, `stop_string "\n\n"`, `length`, `context`.
  std::string describe() const;

  bool operator==(const FinishReason&) const = default;
};

// Finds stop strings in text that arrives piece by piece (one detokenized piece per
// token), also when a stop string spans pieces. What it returns is safe to print: it
// holds back the longest tail that could still become the start of a stop string.
// When several stop strings occur, the one that starts first wins (the shorter on equal
// starts); the text before it is released and it, and anything after, is not.
class StopMatcher {
 public:
  // Empty stop strings are an error.
  explicit StopMatcher(std::vector<std::string> stop_strings);

  struct Result {
    std::string text;                 // print this now
    std::optional<std::string> stop;  // set when a stop string completed
  };
  // After a stop, further pieces are ignored (empty results).
  Result push(std::string_view piece);
  // The held-back text, when generation ends for another reason.
  std::string flush();

  bool stopped() const { return stopped_; }
  size_t held_back() const { return pending_.size(); }

 private:
  std::vector<std::string> stops_;
  std::string pending_;  // not yet printed
  bool stopped_ = false;
};

// All stop conditions for one sequence, checked after each generated token. The order
// is: eos, stop string, max_new_tokens, context length (the first that holds is the
// reason). Text is released through the StopMatcher; when generation ends for a reason
// other than a stop string, the held-back text is released with it.
class StopChecker {
 public:
  // `context_length`: the most tokens the sequence (prompt + output) may hold.
  StopChecker(const SamplingParams& params, int64_t context_length, int64_t prompt_length);

  // Before the first step: length when max_new_tokens is 0, context when the prompt
  // already fills the context.
  std::optional<FinishReason> before_first_token() const;

  struct Step {
    std::string text;  // print this now
    std::optional<FinishReason> finish;
  };
  // One generated token and its detokenized text (ignored for eos tokens).
  Step on_token(int32_t token, std::string_view text);

  int64_t generated() const { return generated_; }

 private:
  std::vector<int32_t> eos_ids_;
  std::optional<int64_t> max_new_tokens_;
  int64_t context_length_;
  int64_t prompt_length_;
  int64_t generated_ = 0;
  StopMatcher matcher_;
  bool finished_ = false;
};

}  // namespace glass
