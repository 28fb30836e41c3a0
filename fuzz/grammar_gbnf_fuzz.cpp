// GBNF grammars (the server's `grammar` field, `glass run --grammar`): the input up to the
// first NUL byte is the grammar, the rest a text to match. Compiling either succeeds or
// throws GrammarError; a compiled grammar is then run on the text byte by byte and in one
// piece (the verdicts must agree), and its token mask over a small vocabulary must equal
// trying each token on a copy of the matcher.
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "grammar/grammar.h"
#include "grammar/matcher.h"

using namespace glass;
using namespace glass::grammar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = fuzz::as_text(data, size);
  const size_t nul = input.find('\0');
  const std::string_view text = input.substr(0, nul);
  const std::string_view sample = nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);
  fuzz::run_one([&] {
    GrammarLimits limits;
    limits.max_elements = size_t{1} << 16;  // keep each input fast
    limits.max_repetition = 1000;
    Grammar g = Grammar::from_gbnf(text, limits);
    GrammarMatcher whole(g);
    const bool whole_ok = whole.accept_bytes(sample);
    GrammarMatcher bytewise(g);
    size_t good = 0;
    while (good < sample.size() && bytewise.accept_bytes(sample.substr(good, 1))) ++good;
    GLASS_FUZZ_CHECK(whole_ok == (good == sample.size()), "whole ", whole_ok, " bytewise ", good, "/", sample.size());
    if (whole_ok) GLASS_FUZZ_CHECK(whole.can_end() == bytewise.can_end(), "");
    // The mask over pieces of the sample (and single bytes) against brute force.
    std::vector<std::string> tokens;
    for (int b = 0; b < 256; b += 7) tokens.push_back(std::string(1, static_cast<char>(b)));
    for (size_t i = 0; i + 1 < sample.size() && tokens.size() < 200; i += 2)
      tokens.push_back(std::string(sample.substr(i, 1 + (i % 5))));
    tokens.push_back("<end>");
    auto vocab = std::make_shared<const TokenVocabulary>(tokens, std::vector<int32_t>{static_cast<int32_t>(tokens.size() - 1)});
    GrammarMatcher m(g, vocab);
    (void)m.accept_bytes(sample.substr(0, good / 2));
    const TokenMask mask = m.mask();
    for (size_t id = 0; id < tokens.size(); ++id) {
      GrammarMatcher copy = m;
      const bool ok = copy.accept_token(static_cast<int32_t>(id));
      GLASS_FUZZ_CHECK(ok == mask.allowed(static_cast<int32_t>(id)), "token ", id);
    }
  });
  return 0;
}
