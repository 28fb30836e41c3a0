// llama.cpp's spellings of glass's flags. Most are plain aliases (CLI11 names); the ones
// CLI11 cannot name (several letters after one dash: -ngl, -cnv) are respelled before
// parsing, and -e's escapes are processed here.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace glass::cli {

// argv with llama.cpp's multi-letter single-dash flags in glass's spelling ("-ngl" ->
// "--n-gpu-layers", "-cnv" -> "--conversation"); everything else as given.
std::vector<std::string> respell_llama_cpp_flags(int argc, const char* const* argv);

// The llama.cpp spelling `name` was respelled from ("--n-gpu-layers" -> "-ngl"), for
// messages about what the user typed; `name` itself when it was not respelled.
std::string as_typed(const std::string& name, const std::vector<std::string>& typed_args);

// llama.cpp's -e: \n \r \t \' \" \\ and \xHH become the characters they name; any other
// backslash stays as it is.
std::string process_escapes(std::string_view text);

}  // namespace glass::cli
