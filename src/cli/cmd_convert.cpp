// glass convert: a checkpoint folder (or a GGUF file) into a GGUF file of a llama-quantize type.
#include <chrono>
#include <cstdio>
#include <map>

#include "base/error.h"
#include "cli/commands.h"
#include "cli/model_source.h"
#include "cli/progress.h"
#include "convert/gguf_convert.h"
#include "convert/quant_preset.h"

namespace glass::cli {

Command add_convert_command(CLI::App& app) {
  struct Options {
    std::string model, out, type = "Q8_0";
    bool pure = false, quiet = false;
    int threads = 0;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("convert", "Write a checkpoint folder (or a GGUF file) as a GGUF file llama.cpp runs");
  sub->add_option("-m,--model", o->model, "Checkpoint folder, or a GGUF file to requantize")->required();
  sub->add_option("--out", o->out, "The GGUF file to write (written whole or not at all)")->required();
  sub->add_option("--type", o->type, "File type, as llama-quantize names it: " + quant_preset_names() + " (Q4_K is Q4_K_M)")
      ->capture_default_str();
  sub->add_flag("--pure", o->pure, "Every quantizable tensor in the type's base type, without llama-quantize's mix");
  sub->add_option("-t,--threads", o->threads, "Threads (default: every CPU)");
  sub->add_flag("-q,--quiet", o->quiet, "No progress bar (it is drawn only when stderr is a terminal)");

  return {sub, [o] {
            o->model = local_model_path(o->model, "");
            ConvertOptions options;
            options.type = o->type;
            options.pure = o->pure;
            options.threads = o->threads;
            ProgressBar bar("converting", progress_wanted(o->quiet));
            if (bar.enabled())
              options.progress = [&bar](const ConvertProgress& p) {
                bar.update(static_cast<double>(p.tensor), static_cast<double>(p.tensors),
                           str_cat(p.tensor + 1, "/", p.tensors, " ", p.name, " -> ", weight_type_name(p.type)));
              };
            const auto start = std::chrono::steady_clock::now();
            const ConvertReport r = convert_to_gguf(o->model, o->out, options);
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            bar.clear();
            std::map<std::string, std::pair<int, size_t>> by_type;
            int fell_back = 0;
            for (const ConvertedTensor& t : r.tensors) {
              auto& e = by_type[weight_type_name(t.type)];
              ++e.first;
              e.second += t.bytes;
              fell_back += t.fell_back;
            }
            std::fprintf(stderr, "glass convert: %s: %zu tensors, %.1f MiB, %.2f bits per weight, in %.1f s\n", o->out.c_str(),
                         r.tensors.size(), static_cast<double>(r.bytes) / (1 << 20),
                         r.values > 0 ? 8.0 * static_cast<double>(r.bytes) / static_cast<double>(r.values) : 0.0, s);
            for (const auto& [type, e] : by_type)
              std::fprintf(stderr, "  %-5s %4d tensors  %10.1f MiB\n", type.c_str(), e.first,
                           static_cast<double>(e.second) / (1 << 20));
            if (fell_back > 0)
              std::fprintf(stderr, "  %d tensors have rows that are not whole blocks of the chosen type and fell back "
                           "(as llama-quantize does)\n", fell_back);
            return 0;
          }};
}

}  // namespace glass::cli
