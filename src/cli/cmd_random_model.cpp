// glass random-model: a random-weight checkpoint at a real Qwen2.5 / Qwen3 / Qwen3-MoE shape.
// It writes into a new or empty folder; with --force into one that holds only files
// random-model writes (a checkpoint it wrote before), replacing them. A folder with any
// other file (a real checkpoint's shards, README, golden.json) is refused even then: the
// random weights would sit among files that describe other ones.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <vector>

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/commands.h"
#include "cli/model_source.h"
#include "io/checkpoint.h"
#include "model/random_checkpoint.h"

namespace glass::cli {

namespace {

// The tokenizer files random-model copies, those the source has.
constexpr std::array<const char*, 4> kTokenizerFiles = {"tokenizer.json", "tokenizer_config.json", "vocab.json",
                                                        "merges.txt"};

bool written_by_random_model(const std::string& name) {
  const auto is = [&](const char* file) { return name == file; };
  return std::any_of(kRandomCheckpointFiles.begin(), kRandomCheckpointFiles.end(), is) ||
         std::any_of(kTokenizerFiles.begin(), kTokenizerFiles.end(), is);
}

std::string name_list(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  constexpr size_t kShown = 6;
  std::string text;
  for (size_t i = 0; i < names.size() && i < kShown; ++i) text += (i > 0 ? ", " : "") + text_excerpt(names[i]);
  if (names.size() > kShown) text += str_cat(" and ", names.size() - kShown, " more");
  return text;
}

// Refuses an --out folder that holds files (see the top of this file).
void check_output_folder(const std::string& dir, bool force) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(dir, ec);
  if (!fs::exists(status)) return;
  if (!fs::is_directory(status)) fail("--out ", dir, ": exists and is not a folder");
  std::vector<std::string> ours, others;
  fs::directory_iterator it(dir, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    (written_by_random_model(name) && it->is_regular_file(ec) ? ours : others).push_back(name);
  }
  if (ec) fail("--out ", dir, ": cannot list the folder: ", ec.message());
  if (!others.empty())
    fail("--out ", dir, ": the folder holds files random-model does not write (", name_list(others),
         "), which would sit beside random weights; give a new or empty folder");
  if (!ours.empty() && !force)
    fail("--out ", dir, ": the folder already holds a checkpoint (", name_list(ours),
         "); give a new or empty folder, or --force to replace it");
}

}  // namespace

Command add_random_model_command(CLI::App& app) {
  struct Options {
    std::string like, dtype = "bf16", out, tokenizer;
    uint64_t seed = 0;
    int32_t end_token = -1;
    int64_t layers = 0;
    float end_token_gain = 0.6f;
    bool no_tokenizer = false, force = false, quiet = false;
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
  sub->add_option("--out", o->out,
                  "Output folder: new or empty (or, with --force, holding a checkpoint random-model wrote)")
      ->required();
  sub->add_flag("--force", o->force,
                "Replace the checkpoint random-model wrote in --out; tokenizer files the new one does not carry are "
                "removed (a folder holding any other file is still refused)");
  sub->add_option("--seed", o->seed, "Seed; the same seed gives the same bytes")->capture_default_str();
  sub->add_option("--tokenizer", o->tokenizer, "Folder whose tokenizer files to copy (default: the built-in Qwen2.5 tokenizer)");
  sub->add_option("--end-token", o->end_token,
                  "Shape the embedding so this token (e.g. 151645, <|im_end|>) is always among the likeliest: "
                  "sampled generations then end (the demo model uses it)");
  sub->add_option("--end-token-gain", o->end_token_gain, "How strongly --end-token is favoured")->capture_default_str();
  sub->add_flag("--no-tokenizer", o->no_tokenizer,
                "Write weights and configs only (a tokenizer already in --out stays)");
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
            check_output_folder(o->out, o->force);
            write_random_checkpoint(c, o->out, opts);
            if (!o->no_tokenizer) {
              for (const char* name : kTokenizerFiles) {
                const std::string src = tokenizer_dir + "/" + name;
                const std::string dst = o->out + "/" + name;
                if (path_exists(src)) {
                  const std::string text = read_text_file(src);
                  write_file_atomic(dst, text.data(), text.size());
                } else {
                  // An earlier tokenizer's file (--force): it would be read with this one.
                  std::error_code ec;
                  std::filesystem::remove(dst, ec);
                  if (ec) fail(dst, ": cannot remove the earlier tokenizer's file: ", ec.message());
                }
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
