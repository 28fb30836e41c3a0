// glass: the command-line front end. Subcommands live in cmd_*.cpp.
#include <iostream>
#include <vector>

#include "base/error.h"
#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"glass: a Qwen2.5 inference engine that shows its work"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every subcommand");

  const std::vector<glass::cli::Command> commands = {
      glass::cli::add_logits_command(app),
      glass::cli::add_inspect_command(app),
      glass::cli::add_random_model_command(app),
      glass::cli::add_run_command(app),
      glass::cli::add_chat_command(app),
      glass::cli::add_bench_command(app),
      glass::cli::add_tokenize_command(app),
      glass::cli::add_detokenize_command(app),
      glass::cli::add_bench_tokenizer_command(app),
      glass::cli::add_chat_template_command(app),
      glass::cli::add_trace_command(app),
      glass::cli::add_compare_command(app),
      glass::cli::add_serve_command(app),
      glass::cli::add_convert_command(app),
  };

  try {
    app.parse(argc, argv);
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
