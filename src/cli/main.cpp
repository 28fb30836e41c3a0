// glass: the command-line front end. Subcommands live in cmd_*.cpp.
#include <algorithm>
#include <iostream>
#include <vector>

#include "base/error.h"
#include "cli/commands.h"
#include "cli/llama_flags.h"
#include "cli/suggest.h"

namespace {

using glass::cli::Command;

// Help lists the commands in these groups, most used first.
void group_commands(const std::vector<Command>& commands) {
  const std::pair<const char*, std::vector<std::string>> groups[] = {
      {"Generate", {"run", "chat", "serve"}},
      {"Look inside", {"trace", "inspect", "logits", "compare"}},
      {"Tokens and templates", {"tokenize", "detokenize", "chat-template"}},
      {"Models and speed", {"bench", "bench-tokenizer", "convert", "random-model"}},
  };
  for (const Command& c : commands)
    for (const auto& [group, names] : groups)
      if (std::find(names.begin(), names.end(), c.subcommand->get_name()) != names.end()) c.subcommand->group(group);
}

std::vector<std::string> command_names(const std::vector<Command>& commands) {
  std::vector<std::string> names;
  for (const Command& c : commands) names.push_back(c.subcommand->get_name());
  return names;
}

// An unknown option of the chosen subcommand: its name (as typed: -ngl, not the
// --n-gpu-layers it was respelled to) and the closest known one. CLI11 would list every
// leftover argument, values before flags.
bool explain_unknown_option(const std::vector<Command>& commands, const std::vector<std::string>& typed_args) {
  for (const Command& c : commands) {
    if (!c.subcommand->parsed()) continue;
    for (const std::string& arg : c.subcommand->remaining()) {
      if (arg.size() < 2 || arg[0] != '-') continue;
      const std::string name = glass::cli::as_typed(arg.substr(0, arg.find('=')), typed_args);
      std::vector<std::string> known;
      for (const CLI::Option* opt : c.subcommand->get_options()) {
        for (const std::string& s : opt->get_snames()) known.push_back("-" + s);
        for (const std::string& l : opt->get_lnames()) known.push_back("--" + l);
      }
      std::cerr << "glass " << c.subcommand->get_name() << ": unknown option '" << name << "'";
      if (auto guess = glass::cli::closest_name(name, known)) std::cerr << "; did you mean '" << *guess << "'?";
      std::cerr << "\nRun 'glass " << c.subcommand->get_name() << " --help' for its options.\n";
      return true;
    }
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"glass: a Qwen2.5 / Qwen3 inference engine that shows its work", "glass"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every subcommand");
  app.set_version_flag("--version", "glass " GLASS_VERSION);
  app.footer("Run 'glass COMMAND --help' for the options of one command.");

  const std::vector<Command> commands = {
      glass::cli::add_run_command(app),
      glass::cli::add_chat_command(app),
      glass::cli::add_serve_command(app),
      glass::cli::add_trace_command(app),
      glass::cli::add_inspect_command(app),
      glass::cli::add_logits_command(app),
      glass::cli::add_compare_command(app),
      glass::cli::add_tokenize_command(app),
      glass::cli::add_detokenize_command(app),
      glass::cli::add_chat_template_command(app),
      glass::cli::add_bench_command(app),
      glass::cli::add_bench_tokenizer_command(app),
      glass::cli::add_convert_command(app),
      glass::cli::add_random_model_command(app),
  };
  group_commands(commands);

  // Bare `glass`: what it can do, as `git` does. A word that is not a command: the closest.
  if (argc == 1) {
    std::cout << app.help();
    return 1;
  }
  const std::string first = argv[1];
  const std::vector<std::string> names = command_names(commands);
  if (!first.starts_with("-") && std::find(names.begin(), names.end(), first) == names.end()) {
    std::cerr << "glass: '" << first << "' is not a glass command";
    if (auto guess = glass::cli::closest_name(first, names)) std::cerr << "; did you mean 'glass " << *guess << "'?";
    std::cerr << "\nCommands:";
    for (const std::string& n : names) std::cerr << " " << n;
    std::cerr << "\nRun 'glass --help' for what each does.\n";
    return 2;
  }

  // llama.cpp's -ngl and -cnv, which CLI11 cannot name, in glass's spelling.
  const std::vector<std::string> typed_args(argv, argv + argc);
  std::vector<std::string> args = glass::cli::respell_llama_cpp_flags(argc, argv);
  std::vector<char*> arg_pointers;
  for (std::string& a : args) arg_pointers.push_back(a.data());
  try {
    app.parse(static_cast<int>(arg_pointers.size()), arg_pointers.data());
  } catch (const CLI::ExtrasError& e) {
    if (explain_unknown_option(commands, typed_args)) return e.get_exit_code();
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (const auto& command : commands)
      if (command.subcommand->parsed()) return command.run();
  } catch (const glass::Error& e) {
    std::cerr << "glass: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "glass: internal error: " << e.what() << "\n";
    return 2;
  }
  return 1;
}
