#include "sampling/stopping.h"

#include <algorithm>

#include "base/error.h"

namespace glass {

std::string_view FinishReason::name() const {
  switch (kind) {
    case Kind::eos: return "eos";
    case Kind::stop_string: return "stop_string";
    case Kind::length: return "length";
    case Kind::context: return "context";
    case Kind::grammar: return "grammar";
  }
  return "?";
}

std::string_view FinishReason::openai_name() const {
  return kind == Kind::eos || kind == Kind::stop_string ? "stop" : "length";
}

namespace {

// JSON-style quoting, so that newlines and control characters are visible.
std::string json_quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          static const char* hex = "0123456789abcdef";
          out += "\\u00";
          out += hex[(c >> 4) & 0xf];
          out += hex[c & 0xf];
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace

std::string FinishReason::describe() const {
  switch (kind) {
    case Kind::eos: return str_cat("eos (token ", token, ")");
    case Kind::stop_string: return "stop_string " + json_quoted(stop_string);
    default: return std::string(name());
  }
}

StopMatcher::StopMatcher(std::vector<std::string> stop_strings) : stops_(std::move(stop_strings)) {
  for (const std::string& s : stops_)
    if (s.empty()) fail("stop strings must not be empty");
}

StopMatcher::Result StopMatcher::push(std::string_view piece) {
  Result result;
  if (stopped_) return result;
  pending_ += piece;
  // Any stop string that could complete starts inside pending_ (everything before it
  // was released because no stop string could start there), so searching pending_ is enough.
  size_t best_pos = std::string::npos;
  const std::string* best = nullptr;
  for (const std::string& s : stops_) {
    const size_t pos = pending_.find(s);
    if (pos == std::string::npos) continue;
    if (pos < best_pos || (pos == best_pos && s.size() < best->size())) {
      best_pos = pos;
      best = &s;
    }
  }
  if (best != nullptr) {
    result.text = pending_.substr(0, best_pos);
    result.stop = *best;
    pending_.clear();
    stopped_ = true;
    return result;
  }
  // Hold back the longest tail of pending_ that is a proper prefix of a stop string.
  size_t hold = 0;
  for (const std::string& s : stops_) {
    for (size_t len = std::min(s.size() - 1, pending_.size()); len > hold; --len) {
      if (pending_.compare(pending_.size() - len, len, s, 0, len) == 0) {
        hold = len;
        break;
      }
    }
  }
  result.text = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return result;
}

std::string StopMatcher::flush() {
  std::string out;
  out.swap(pending_);
  return out;
}

StopChecker::StopChecker(const SamplingParams& params, int64_t context_length, int64_t prompt_length)
    : eos_ids_(params.eos_token_ids),
      max_new_tokens_(params.max_new_tokens),
      context_length_(context_length),
      prompt_length_(prompt_length),
      matcher_(params.stop_strings) {
  if (context_length <= 0) fail("StopChecker: context length must be > 0, got ", context_length);
  if (prompt_length < 0) fail("StopChecker: prompt length must be >= 0, got ", prompt_length);
}

std::optional<FinishReason> StopChecker::before_first_token() const {
  if (max_new_tokens_ && *max_new_tokens_ == 0) return FinishReason::length();
  if (prompt_length_ >= context_length_) return FinishReason::context();
  return std::nullopt;
}

StopChecker::Step StopChecker::on_token(int32_t token, std::string_view text) {
  Step step;
  if (finished_) fail("StopChecker: on_token after generation finished");
  ++generated_;
  if (std::find(eos_ids_.begin(), eos_ids_.end(), token) != eos_ids_.end()) {
    step.text = matcher_.flush();
    step.finish = FinishReason::eos(token);
  } else {
    StopMatcher::Result r = matcher_.push(text);
    step.text = std::move(r.text);
    if (r.stop) {
      step.finish = FinishReason::stop(std::move(*r.stop));
    } else if (max_new_tokens_ && generated_ >= *max_new_tokens_) {
      step.finish = FinishReason::length();
    } else if (prompt_length_ + generated_ >= context_length_) {
      step.finish = FinishReason::context();
    }
    if (step.finish && step.finish->kind != FinishReason::Kind::stop_string) step.text += matcher_.flush();
  }
  finished_ = step.finish.has_value();
  return step;
}

}  // namespace glass
