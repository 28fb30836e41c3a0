#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "base/error.h"
#include "tokenizer/utf8.h"

namespace glass {

struct Regex::Compiled {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Compiled() { pcre2_code_free(code); }
};

namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof buf);
  return reinterpret_cast<const char*>(buf);
}

struct MatchState {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* stack = nullptr;
  ~MatchState() {
    pcre2_match_data_free(data);
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(stack);
  }
};

}  // namespace

Regex::Regex(const std::string& pattern, const std::string& source, bool literal)
    : pattern_(pattern), source_(source), literal_(literal) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  const uint32_t options = PCRE2_UTF | PCRE2_NO_UTF_CHECK | (literal ? PCRE2_LITERAL : PCRE2_UCP);
  if (!utf8::is_valid(pattern)) fail(source, ": the pattern is not valid UTF-8");
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &error,
                                   &offset, nullptr);
  if (code == nullptr)
    fail(source, ": the pattern does not compile (at offset ", offset, "): ", pcre2_message(error), ": ", pattern);
  auto compiled = std::make_shared<Compiled>();
  compiled->code = code;
  compiled->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  compiled_ = std::move(compiled);
}

namespace {

// PCRE2's \s matches U+180E MONGOLIAN VOWEL SEPARATOR; Oniguruma's (Unicode
// White_Space, what Hugging Face uses) does not. Matching on a copy with each U+180E
// replaced by U+2060 WORD JOINER, which has the same length and classes (Cf, no space,
// no letter), gives Oniguruma's matches at the same offsets.
constexpr std::string_view kU180E = "\xE1\xA0\x8E";
constexpr std::string_view kU2060 = "\xE2\x81\xA0";

}  // namespace

void Regex::find_all(std::string_view text, std::vector<MatchSpan>& out) const {
  std::string substituted;
  if (!literal_ && text.find(kU180E) != std::string_view::npos) {
    substituted.assign(text);
    for (size_t i = substituted.find(kU180E); i != std::string::npos; i = substituted.find(kU180E, i + 3))
      substituted.replace(i, 3, kU2060);
    text = substituted;
  }
  MatchState state;
  state.data = pcre2_match_data_create_from_pattern(compiled_->code, nullptr);
  if (state.data == nullptr) throw std::bad_alloc();
  if (compiled_->jit) {
    // The default JIT stack (32 KiB) is too small for long runs of one class; this one
    // grows on demand.
    state.context = pcre2_match_context_create(nullptr);
    state.stack = pcre2_jit_stack_create(32 * 1024, 64 * 1024 * 1024, nullptr);
    if (state.context == nullptr || state.stack == nullptr) throw std::bad_alloc();
    pcre2_jit_stack_assign(state.context, nullptr, state.stack);
  }
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  size_t last_end = SIZE_MAX;
  while (start <= text.size()) {
    const int rc = pcre2_match(compiled_->code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, state.data,
                               state.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) fail(source_, ": matching the pattern failed: ", pcre2_message(rc));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.data);
    const size_t b = ovector[0], e = ovector[1];
    if (b == e) {
      const size_t step = b < text.size() ? utf8::length_from_lead(static_cast<unsigned char>(text[b])) : 1;
      if (e == last_end) {
        start = b + step;
        continue;
      }
      out.push_back({b, e});
      last_end = e;
      start = b + step;
      continue;
    }
    out.push_back({b, e});
    last_end = e;
    start = e;
  }
}

}  // namespace glass
