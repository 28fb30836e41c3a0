// Each subcommand registers its options on the app and returns the function that runs it.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace glass::cli {

struct Command {
  CLI::App* subcommand;
  std::function<int()> run;  // called after parsing when this subcommand was chosen
};

Command add_logits_command(CLI::App& app);
Command add_inspect_command(CLI::App& app);
Command add_random_model_command(CLI::App& app);
Command add_bench_command(CLI::App& app);
Command add_run_command(CLI::App& app);
Command add_chat_command(CLI::App& app);
Command add_tokenize_command(CLI::App& app);
Command add_detokenize_command(CLI::App& app);
Command add_bench_tokenizer_command(CLI::App& app);
Command add_chat_template_command(CLI::App& app);
Command add_trace_command(CLI::App& app);
Command add_compare_command(CLI::App& app);
Command add_serve_command(CLI::App& app);
Command add_convert_command(CLI::App& app);

}  // namespace glass::cli
