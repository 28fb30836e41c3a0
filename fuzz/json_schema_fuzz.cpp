// JSON Schemas (response_format json_schema, glass run -j): converted to GBNF as the
// server converts them; a schema that converts must give a grammar that compiles (the
// converter refuses what it cannot express, it never writes a broken grammar), and the
// grammar must accept nothing that is not JSON.
#include <string>

#include "base/json_fields.h"
#include "fuzz_support.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace glass;
  const std::string_view text = fuzz::as_text(data, size);
  fuzz::run_one([&] {
    const std::string gbnf = grammar::json_schema_to_gbnf(text);
    grammar::Grammar g = [&] {
      try {
        return grammar::Grammar::from_gbnf(gbnf);
      } catch (const Error& e) {
        fuzz::finding(str_cat("the schema's GBNF does not compile: ", e.what(), "\n", gbnf));
      }
    }();
    // Complete outputs of the first bytes-long candidates must parse as JSON.
    grammar::GrammarMatcher m(g);
    for (const char* candidate : {"{}", "[]", "null", "true", "0", "\"\"", "{\"a\": 1}", "[1, 2]", "\"x\"", "1.5"}) {
      grammar::GrammarMatcher probe = m.fork();
      if (probe.accept_bytes(candidate) && probe.can_end()) {
        try {
          (void)parse_json(candidate, "candidate");
        } catch (const Error& e) {
          fuzz::finding(str_cat("the grammar accepts non-JSON ", candidate));
        }
      }
    }
  });
  return 0;
}
