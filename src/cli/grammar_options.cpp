#include "cli/grammar_options.h"

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/help_groups.h"
#include "grammar/json_schema.h"

namespace glass::cli {

namespace {

// Grammar and schema files are text of human size.
constexpr size_t kMaxGrammarFileBytes = size_t{4} << 20;

std::string read_flag_file(const char* flag, const std::string& path, const char* what) {
  try {
    return read_text_file(path, kMaxGrammarFileBytes, what);
  } catch (const Error& e) {
    fail(flag, ": ", e.what());
  }
}

}  // namespace

void GrammarOptions::add_to(CLI::App* sub) {
  const size_t first = sub->get_options().size();
  auto* text = sub->add_option("--grammar", grammar,
                               "Constrain the output to a GBNF grammar (llama.cpp's format): its text, or a file holding "
                               "it (text has a \"::=\"; anything else names a file)");
  auto* file = sub->add_option("--grammar-file", grammar_file, "Constrain the output to the GBNF grammar in this file");
  auto* schema = sub->add_option("-j,--json-schema", json_schema,
                                 "Constrain the output to JSON valid against this JSON Schema (OpenAI's structured-outputs "
                                 "subset): its text, or a file holding it (text starts with '{')");
  text->excludes(file)->excludes(schema);
  file->excludes(schema);
  put_added_since(sub, first, "Constraints");
}

std::optional<grammar::Grammar> GrammarOptions::resolve() const {
  try {
    if (!grammar.empty()) {
      if (grammar.find("::=") != std::string::npos) return grammar::Grammar::from_gbnf(grammar);
      return grammar::Grammar::from_gbnf(read_flag_file("--grammar", grammar, "a grammar"));
    }
    if (!grammar_file.empty()) return grammar::Grammar::from_gbnf(read_flag_file("--grammar-file", grammar_file, "a grammar"));
    if (!json_schema.empty()) {
      const size_t start = json_schema.find_first_not_of(" \t\r\n");
      if (start != std::string::npos && json_schema[start] == '{')
        return grammar::json_schema_grammar(std::string_view(json_schema));
      return grammar::json_schema_grammar(std::string_view(read_flag_file("--json-schema", json_schema, "a JSON schema")));
    }
  } catch (const grammar::GrammarError& e) {
    const char* flag = !grammar.empty() ? "--grammar" : !grammar_file.empty() ? "--grammar-file" : "--json-schema";
    const std::string& source = !grammar.empty() ? grammar : !grammar_file.empty() ? grammar_file : json_schema;
    const bool inline_text = source.find("::=") != std::string::npos || source.find('{') == 0;
    fail(flag, inline_text ? "" : str_cat(" ", source), ": ", e.what());
  }
  return std::nullopt;
}

}  // namespace glass::cli
