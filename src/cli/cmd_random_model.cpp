// glass random-model: a random-weight checkpoint at a real Qwen2.5 / Qwen3 / Qwen3-MoE shape.
// It writes into a new or empty folder; with --force into one that holds only files
// random-model writes (a checkpoint it wrote before), replacing them. A folder with any
// other file (a real checkpoint's shards, README, golden.json) is refused even then: the
// random weights would sit among files that describe other ones.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>
#include <vector>

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/commands.h"
#include "cli/model_source.h"
#include "io/checkpoint.h"
#include "model/random_checkpoint.h"
#include "runtime/model_files.h"
#include "tokenizer/tokenizer.h"

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

// The words a shaped reply (--shape-replies) may use, so that streamed text and
// --show-top tables read as words: plain, common English words, each used when the
// tokenizer writes it with a leading space as one token (" river"); Qwen2.5's does for
// all of them. Content words rather than "the" or "is", so that a prompt ending on one of
// those starts a whole reply (one ending on a chain word continues its chain instead).
constexpr const char* kReplyWords =
    "apple river garden window yellow green orange purple silver golden bright quiet gentle simple happy "
    "little small large water stone paper table chair house light music story money market forest "
    "mountain valley ocean island summer winter spring autumn morning evening night today tomorrow open "
    "close start finish begin build write read speak listen watch learn teach think find keep give take "
    "make bring carry move turn walk run jump swim fly drive ride travel visit return follow lead help "
    "play work rest sleep dream hope wish love enjoy share smile laugh sing dance paint draw cook bake "
    "eat drink grow plant wash clean fix check count measure change choose decide answer question letter "
    "number voice sound color shape size weight height length speed power energy heat cold warm cool "
    "fresh sweet salt sugar bread butter cheese milk coffee honey fruit flower tree leaf grass seed root "
    "branch field farm road street bridge tower castle village city town country world planet star moon "
    "cloud rain snow wind storm fire smoke sand rock metal glass wood iron gold steel cotton silk wool "
    "chain rope wheel engine train plane boat ship truck bike horse bird fish cat dog mouse lion tiger "
    "bear wolf fox rabbit eagle whale shark turtle frog animal person child friend family teacher doctor "
    "farmer driver artist writer player worker student leader member people group team class school "
    "office library museum hotel kitchen bedroom door wall floor roof stairs corner center middle edge "
    "front top bottom high low deep wide long short fast slow strong soft hard heavy empty full clear "
    "dark round flat smooth sharp rough clever calm brave proud kind polite honest careful lucky ready "
    "busy free safe rich young old new modern ancient future moment minute hour week month year season "
    "century history science nature journey adventure picture camera phone screen computer program "
    "system method idea plan goal reason result choice chance luck joy peace truth beauty wonder memory "
    "language poem song game sport ball ticket basket bottle cup plate spoon knife fork box bag pocket "
    "button blanket pillow candle lamp mirror clock key lock map coin gift card note page book chapter";

std::vector<int32_t> reply_word_ids(const Tokenizer& tokenizer) {
  EncodeOptions plain;
  plain.parse_special = false;
  plain.add_special_tokens = false;
  std::vector<int32_t> ids, pieces;
  std::istringstream words(kReplyWords);
  for (std::string word; words >> word;) {
    pieces.clear();
    tokenizer.encode(" " + word, pieces, plain);
    if (pieces.size() == 1) ids.push_back(pieces[0]);
  }
  return ids;
}

}  // namespace

Command add_random_model_command(CLI::App& app) {
  struct Options {
    std::string like, dtype = "bf16", out, tokenizer;
    uint64_t seed = 0;
    int32_t reply_end = -1;
    int64_t layers = 0;
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
  sub->add_option("--shape-replies", o->reply_end,
                  "END_ID: shape the embedding, lm_head and residual writes (random otherwise) so that a sampled "
                  "reply is a chain of common English words that ends with this token (e.g. 151645, <|im_end|>) "
                  "after 20 to 80 tokens; the demo model uses it. The words' ids come from --tokenizer, else the "
                  "tokenizer already in --out with --no-tokenizer, else the built-in one. Needs untied embeddings "
                  "and a hidden size of 64 or more")
      ->check(CLI::NonNegativeNumber);
  sub->add_flag("--no-tokenizer", o->no_tokenizer,
                "Write weights and configs only (a tokenizer already in --out stays)");
  sub->add_flag("--quiet", o->quiet, "No summary");

  return {sub, [o] {
            RandomCheckpointOptions opts;
            opts.seed = o->seed;
            opts.reply_end = o->reply_end;
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
            if (o->reply_end >= 0) {
              // The tokenizer the checkpoint will have.
              std::string words_dir = o->tokenizer.empty() ? demo_model_dir() : o->tokenizer;
              if (o->tokenizer.empty() && o->no_tokenizer && path_exists(o->out + "/tokenizer.json")) words_dir = o->out;
              opts.reply_words = reply_word_ids(load_model_tokenizer(words_dir));
            }
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
