// glass trace: one forward pass of a prompt with every stage on view: shapes with named
// axes, rms/min/max and first values, the logit lens; as a table, JSON, .npy dumps or
// an HTML page.
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <set>

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/commands.h"
#include "cli/option_range.h"
#include "cli/model_session.h"
#include "cli/token_ids.h"
#include "io/checkpoint.h"
#include "tokenizer/tokenizer.h"
#include "trace/logit_lens.h"
#include "trace/trace_report.h"

namespace glass::cli {

namespace {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::string item;
  for (char ch : text + ",") {
    if (ch == ',' || ch == ' ') {
      if (!item.empty()) out.push_back(item);
      item.clear();
    } else {
      item += ch;
    }
  }
  return out;
}

int64_t parse_int(const std::string& word, const std::string& option, const std::string& text) {
  bool ok = !word.empty();
  for (size_t i = 0; i < word.size(); ++i) ok = ok && ((word[i] >= '0' && word[i] <= '9') || (i == 0 && word[i] == '-'));
  errno = 0;
  const long long v = ok && word != "-" ? std::strtoll(word.c_str(), nullptr, 10) : 0;
  if (!ok || word == "-" || errno == ERANGE || v > INT32_MAX || v < -INT32_MAX)
    fail(option, ": \"", word, "\" in \"", text, "\" is not an integer");
  return v;
}

// "all", or a list like "0,2,5-7"; with `from_end`, -1 is the last index (count-1).
// Every index must lie in [0, count).
std::optional<std::set<int>> parse_index_list(const std::string& text, const std::string& option, int64_t count,
                                              bool from_end) {
  if (text == "all") return std::nullopt;
  std::set<int> out;
  const auto words = split_list(text);
  if (words.empty()) fail(option, ": empty list (give indices like 0,2,5-7 or all)");
  for (const std::string& w : words) {
    const size_t dash = w.find('-', 1);
    int64_t lo, hi;
    if (dash != std::string::npos) {
      lo = parse_int(w.substr(0, dash), option, text);
      hi = parse_int(w.substr(dash + 1), option, text);
    } else {
      lo = hi = parse_int(w, option, text);
    }
    if (from_end) {
      if (lo < 0) lo += count;
      if (hi < 0) hi += count;
    }
    if (lo > hi) fail(option, ": the range \"", w, "\" runs backwards");
    if (lo < 0 || hi >= count)
      fail(option, ": \"", w, "\" is out of range: there are ", count, " (0 to ", count - 1, from_end ? ", or -1 for the last" : "",
           ")");
    for (int64_t i = lo; i <= hi; ++i) out.insert(static_cast<int>(i));
  }
  return out;
}

std::optional<std::set<std::string>> parse_stages(const std::string& text) {
  if (text == "all") return std::nullopt;
  std::set<std::string> out;
  const auto& known = trace_stage_names();
  for (const std::string& w : split_list(text)) {
    if (std::find(known.begin(), known.end(), w) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      fail("--stages: \"", w, "\" is not a stage; the stages are ", list);
    }
    out.insert(w);
  }
  if (out.empty()) fail("--stages: empty list");
  return out;
}

// The columns the table may use: $COLUMNS when it is a number (as ls and others read it),
// else the terminal's width when stdout is one, else the default.
size_t table_width() {
  if (const char* env = std::getenv("COLUMNS"); env != nullptr && *env != '\0') {
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(env, &end, 10);
    if (*end == '\0' && errno == 0 && v > 0) return static_cast<size_t>(v);
  }
  winsize ws {};
  if (::isatty(STDOUT_FILENO) != 0 && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return TableOptions::kDefaultTableWidth;
}

}  // namespace

Command add_trace_command(CLI::App& app) {
  struct Options {
    std::string model, prompt, ids, format = "table", layers = "all", positions = "all", stages = "all";
    std::string dump, html;
    int64_t top_k = 5, first = 8, width = 0;
    bool per_position = false, no_lens = false, no_special = false;
    RuntimeOptions runtime;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("trace", "Show every stage of one forward pass: shapes, statistics, logit lens");
  sub->add_option("-m,--model", o->model, "Checkpoint folder, GGUF file, or ORG/NAME[@REVISION] in the Hugging Face cache (default: the built-in demo model)");
  auto* prompt = sub->add_option("-p,--prompt", o->prompt, "Prompt text");
  auto* ids = sub->add_option("--ids", o->ids, "Prompt as token ids, e.g. \"9707 11 1879\"");
  prompt->excludes(ids);
  sub->add_option("--layers", o->layers, "Layers to trace: all, or a list like 0,1,5-7")->capture_default_str();
  sub->add_option("--positions", o->positions, "Positions to report: all, or a list like 0,3,-1 (-1: the last)")
      ->capture_default_str();
  sub->add_option("--stages", o->stages, "Stages to trace: all, or a list like embed,q,attn_weights,output")
      ->capture_default_str();
  sub->add_option("--format", o->format, "table or json (on stdout)")->capture_default_str();
  sub->add_option("--dump", o->dump, "Write the traced tensors as .npy files with an index.json into this folder");
  sub->add_option("--html", o->html, "Write a self-contained HTML page of the trace to this file");
  sub->add_option("--top-k", o->top_k, "Tokens per logit-lens cell and for the final prediction")->capture_default_str();
  sub->add_option("--first", o->first, "First values reported per position")->capture_default_str();
  sub->add_flag("--per-position", o->per_position, "Table: a line per position under each stage");
  auto* width = sub->add_option("--width", o->width,
                  "Table: columns to fit (default: $COLUMNS, else the terminal's width, else 120); the logit lens "
                  "stacks its positions in blocks that fit");
  sub->add_flag("--no-lens", o->no_lens, "Skip the logit lens");
  sub->add_flag("--no-special", o->no_special, "Tokenize special tokens in the prompt text as plain text");
  o->runtime.add_to(sub);

  return {sub, [o, width] {
            if (o->format != "table" && o->format != "json") fail("--format: \"", o->format, "\" is not one of table, json");
            if (o->prompt.empty() && o->ids.empty()) fail("give a prompt with -p TEXT or --ids \"...\"");
            check_range("--top-k", o->top_k, 1, kMaxShowTop);
            check_range("--first", o->first, 0, kMaxFirstValues);
            if (*width) check_range("--width", o->width, TableOptions::kMinTableWidth, 100000);
            // The tokenizer names the tokens; with --ids it is optional.
            const ModelSession session(o->model, o->runtime,
                                       {.tokenizer = o->prompt.empty() ? Need::kIfPresent : Need::kYes});
            const std::string& dir = session.path();
            const KVType kv = session.kv_type();
            const DecoderModel& model = session.model();
            const ModelConfig& c = model.config();
            const Tokenizer* tokenizer = session.tokenizer_if_loaded();
            std::vector<int32_t> prompt_ids;
            if (!o->prompt.empty()) {
              EncodeOptions enc;
              enc.parse_special = !o->no_special;
              prompt_ids = tokenizer->encode(o->prompt, enc);
              if (prompt_ids.empty()) fail("-p: the prompt encodes to no tokens");
            } else {
              prompt_ids = parse_token_ids(o->ids, "--ids");
            }
            for (int32_t id : prompt_ids)
              if (id >= c.vocab_size)
                fail("--ids: token id ", id, " is out of range; the model's vocabulary has ", c.vocab_size, " rows");
            const auto n = static_cast<int64_t>(prompt_ids.size());
            if (n > c.max_position_embeddings)
              fail("the prompt's ", n, " tokens exceed the model's context of ", c.max_position_embeddings);

            TraceSelection selection;
            selection.stages = parse_stages(o->stages);
            selection.layers = parse_index_list(o->layers, "--layers", c.num_layers, false);
            if (const auto p = parse_index_list(o->positions, "--positions", n, true))
              selection.positions = std::set<int32_t>(p->begin(), p->end());

            TokenText text_of;
            if (tokenizer) text_of = token_text_of(*tokenizer);

            RecorderOptions rec_options;
            rec_options.first_count = o->first;
            rec_options.keep_data = !o->dump.empty();
            TraceRecorder recorder(selection, rec_options);
            LensCollector lens(selection.layers, selection.positions);
            RoutingCollector routing(selection.layers, selection.positions);
            TraceFanout fanout;
            fanout.subscribe(&recorder);
            if (!o->no_lens) fanout.subscribe(&lens);
            if (c.num_experts > 0) fanout.subscribe(&routing);

            // Logits only at the reported positions (each is a [vocab] row).
            KVCache cache(c, kv, n);
            const int32_t seq = cache.add_sequence();
            Batch batch;
            for (int64_t i = 0; i < n; ++i)
              batch.add(prompt_ids[i], static_cast<int32_t>(i), seq, selection.wants_position(static_cast<int32_t>(i)));
            std::vector<float> logits;
            model.forward(batch, cache, session.kernels(), logits, &fanout);

            TraceReport report;
            report.model_dir = dir;
            report.backend = session.backend().description();
            report.config = c;
            if (!o->prompt.empty()) report.prompt_text = o->prompt;
            report.ids = prompt_ids;
            for (int32_t id : prompt_ids) report.token_texts.push_back(text_of ? text_of(id) : "");
            for (int64_t i = 0; i < n; ++i)
              if (selection.wants_position(static_cast<int32_t>(i))) report.positions.push_back(static_cast<int32_t>(i));
            for (int64_t l = 0; l < c.num_layers; ++l)
              if (!selection.layers || selection.layers->count(static_cast<int>(l))) report.layers.push_back(static_cast<int>(l));
            report.stages = recorder.take_stages();
            if (!o->no_lens) report.lens = lens.compute(model, session.kernels(), o->top_k, text_of);
            if (c.num_experts > 0) report.routing = routing.routing();

            if (!o->dump.empty()) {
              write_trace_dump(o->dump, report);
              std::cerr << "glass: wrote " << report.stages.size() << " tensors as .npy with index.json to " << o->dump
                        << "\n";
            }
            if (!o->html.empty()) {
              const std::string page = trace_report_html(report);
              write_file_atomic(o->html, page.data(), page.size());
              std::cerr << "glass: wrote the trace page to " << o->html << "\n";
            }
            if (o->format == "json") {
              std::cout << trace_report_json(report).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
                        << "\n";
            } else {
              TableOptions table;
              table.per_position = o->per_position;
              table.first_values = o->first;
              table.width = o->width > 0 ? static_cast<size_t>(o->width) : table_width();
              print_trace_table(report, std::cout, table);
            }
            std::cout.flush();
            std::cerr << "glass: traced " << prompt_ids.size() << (prompt_ids.size() == 1 ? " position" : " positions")
                      << "; " << session.summary(&cache) << "\n";
            return 0;
          }};
}

}  // namespace glass::cli
