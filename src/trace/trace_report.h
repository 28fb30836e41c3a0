// Everything `glass trace` learned about one forward pass, and its renderings: JSON
// (stable field names, see docs/trace.md), a text table, an HTML page, .npy dumps.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/model_config.h"
#include "trace/expert_routing.h"
#include "trace/logit_lens.h"
#include "trace/trace_recorder.h"

namespace glass {

struct TraceReport {
  std::string model_dir;
  std::string backend;
  ModelConfig config;
  std::optional<std::string> prompt_text;  // when the prompt was given as text
  std::vector<int32_t> ids;
  std::vector<std::string> token_texts;  // per id, valid UTF-8 (empty without a tokenizer)
  std::vector<int32_t> positions;        // the positions traced
  std::vector<int> layers;               // the layers traced
  std::vector<StageRecord> stages;
  std::optional<LogitLens> lens;
  std::optional<ExpertRouting> routing;  // mixture-of-experts models: the experts each position chose
};

// The JSON document `glass trace --format json` prints. Non-finite numbers are null.
nlohmann::ordered_json trace_report_json(const TraceReport& report);

// A JSON number, or null for inf and NaN (JSON has neither): how the trace and compare
// reports write non-finite values.
nlohmann::ordered_json finite_or_null(double v);

struct TableOptions {
  static constexpr size_t kDefaultTableWidth = 120;  // when stdout is not a terminal
  static constexpr size_t kMinTableWidth = 40;       // narrower widths are laid out as this

  bool per_position = false;  // a line per position under each stage
  int64_t first_values = 6;   // first values shown per line, as many as fit in `width`
  // Terminal columns to fit: long lines (tokens, prompt) wrap, the logit lens stacks its
  // positions in blocks, and the first values stop where the line would overflow.
  size_t width = kDefaultTableWidth;
};
void print_trace_table(const TraceReport& report, std::ostream& out, const TableOptions& options = {});

// One self-contained HTML page (inline CSS, SVG and a little script; nothing fetched).
std::string trace_report_html(const TraceReport& report);

// Writes every stage that kept its data as `<name>.npy` into `dir` plus `index.json`.
// The files are first written into a fresh folder beside `dir`, which then replaces it,
// so a failure leaves no partial dump. `dir` must be absent, empty, or an earlier dump
// (a folder whose index.json says so); anything else is refused.
void write_trace_dump(const std::string& dir, const TraceReport& report);

// A token's text for display in a table: quoted, with control characters and the bytes
// of a character cut in two (a token may hold part of one) escaped.
std::string quoted_token(std::string_view text);
// The same with at most `columns` columns between the quotes, the last a "…" when cut short.
std::string short_quoted_token(std::string_view text, size_t columns);

}  // namespace glass
