// JSON Schemas (response_format json_schema, tool parameters): converted to a grammar, or
// refused with a GrammarError; a grammar that compiles must accept its own GBNF's
// language consistently (the GBNF text compiles again) and never crash a matcher.
#include <string>

#include "fuzz_support.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"

using namespace glass;
using namespace glass::grammar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(fuzz::as_text(data, size));
  fuzz::run_one([&] {
    const std::string gbnf = json_schema_to_gbnf(std::string_view(text));
    Grammar g = Grammar::from_gbnf(gbnf);
    GrammarMatcher m(g);
    GLASS_FUZZ_CHECK(!m.is_dead(), "a schema grammar starts dead:\n", gbnf);
    (void)m.accept_bytes("{\"a\": [1, \"x\"], \"b\": null}");
  });
  return 0;
}
