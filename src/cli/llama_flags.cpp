#include "cli/llama_flags.h"

#include <algorithm>
#include <utility>

namespace glass::cli {

namespace {

// llama.cpp's name, glass's name.
constexpr std::pair<std::string_view, std::string_view> kRespelled[] = {
    {"-ngl", "--n-gpu-layers"},
    {"-cnv", "--conversation"},
};

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::vector<std::string> respell_llama_cpp_flags(int argc, const char* const* argv) {
  std::vector<std::string> args;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    for (const auto& [llama, glass] : kRespelled)
      if (i > 0 && arg == llama) arg = glass;
    args.push_back(std::move(arg));
  }
  return args;
}

std::string as_typed(const std::string& name, const std::vector<std::string>& typed_args) {
  for (const auto& [llama, glass] : kRespelled)
    if (name == glass && std::find(typed_args.begin(), typed_args.end(), llama) != typed_args.end() &&
        std::find(typed_args.begin(), typed_args.end(), glass) == typed_args.end())
      return std::string(llama);
  return name;
}

std::string process_escapes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\' || i + 1 == text.size()) {
      out += text[i];
      continue;
    }
    const char next = text[i + 1];
    char replaced = 0;
    switch (next) {
      case 'n': replaced = '\n'; break;
      case 'r': replaced = '\r'; break;
      case 't': replaced = '\t'; break;
      case '\'': replaced = '\''; break;
      case '"': replaced = '"'; break;
      case '\\': replaced = '\\'; break;
      case 'x':
        if (i + 3 < text.size() && hex_digit(text[i + 2]) >= 0 && hex_digit(text[i + 3]) >= 0) {
          out += static_cast<char>(hex_digit(text[i + 2]) * 16 + hex_digit(text[i + 3]));
          i += 3;
          continue;
        }
        break;
      default: break;
    }
    if (replaced != 0) {
      out += replaced;
      ++i;
    } else {
      out += '\\';  // not an escape: kept, and the next character read as usual
    }
  }
  return out;
}

}  // namespace glass::cli
