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

std::string first_values_text(const std::vector<float>& v, int64_t count) {
  std::string s;
  for (size_t i = 0; i < v.size() && static_cast<int64_t>(i) < count; ++i) {
    if (i) s += ' ';
    s += std::isnan(v[i]) ? "-" : fmt(v[i], "%.4g");
  }
  if (static_cast<int64_t>(v.size()) > count) s += " …";
  return s;
}

}  // namespace

std::string quoted_token(std::string_view text) {
  std::string out = "\"";
  for (unsigned char ch : text) {
    if (ch == '\n') out += "\\n";
    else if (ch == '\t') out += "\\t";
    else if (ch == '\r') out += "\\r";
    else if (ch == '"') out += "\\\"";
    else if (ch == '\\') out += "\\\\";
    else if (ch < 0x20 || ch == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", ch);
      out += buf;
    } else out += static_cast<char>(ch);
  }
  return out + "\"";
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
  const ModelConfig& c = r.config;
  out << "model      " << r.model_dir << " (" << c.num_layers << " layers, hidden " << c.hidden_size << ", "
      << c.num_heads << " query / " << c.num_kv_heads << " KV heads of " << c.head_dim << ", intermediate "
      << c.intermediate_size << ", vocab " << c.vocab_size << ")\n";
  out << "backend    " << r.backend << "\n";
  if (r.prompt_text) out << "prompt     " << quoted_token(*r.prompt_text) << "\n";
  out << "tokens    ";
  for (size_t i = 0; i < r.ids.size(); ++i) {
    out << " " << i << ":" << r.ids[i];
    if (i < r.token_texts.size() && !r.token_texts[i].empty()) out << "=" << quoted_token(r.token_texts[i]);
  }
  out << "\n";
  out << "positions ";
  for (int32_t p : r.positions) out << " " << p;
  out << "\n\n";

  const int32_t shown = r.positions.empty() ? -1 : r.positions.back();
  out << pad("stage", 24) << pad("shape", 34) << "       rms        min        max  first values";
  if (!options.per_position && shown >= 0) out << " (position " << shown << ")";
  out << "\n";
  for (const StageRecord& s : r.stages) {
    out << pad(s.name(), 24) << pad(s.shape_text(), 34) << fmt(s.overall.rms()) << " " << fmt(s.overall.min_or_nan())
        << " " << fmt(s.overall.max_or_nan());
    if (!options.per_position) {
      if (!s.first.empty()) out << "  " << first_values_text(s.first.back(), options.first_values);
      out << "\n";
      continue;
    }
    out << "\n";
    for (size_t p = 0; p < s.positions.size(); ++p) {
      const TensorStats& st = s.per_position[p];
      out << pad("", 24) << pad("  pos " + std::to_string(s.positions[p]), 34) << fmt(st.rms()) << " "
          << fmt(st.min_or_nan()) << " " << fmt(st.max_or_nan()) << "  "
          << first_values_text(s.first[p], options.first_values) << "\n";
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
  out << "\nlogit lens: the most probable next token when the final norm and lm_head read each layer's residual stream\n";
  constexpr size_t kCell = 18;
  out << pad("", 10);
  for (size_t p = 0; p < l.positions.size(); ++p) {
    std::string head = "pos " + std::to_string(l.positions[p]);
    const auto at = static_cast<size_t>(l.positions[p]);
    if (at < r.token_texts.size()) {
      head += ' ';
      head += quoted_token(truncated(r.token_texts[at], 8));
    }
    out << pad(truncated(head, kCell - 2), kCell);
  }
  out << "\n";
  auto row = [&](const std::string& label, const std::vector<std::vector<LensToken>>& top) {
    out << pad(label, 10);
    for (const auto& cell : top) {
      if (cell.empty()) {
        out << pad("", kCell);
        continue;
      }
      const LensToken& t = cell.front();
      std::string name(1, '#');
      if (t.text.empty()) name += std::to_string(t.id);
      else name = quoted_token(truncated(t.text, 8));
      out << pad(name + " " + fmt(t.prob, "%.3f"), kCell);
    }
    out << "\n";
  };
  for (const LensLayer& layer : l.layers) row(layer_name(layer.layer), layer.top);
  if (!l.final_top.empty()) row("logits", l.final_top);
  if (l.last_layer_max_abs_diff)
    out << "lens at the last layer vs the model's logits: max |diff| " << fmt(*l.last_layer_max_abs_diff, "%.3g") << "\n";
  if (!l.final_top.empty()) {
    out << "\nnext token at position " << l.positions.back() << " (top " << l.top_k << ")\n";
    for (const LensToken& t : l.final_top.back())
      out << "  " << pad(std::to_string(t.id), 8) << pad(quoted_token(t.text), 20) << fmt(t.prob, "%8.4f") << "  logit "
          << fmt(t.logit, "%.4f") << "\n";
  }
}

OJson finite_or_null(double v) { return std::isfinite(v) ? OJson(v) : OJson(nullptr); }

}  // namespace glass
