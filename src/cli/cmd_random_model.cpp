// glass random-model: a random-weight checkpoint at a real Qwen2.5 / Qwen3 / Qwen3-MoE shape.
#include <iostream>
#include <memory>

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/commands.h"
#include "cli/model_source.h"
#include "io/checkpoint.h"
#include "model/random_checkpoint.h"

namespace glass::cli {

Command add_random_model_command(CLI::App& app) {
  struct Options {
    std::string like, dtype = "bf16", out, tokenizer;
    uint64_t seed = 0;
    int32_t end_token = -1;
    int64_t layers = 0;
    float end_token_gain = 0.6f;
    bool no_tokenizer = false, quiet = false;
  };
  auto o = std::make_shared<Options>();
  std::string shapes;
  for (const auto& n : model_preset_names()) shapes += (shapes.empty() ? "" : ", ") + n;
  CLI::App* sub = app.add_subcommand("random-model", "Write a random-weight checkpoint at a real Qwen2.5 / Qwen3 shape");
  sub->add_option("--like", o->like, "Shape: " + shapes)->required();
  sub->add_option("--dtype", o->dtype, "bf16, f16 or f32")->capture_default_str();
  sub->add_option("--layers", o->layers,
                  "Keep only the first N layers of the shape (every other size stays real), to fit a big model "
                  "such as qwen3-30b-a3b on a small machine");
  sub->add_option("--out", o->out, "Output folder")->required();
  sub->add_option("--seed", o->seed, "Seed; the same seed gives the same bytes")->capture_default_str();
  sub->add_option("--tokenizer", o->tokenizer, "Folder whose tokenizer files to copy (default: the built-in Qwen2.5 tokenizer)");
  sub->add_option("--end-token", o->end_token,
                  "Shape the embedding so this token (e.g. 151645, <|im_end|>) is always among the likeliest: "
                  "sampled generations then end (the demo model uses it)");
  sub->add_option("--end-token-gain", o->end_token_gain, "How strongly --end-token is favoured")->capture_default_str();
  sub->add_flag("--no-tokenizer", o->no_tokenizer, "Write weights and configs only");
  sub->add_flag("--quiet", o->quiet, "No summary");

  return {sub, [o] {
            RandomCheckpointOptions opts;
            opts.seed = o->seed;
            opts.end_token = o->end_token;
            opts.end_token_gain = o->end_token_gain;
            if (o->dtype == "bf16") opts.dtype = DType::BF16;
            else if (o->dtype == "f16") opts.dtype = DType::F16;
            else if (o->dtype == "f32") opts.dtype = DType::F32;
            else fail("--dtype: \"", o->dtype, "\" is not one of bf16, f16, f32");
            ModelConfig c = model_preset(o->like);
            if (o->layers != 0) {
              if (o->layers < 0 || o->layers > c.num_layers)
                fail("--layers: ", o->layers, " is not between 1 and ", c.num_layers, " (the layers of ", o->like, ")");
              c.num_layers = o->layers;
            }
            const std::string tokenizer_dir = o->tokenizer.empty() ? demo_model_dir() : o->tokenizer;
            if (!o->no_tokenizer && !path_exists(tokenizer_dir + "/tokenizer.json"))
              fail("--tokenizer: ", tokenizer_dir, "/tokenizer.json does not exist");
            write_random_checkpoint(c, o->out, opts);
            if (!o->no_tokenizer) {
              for (const char* name : {"tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt"}) {
                const std::string src = tokenizer_dir + "/" + name;
                if (!path_exists(src)) continue;
                const std::string text = read_text_file(src);
                write_file_atomic(o->out + "/" + name, text.data(), text.size());
              }
            }
            if (!o->quiet)
              std::cerr << "glass: wrote a random " << o->like << " checkpoint (" << o->dtype << ", "
                        << format_count(static_cast<unsigned long long>(c.parameter_count())) << " parameters, seed "
                        << o->seed << ") to " << o->out << "\n";
            return 0;
          }};
}

}  // namespace glass::cli
