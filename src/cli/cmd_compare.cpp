// glass compare A B: how far apart two sets of logits are, position by position. Each
// input is a raw float32 file (`glass logits --out`, llama.cpp's logits dumps) or a .npy
// array (a glass dump, or numpy.save of transformers' logits). A is the reference.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

#include "base/error.h"
#include "base/json_fields.h"
#include "base/mapped_file.h"
#include "cli/commands.h"
#include "cli/model_source.h"
#include "cli/option_range.h"
#include "io/checkpoint.h"
#include "io/gguf.h"
#include "io/gguf_model.h"
#include "io/model_config.h"
#include "runtime/model_files.h"
#include "tokenizer/utf8.h"
#include "trace/logit_compare.h"
#include "trace/npy.h"
#include "trace/trace_report.h"

namespace glass::cli {

namespace {

using OJson = nlohmann::ordered_json;

struct Input {
  std::string path;
  bool npy = false;
  std::vector<int64_t> shape;  // npy only
  std::string descr;           // npy only
  std::vector<float> values;

  // Rows are positions: the first axis of a .npy with two or more axes; a 1-D array
  // is one row.
  std::optional<int64_t> npy_width() const {
    if (!npy) return std::nullopt;
    if (shape.size() == 1) return shape[0];
    int64_t w = 1;
    for (size_t i = 1; i < shape.size(); ++i) w *= shape[i];
    return w;
  }
  std::string describe(int64_t width) const {
    const int64_t rows = width > 0 ? static_cast<int64_t>(values.size()) / width : 0;
    if (npy) return ".npy " + npy_shape_tuple(shape) + " " + descr;
    return "raw float32, " + std::to_string(rows) + " rows of " + std::to_string(width);
  }
};

Input load_input(const std::string& path) {
  const MappedFile file(path);
  const std::string_view bytes(reinterpret_cast<const char*>(file.data()), file.size());
  Input in;
  in.path = path;
  if (has_npy_magic(bytes)) {
    NpyArray a = decode_npy(bytes, path);
    if (a.shape.empty()) fail(path, ": a 0-d .npy array holds no logits rows");
    in.npy = true;
    in.shape = std::move(a.shape);
    in.descr = std::move(a.descr);
    in.values = std::move(a.data);
  } else {
    if (bytes.size() % sizeof(float) != 0)
      fail(path, ": ", bytes.size(), " bytes is not a whole number of float32 values (and the file is not .npy)");
    in.values.resize(bytes.size() / sizeof(float));
    if (!bytes.empty()) std::memcpy(in.values.data(), bytes.data(), bytes.size());
  }
  if (in.values.empty()) fail(path, ": holds no values");
  return in;
}

// The folder of `-m`'s tokenizer: the folder itself, the folder of its config.json, or the
// GGUF file (whose metadata holds the vocabulary).
std::string tokenizer_source(const std::string& model) {
  if (is_gguf_path(model) || !model.ends_with(".json")) return model;
  const size_t slash = model.rfind('/');
  return slash == std::string::npos ? "." : model.substr(0, slash);
}

// A top-1 cell: the id, and the token's text quoted when a tokenizer names it.
std::string top1_cell(int32_t id, const std::optional<Tokenizer>& tokenizer) {
  std::string cell = std::to_string(id);
  if (!tokenizer || !tokenizer->has_token(id)) return cell;
  return cell + " " + short_quoted_token(tokenizer->token_bytes(id), 16);
}

}  // namespace

Command add_compare_command(CLI::App& app) {
  struct Options {
    std::string a, b, model, format = "table";
    int64_t vocab = 0;
    double tolerance = -1;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("compare", "Compare two logits files (raw float32 or .npy), position by position");
  sub->add_option("a", o->a, "Reference: raw float32 logits (glass logits --out) or .npy")->required();
  sub->add_option("b", o->b, "The other: raw float32 logits or .npy")->required();
  sub->add_option("--vocab", o->vocab, "Row width of raw float32 files (the vocabulary size)");
  sub->add_option("-m,--model", o->model,
                  "Checkpoint folder, its config.json, or a GGUF file, whose vocabulary size is the raw row width "
                  "(llama.cpp's logits dumps are raw float32 rows) and whose tokenizer names the top-1 tokens");
  sub->add_option("--format", o->format, "table or json")->capture_default_str();
  sub->add_option("--tolerance", o->tolerance, "Exit with status 1 when max |difference| exceeds this");

  return {sub, [o] {
            if (o->format != "table" && o->format != "json") fail("--format: \"", o->format, "\" is not one of table, json");
            check_range("--vocab", o->vocab, 0, ConfigLimits::kVocabSize);
            std::optional<int64_t> width;
            if (o->vocab > 0) width = o->vocab;
            std::optional<Tokenizer> tokenizer;
            if (!o->model.empty()) {
              o->model = local_model_path(o->model, "config.json");
              const bool gguf = is_gguf_path(o->model);
              const std::string config = gguf || (o->model.size() >= 5 && o->model.ends_with(".json"))
                                             ? o->model
                                             : o->model + "/config.json";
              const int64_t v = gguf ? model_config_from_gguf(GgufSet(o->model)).vocab_size
                                     : load_model_config(config).vocab_size;
              if (width && *width != v) fail("--vocab ", *width, " disagrees with ", config, "'s vocab_size ", v);
              width = v;
              if (const std::string source = tokenizer_source(o->model); model_has_tokenizer(source))
                tokenizer = load_model_tokenizer(source);
            }
            const Input a = load_input(o->a);
            const Input b = load_input(o->b);
            if (a.npy && b.npy && a.shape != b.shape)
              fail("compare: the shapes differ: ", a.path, " is ", npy_shape_tuple(a.shape), ", ", b.path, " is ",
                   npy_shape_tuple(b.shape));
            for (const Input* in : {&a, &b}) {
              if (const auto w = in->npy_width()) {
                if (width && *width != *w)
                  fail(in->path, ": rows of ", *w, " values (shape ", npy_shape_tuple(in->shape), ") but the row width is ",
                       *width, o->vocab > 0 ? " (--vocab)" : " (the model's vocab_size)");
                width = *w;
              }
            }
            if (!width)
              fail("compare: both inputs are raw float32 files; give the row width with --vocab N or -m DIR");
            for (const Input* in : {&a, &b})
              if (in->values.size() % static_cast<size_t>(*width) != 0)
                fail(in->path, ": ", in->values.size(), " values are not a whole number of rows of ", *width);
            if (a.values.size() != b.values.size())
              fail("compare: ", a.path, " holds ", a.values.size() / *width, " rows of ", *width, " but ", b.path, " holds ",
                   b.values.size() / *width);

            const LogitComparison cmp = compare_logits(a.values, b.values, *width);
            double max_rel = 0;
            size_t agree = 0;
            for (const RowComparison& r : cmp.rows) {
              max_rel = std::max(max_rel, r.rel_error);
              agree += r.top1_agree;
            }
            const bool within = o->tolerance < 0 || cmp.max_abs_diff <= o->tolerance;

            if (o->format == "json") {
              OJson rows = OJson::array();
              for (size_t i = 0; i < cmp.rows.size(); ++i) {
                const RowComparison& r = cmp.rows[i];
                rows.push_back({{"position", i},
                                {"max_abs_diff", finite_or_null(r.max_abs_diff)},
                                {"rel_error", finite_or_null(r.rel_error)},
                                {"kl", finite_or_null(r.kl)},
                                {"top1_a", r.top1_a},
                                {"top1_b", r.top1_b},
                                {"top1_agree", r.top1_agree}});
                if (tokenizer) {
                  rows.back()["top1_a_text"] = utf8::to_valid(tokenizer->token_bytes(r.top1_a));
                  rows.back()["top1_b_text"] = utf8::to_valid(tokenizer->token_bytes(r.top1_b));
                }
              }
              OJson j = {{"a", {{"path", a.path}, {"format", a.npy ? "npy" : "f32"}, {"describe", a.describe(*width)}}},
                         {"b", {{"path", b.path}, {"format", b.npy ? "npy" : "f32"}, {"describe", b.describe(*width)}}},
                         {"width", *width},
                         {"positions", rows},
                         {"summary",
                          {{"positions", cmp.rows.size()},
                           {"max_abs_diff", finite_or_null(cmp.max_abs_diff)},
                           {"max_rel_error", finite_or_null(max_rel)},
                           {"mean_kl", finite_or_null(cmp.mean_kl)},
                           {"max_kl", finite_or_null(cmp.max_kl)},
                           {"top1_agreement", cmp.top1_agreement},
                           {"top1_agree_count", agree}}}};
              if (o->tolerance >= 0) j["summary"]["within_tolerance"] = within;
              std::cout << j.dump() << "\n";
            } else {
              std::printf("A  %s (%s)\nB  %s (%s)\n\n", a.path.c_str(), a.describe(*width).c_str(), b.path.c_str(),
                          b.describe(*width).c_str());
              // The top-1 columns: ids right-aligned, or "id \"text\"" left-aligned when a tokenizer names them.
              std::vector<std::string> top1_a, top1_b;
              size_t top1_width = 9;
              for (const RowComparison& r : cmp.rows) {
                top1_a.push_back(top1_cell(r.top1_a, tokenizer));
                top1_b.push_back(top1_cell(r.top1_b, tokenizer));
                top1_width =
                    std::max({top1_width, utf8::display_width(top1_a.back()), utf8::display_width(top1_b.back())});
              }
              const auto column = [&](const std::string& cell) {
                const std::string space(top1_width - utf8::display_width(cell), ' ');
                return tokenizer ? cell + space : space + cell;
              };
              const char* gap = tokenizer ? "  " : " ";
              std::printf("%8s %12s %12s %12s%s%s %s  %s\n", "position", "max |diff|", "rel error", "KL(A||B)", gap,
                          column("top1 A").c_str(), column("top1 B").c_str(), "agree");
              for (size_t i = 0; i < cmp.rows.size(); ++i) {
                const RowComparison& r = cmp.rows[i];
                std::printf("%8zu %12.4g %12.4g %12.4g%s%s %s  %s\n", i, r.max_abs_diff, r.rel_error, r.kl, gap,
                            column(top1_a[i]).c_str(), column(top1_b[i]).c_str(), r.top1_agree ? "yes" : "NO");
              }
              std::printf("\nsummary  %zu positions: max |diff| %.4g, max rel error %.4g, KL mean %.4g max %.4g, "
                          "top-1 agreement %zu/%zu (%.1f%%)\n",
                          cmp.rows.size(), cmp.max_abs_diff, max_rel, cmp.mean_kl, cmp.max_kl, agree, cmp.rows.size(),
                          100.0 * cmp.top1_agreement);
              if (o->tolerance >= 0)
                std::printf("tolerance %.4g: %s\n", o->tolerance, within ? "within" : "EXCEEDED");
            }
            return within ? 0 : 1;
          }};
}

}  // namespace glass::cli
