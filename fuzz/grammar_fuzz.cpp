// GBNF grammars (llama.cpp's `grammar` request field, glass run --grammar): compiled as
// the server compiles them; a grammar that compiles is then run by a matcher over a small
// vocabulary, choosing tokens from its mask, where the matcher's promises must hold: a
// token the mask allows is accepted, one it refuses is not, an end token only when the
// output is complete.
#include <memory>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "grammar/grammar.h"
#include "grammar/matcher.h"

namespace {

using namespace glass;

// Every single byte, a few multi-byte pieces (words, JSON, a split UTF-8 character), an
// end token (id 0 stands for eos) and a special token that is never allowed.
std::shared_ptr<const grammar::TokenVocabulary> fuzz_vocabulary() {
  std::vector<std::string> tokens = {"<eos>", "<special>"};
  for (int b = 1; b < 256; ++b) tokens.emplace_back(1, static_cast<char>(b));
  for (const char* piece : {"\": ", "{\"", "true", "null", "  ", "\n", "ab", "abc", "\xc3", "\xa9", "\xc3\xa9", "[0", "yes"})
    tokens.emplace_back(piece);
  return std::make_shared<const grammar::TokenVocabulary>(std::move(tokens), std::vector<int32_t>{0},
                                                          std::vector<int32_t>{0, 1});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::shared_ptr<const grammar::TokenVocabulary> vocab = fuzz_vocabulary();
  const std::string_view text = fuzz::as_text(data, size);
  fuzz::run_one([&] {
    const grammar::Grammar g = grammar::Grammar::from_gbnf(text);
    grammar::GrammarMatcher m(g, vocab);
    grammar::TokenMask mask;
    // The input's bytes choose among the allowed tokens, step after step.
    for (size_t step = 0; step < 64 && !m.is_dead(); ++step) {
      m.fill_mask(mask);
      const size_t allowed = mask.count();
      GLASS_FUZZ_CHECK(allowed > 0 || m.can_end(), "a live matcher that cannot end allows no token at step ", step);
      GLASS_FUZZ_CHECK(mask.allowed(0) == m.can_end(), "the end token is allowed exactly when the output can end");
      GLASS_FUZZ_CHECK(!mask.allowed(1), "a special token is allowed");
      if (allowed == 0) break;
      size_t pick = step < size ? data[step] % allowed : 0;
      int32_t chosen = -1;
      for (int32_t id = 0; id < static_cast<int32_t>(vocab->size()); ++id)
        if (mask.allowed(id) && pick-- == 0) {
          chosen = id;
          break;
        }
      // A refused token leaves the matcher as it was.
      for (int32_t id = 2; id < static_cast<int32_t>(vocab->size()); ++id)
        if (!mask.allowed(id)) {
          const uint32_t before = m.state_id();
          GLASS_FUZZ_CHECK(!m.accept_token(id), "token ", id, " refused by the mask was accepted");
          GLASS_FUZZ_CHECK(m.state_id() == before, "a refused token changed the matcher");
          break;
        }
      GLASS_FUZZ_CHECK(m.accept_token(chosen), "token ", chosen, " allowed by the mask was refused");
      if (chosen == 0) GLASS_FUZZ_CHECK(m.is_terminated(), "the end token did not terminate the matcher");
    }
  });
  return 0;
}
