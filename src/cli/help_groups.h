// Headings in a command's --help, as llama.cpp's help groups its options (model,
// sampling, output, performance), so a long list reads by purpose.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>

#include <CLI/CLI.hpp>

namespace glass::cli {

// The options of `sub` named (by any of their names, "--top-k" or "-m") go under `group`.
inline void put_in_group(CLI::App* sub, const std::string& group, std::initializer_list<const char*> names) {
  for (const char* name : names) sub->get_option(name)->group(group);
}

// Every option added to `sub` since it had `first` options goes under `group`.
inline void put_added_since(CLI::App* sub, size_t first, const std::string& group) {
  const auto options = sub->get_options();
  for (size_t i = first; i < options.size(); ++i) options[i]->group(group);
}

}  // namespace glass::cli
