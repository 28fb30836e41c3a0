#include "trace/trace_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tokenizer/utf8.h"

namespace glass {

namespace {

using OJson = nlohmann::ordered_json;

OJson numbers(const std::vector<float>& v) {
  OJson a = OJson::array();
  for (float x : v) a.push_back(finite_or_null(x));
  return a;
}

OJson token_json(const LensToken& t) {
  return {{"id", t.id}, {"text", t.text}, {"prob", t.prob}, {"logit", finite_or_null(t.logit)}};
}

OJson tokens_json(const std::vector<std::vector<LensToken>>& per_position) {
  OJson a = OJson::array();
  for (const auto& list : per_position) {
    OJson row = OJson::array();
    for (const LensToken& t : list) row.push_back(token_json(t));
    a.push_back(std::move(row));
  }
  return a;
}

OJson stage_json(const StageRecord& r) {
  OJson axes = OJson::array(), shape = OJson::object();
  for (const NamedAxis& a : r.axes) {
    axes.push_back(a.name);
    shape[a.name] = a.size;
  }
  OJson rms = OJson::array(), min = OJson::array(), max = OJson::array(), first = OJson::array();
  for (size_t p = 0; p < r.per_position.size(); ++p) {
    rms.push_back(finite_or_null(r.per_position[p].rms()));
    min.push_back(finite_or_null(r.per_position[p].min_or_nan()));
    max.push_back(finite_or_null(r.per_position[p].max_or_nan()));
    first.push_back(numbers(r.first[p]));
  }
  OJson j = {{"name", r.name()},
             {"stage", r.stage},
             {"layer", r.layer >= 0 ? OJson(r.layer) : OJson(nullptr)},
             {"axes", axes},
             {"shape", shape},
             {"shape_text", r.shape_text()},
             {"rms", finite_or_null(r.overall.rms())},
             {"min", finite_or_null(r.overall.min_or_nan())},
             {"max", finite_or_null(r.overall.max_or_nan())},
             {"nonfinite", r.overall.nonfinite},
             {"positions", r.positions},
             {"per_position", {{"rms", rms}, {"min", min}, {"max", max}}},
             {"first", first}};
  return j;
}

std::string layer_name(int layer) { return "layer" + std::to_string(layer); }

// "%.4g"-style number for the table, NaN as "-".
std::string fmt(double v, const char* spec = "%10.4g") {
  if (std::isnan(v)) {
    const int width = std::snprintf(nullptr, 0, spec, 0.0);
    return std::string(static_cast<size_t>(std::max(width, 1) - 1), ' ') + "-";
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, spec, v);
  return buf;
}

std::string pad(std::string s, size_t width) {
  const size_t used = utf8::display_width(s);
  if (used < width) s.append(width - used, ' ');
  return s;
}

// At most `max_columns` columns of `s` (valid UTF-8, as every text here is), with "…"
// when cut.
std::string truncated(const std::string& s, size_t max_columns) {
  size_t used = 0;
  for (const char* p = s.data(); p < s.data() + s.size();) {
    const char* at = p;
    used += utf8::char_width(utf8::decode_valid(p));
    if (used > max_columns) return s.substr(0, static_cast<size_t>(at - s.data())) + "…";
  }
  return s;
}

// The first values of a row, as many of `count` as fit in `max_columns`; "…" when some
// are left out.
std::string first_values_text(const std::vector<float>& v, int64_t count, size_t max_columns) {
  const size_t shown = std::min(v.size(), static_cast<size_t>(std::max<int64_t>(count, 0)));
  std::string s;
  for (size_t i = 0; i < shown; ++i) {
    std::string next = s.empty() ? "" : " ";
    next += std::isnan(v[i]) ? "-" : fmt(v[i], "%.4g");
    // Room for this value, and for " …" after it unless it is the last one.
    const bool last = i + 1 == v.size();
    if (s.size() + next.size() + (last ? 0 : 2) > max_columns) return s.empty() ? "…" : s + " …";
    s += next;
  }
  if (v.size() > shown) s += s.empty() ? "…" : " …";
  return s;
}

// Cuts `text` into pieces of at most `columns` display columns (character boundaries).
std::vector<std::string> cut_to_columns(const std::string& text, size_t columns) {
  std::vector<std::string> pieces(1);
  size_t used = 0;
  for (const char* p = text.data(); p < text.data() + text.size();) {
    const char* at = p;
    const size_t w = utf8::char_width(utf8::decode_valid(p));
    if (used + w > columns && used > 0) {
      pieces.emplace_back();
      used = 0;
    }
    pieces.back().append(at, p);
    used += w;
  }
  return pieces;
}

// A line headed by `label` (10 columns and a space) with `items` after it, separated by
// spaces and wrapped to `width`: continuation lines are indented under the first item.
// An item wider than a line is cut over several.
void print_wrapped(std::ostream& out, const std::string& label, const std::vector<std::string>& items, size_t width) {
  constexpr size_t kIndent = 11;
  const size_t room = width - kIndent;
  out << pad(label, kIndent);
  size_t used = 0;
  for (const std::string& item : items) {
    for (const std::string& piece : cut_to_columns(item, room)) {
      const size_t w = utf8::display_width(piece);
      if (used > 0 && used + 1 + w > room) {
        out << "\n" << std::string(kIndent, ' ');
        used = 0;
      } else if (used > 0) {
        out << ' ';
        ++used;
      }
      out << piece;
      used += w;
    }
  }
  out << "\n";
}

// Text split at its spaces, each kept (two spaces make an empty word): joined with single
// spaces it is the text again.
std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out(1);
  for (char ch : text) {
    if (ch == ' ') out.emplace_back();
    else out.back() += ch;
  }
  return out;
}

// Prose broken at spaces into lines of at most `width` columns (a longer word has a line of its own).
std::string wrapped_text(const std::string& text, size_t width) {
  std::string out, line;
  for (const std::string& w : words(text)) {
    if (!line.empty() && utf8::display_width(line) + 1 + utf8::display_width(w) > width) {
      out += line + "\n";
      line.clear();
    }
    if (!line.empty()) line += ' ';
    line += w;
  }
  return out + line + "\n";
}

}  // namespace

std::string quoted_token(std::string_view text) {
  std::string out = "\"";
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  for (size_t i = 0; i < text.size();) {
    const unsigned char ch = p[i];
    const utf8::Sequence seq = utf8::classify(p + i, text.size() - i);
    if (seq.kind == utf8::SequenceKind::kComplete && seq.length > 1) {
      // C1 controls (U+0080 to U+009F: 0xC2 0x80-0x9F) would act on a terminal, e.g. U+009B as CSI.
      if (seq.length == 2 && ch == 0xC2 && p[i + 1] < 0xA0) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", p[i + 1]);
        out += buf;
        i += 2;
        continue;
      }
      out.append(text.substr(i, seq.length));
      i += seq.length;
      continue;
    }
    // One byte: ASCII, or a byte of a character cut in two (a token may hold half of one).
    if (ch == '\n') out += "\\n";
    else if (ch == '\t') out += "\\t";
    else if (ch == '\r') out += "\\r";
    else if (ch == '"') out += "\\\"";
    else if (ch == '\\') out += "\\\\";
    else if (ch < 0x20 || ch >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", ch);
      out += buf;
    } else out += static_cast<char>(ch);
    ++i;
  }
  return out + "\"";
}

// The escapes count: they take columns too.
std::string short_quoted_token(std::string_view text, size_t columns) {
  const std::string quoted = quoted_token(text);
  std::string inner = quoted.substr(1, quoted.size() - 2);
  if (utf8::display_width(inner) > columns) inner = truncated(inner, std::max<size_t>(columns, 1) - 1);
  std::string out(1, '"');  // appended, not "literal" + string: GCC 12 warns falsely about that
  out += inner;
  out += '"';
  return out;
}

nlohmann::ordered_json trace_report_json(const TraceReport& r) {
  const ModelConfig& c = r.config;
  OJson prompt = OJson::object();
  if (r.prompt_text) prompt["text"] = *r.prompt_text;
  prompt["ids"] = r.ids;
  prompt["tokens"] = r.token_texts;
  OJson j = {{"glass_trace", 1},
             {"model",
              {{"dir", r.model_dir},
               {"layers", c.num_layers},
               {"hidden_size", c.hidden_size},
               {"heads", c.num_heads},
               {"kv_heads", c.num_kv_heads},
               {"head_dim", c.head_dim},
               {"intermediate_size", c.intermediate_size},
               {"vocab_size", c.vocab_size},
               {"architecture", architecture_class_name(c.architecture)}}},
             {"backend", r.backend},
             {"prompt", prompt},
             {"positions", r.positions},
             {"layers", r.layers}};
  OJson stages = OJson::array();
  for (const StageRecord& s : r.stages) stages.push_back(stage_json(s));
  j["stages"] = std::move(stages);
  if (r.lens) {
    const LogitLens& l = *r.lens;
    OJson layers = OJson::array();
    for (const LensLayer& layer : l.layers)
      layers.push_back({{"layer", layer.layer}, {"name", layer_name(layer.layer)}, {"top", tokens_json(layer.top)}});
    OJson lens = {{"top_k", l.top_k}, {"positions", l.positions}, {"tokens", l.tokens}, {"layers", layers}};
    if (!l.final_top.empty()) lens["final"] = tokens_json(l.final_top);
    if (l.last_layer_max_abs_diff) lens["last_layer_max_abs_diff"] = *l.last_layer_max_abs_diff;
    j["logit_lens"] = std::move(lens);
  }
  if (r.routing) {
    OJson layers = OJson::array();
    for (const ExpertRoutingLayer& layer : r.routing->layers) {
      OJson experts = OJson::array(), weights = OJson::array();
      for (const auto& chosen : layer.chosen) {
        OJson e = OJson::array(), w = OJson::array();
        for (const ExpertChoice& ch : chosen) e.push_back(ch.expert), w.push_back(ch.weight);
        experts.push_back(std::move(e));
        weights.push_back(std::move(w));
      }
      layers.push_back({{"layer", layer.layer}, {"experts", experts}, {"weights", weights}});
    }
    j["routing"] = {{"experts", r.routing->experts}, {"positions", r.routing->positions}, {"layers", layers}};
  }
  return j;
}

void print_trace_table(const TraceReport& r, std::ostream& out, const TableOptions& options) {
  const size_t width = std::max(options.width, TableOptions::kMinTableWidth);
  const ModelConfig& c = r.config;
  std::vector<std::string> model = {utf8::to_valid(r.model_dir)};  // a path need not be UTF-8
  for (std::string w : words("(" + std::to_string(c.num_layers) + " layers, hidden " + std::to_string(c.hidden_size) +
                             ", " + std::to_string(c.num_heads) + " query / " + std::to_string(c.num_kv_heads) +
                             " KV heads of " + std::to_string(c.head_dim) + ", intermediate " +
                             std::to_string(c.intermediate_size) + ", vocab " + std::to_string(c.vocab_size) + ")"))
    model.push_back(std::move(w));
  print_wrapped(out, "model", model, width);
  print_wrapped(out, "backend", words(r.backend), width);
  if (r.prompt_text) print_wrapped(out, "prompt", words(quoted_token(*r.prompt_text)), width);
  std::vector<std::string> tokens;
  for (size_t i = 0; i < r.ids.size(); ++i) {
    std::string t = std::to_string(i) + ":" + std::to_string(r.ids[i]);
    if (i < r.token_texts.size() && !r.token_texts[i].empty()) t += "=" + quoted_token(r.token_texts[i]);
    tokens.push_back(std::move(t));
  }
  print_wrapped(out, "tokens", tokens, width);
  std::vector<std::string> positions;
  for (int32_t p : r.positions) positions.push_back(std::to_string(p));
  print_wrapped(out, "positions", positions, width);
  out << "\n";

  // Name and shape columns as wide as their longest entry; the first values take what is left.
  size_t name_width = 6, shape_width = 6;
  for (const StageRecord& s : r.stages) {
    name_width = std::max(name_width, utf8::display_width(s.name()) + 2);
    shape_width = std::max(shape_width, utf8::display_width(s.shape_text()) + 2);
  }
  if (options.per_position)
    for (int32_t p : r.positions) shape_width = std::max(shape_width, ("  pos " + std::to_string(p)).size() + 2);
  const size_t stats_end = name_width + shape_width + 3 * 10 + 2;
  const size_t values_room = width > stats_end + 2 ? width - stats_end - 2 : 0;
  const int32_t shown = r.positions.empty() ? -1 : r.positions.back();
  if (!options.per_position && shown >= 0)
    out << wrapped_text("rms, min and max over the reported positions; first values at position " +
                            std::to_string(shown) + " (--per-position: at each)",
                        width);
  const std::string head =
      pad("stage", name_width) + pad("shape", shape_width) + "       rms        min        max  first values";
  out << truncated(head, width - 1) << "\n";  // "…" takes the last column
  for (const StageRecord& s : r.stages) {
    out << pad(s.name(), name_width) << pad(s.shape_text(), shape_width) << fmt(s.overall.rms()) << " "
        << fmt(s.overall.min_or_nan()) << " " << fmt(s.overall.max_or_nan());
    if (!options.per_position) {
      if (!s.first.empty() && values_room > 0)
        out << "  " << first_values_text(s.first.back(), options.first_values, values_room);
      out << "\n";
      continue;
    }
    out << "\n";
    for (size_t p = 0; p < s.positions.size(); ++p) {
      const TensorStats& st = s.per_position[p];
      out << pad("", name_width) << pad("  pos " + std::to_string(s.positions[p]), shape_width) << fmt(st.rms()) << " "
          << fmt(st.min_or_nan()) << " " << fmt(st.max_or_nan());
      if (values_room > 0) out << "  " << first_values_text(s.first[p], options.first_values, values_room);
      out << "\n";
    }
  }

  if (r.routing && !r.routing->layers.empty()) {
    out << "\nexperts chosen (of " << r.routing->experts << ") per layer and position, with their weights\n";
    for (const ExpertRoutingLayer& layer : r.routing->layers) {
      for (size_t p = 0; p < layer.chosen.size(); ++p) {
        out << pad(p == 0 ? layer_name(layer.layer) : "", 10) << pad("pos " + std::to_string(r.routing->positions[p]), 10);
        for (const ExpertChoice& ch : layer.chosen[p]) out << " e" << ch.expert << " " << fmt(ch.weight, "%.3f");
        out << "\n";
      }
    }
  }

  if (!r.lens) return;
  const LogitLens& l = *r.lens;
  out << "\n"
      << wrapped_text("logit lens: the most probable next token when the final norm and lm_head read each layer's "
                      "residual stream",
                      width);
  // Positions across, in blocks of as many as fit the width, stacked.
  constexpr size_t kLabel = 10, kCell = 18;
  const size_t per_block = std::max<size_t>(1, (width - kLabel) / kCell);
  auto row = [&](const std::string& label, const std::vector<std::vector<LensToken>>& top, size_t from, size_t to) {
    out << pad(label, kLabel);
    for (size_t p = from; p < to && p < top.size(); ++p) {
      const auto& cell = top[p];
      if (cell.empty()) {
        if (p + 1 < to) out << pad("", kCell);
        continue;
      }
      const LensToken& t = cell.front();
      std::string name(1, '#');
      if (t.text.empty()) name += std::to_string(t.id);
      else name = short_quoted_token(t.text, 9);
      std::string text = name + " " + fmt(t.prob, "%.3f");
      out << (p + 1 < to ? pad(text, kCell) : text);
    }
    out << "\n";
  };
  for (size_t from = 0; from < l.positions.size(); from += per_block) {
    const size_t to = std::min(l.positions.size(), from + per_block);
    if (from > 0) out << "\n";
    out << pad("", kLabel);
    for (size_t p = from; p < to; ++p) {
      std::string head = "pos " + std::to_string(l.positions[p]);
      const auto at = static_cast<size_t>(l.positions[p]);
      if (at < r.token_texts.size()) {
        head += ' ';
        head += short_quoted_token(r.token_texts[at], 9);
      }
      head = truncated(head, kCell - 2);
      out << (p + 1 < to ? pad(head, kCell) : head);
    }
    out << "\n";
    for (const LensLayer& layer : l.layers) row(layer_name(layer.layer), layer.top, from, to);
    if (!l.final_top.empty()) row("logits", l.final_top, from, to);
  }
  if (l.last_layer_max_abs_diff)
    out << "lens at the last layer vs the model's logits: max |diff| " << fmt(*l.last_layer_max_abs_diff, "%.3g") << "\n";
  if (!l.final_top.empty()) {
    out << "\nnext token at position " << l.positions.back() << " (top " << l.top_k << ")\n";
    for (const LensToken& t : l.final_top.back())
      out << "  " << pad(std::to_string(t.id), 8) << pad(short_quoted_token(t.text, 25), 20) << fmt(t.prob, "%8.4f")
          << "  logit " << fmt(t.logit, "%.4f") << "\n";
  }
}

OJson finite_or_null(double v) { return std::isfinite(v) ? OJson(v) : OJson(nullptr); }

}  // namespace glass
