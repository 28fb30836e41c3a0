// glass trace --html: one page a person can read at a glance. Everything is rendered
// here as static HTML and SVG, so the page shows its content even with scripts off;
// the inline script only adds the details panel (hover a lens cell, click a position).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "trace/axis_ticks.h"
#include "trace/trace_report.h"

namespace glass {

namespace {

using OJson = nlohmann::ordered_json;

std::string escape_html(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// Token text with its whitespace made visible (a leading space is most of what
// distinguishes " the" from "the").
std::string visible_token(std::string_view s) {
  if (s.empty()) return "∅";
  std::string out;
  for (unsigned char c : s) {
    if (c == ' ') out += "␣";
    else if (c == '\n') out += "↵";
    else if (c == '\t') out += "⇥";
    else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else out += static_cast<char>(c);
  }
  return out;
}

// The visible text of a token, or "#id" when there is no text. (Built with += : GCC 12
// warns falsely about "literal" + std::string.)
std::string shown_token(std::string_view text, int32_t id) {
  if (!text.empty()) return visible_token(text);
  std::string s(1, '#');
  s += std::to_string(id);
  return s;
}

std::string token_label(const LensToken& t) { return shown_token(t.text, t.id); }

std::string num(double v, const char* spec) {
  char buf[64];
  std::snprintf(buf, sizeof buf, spec, v);
  return buf;
}

std::string percent(double p) { return p >= 0.0995 ? num(100 * p, "%.0f%%") : num(100 * p, "%.1f%%"); }

// JSON for a <script type="application/json"> block: "</" cannot end the element.
std::string script_json(const OJson& j) {
  std::string s = j.dump(-1, ' ', false, OJson::error_handler_t::replace);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') out += "\\u003c";
    else out += s[i];
  }
  return out;
}

// Tokens are often Chinese, Japanese or Korean: each stack names CJK fonts after the Latin
// ones (Debian: fonts-noto-cjk, fonts-wqy-microhei), which draw those characters where
// the Latin fonts would show missing-glyph boxes.
const char* kStyle = R"CSS(
:root { --ink:#1c2430; --muted:#5b6675; --line:#d9dee5; --accent:#1d5fd1; --bg:#fbfcfd; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px 32px 48px;
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "Noto Sans CJK SC", "WenQuanYi Micro Hei", sans-serif;
       color: var(--ink); background: var(--bg); }
h1 { font-size: 22px; margin: 0 0 4px; }
h1 span { color: var(--accent); }
h2 { font-size: 16px; margin: 28px 0 8px; }
p.note { color: var(--muted); margin: 0 0 10px; max-width: 900px; }
.meta { color: var(--muted); font-size: 13px; }
.mono, .tok, td.cell, .bar-label { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, "Noto Sans Mono CJK SC",
                                     "WenQuanYi Micro Hei Mono", monospace; }
.tokens { display: flex; flex-wrap: wrap; gap: 6px; }
.tok { display: inline-flex; flex-direction: column; align-items: center; padding: 3px 7px; border: 1px solid var(--line);
       border-radius: 6px; background: #fff; font-size: 13px; white-space: pre; }
.tok i { font-style: normal; color: var(--muted); font-size: 10px; }
.grid-wrap { overflow: auto; max-height: 640px; border: 1px solid var(--line); border-radius: 8px; background: #fff; }
table.lens { border-collapse: collapse; font-size: 12px; }
table.lens th { position: sticky; top: 0; background: #f2f4f7; font-weight: 600; padding: 4px 6px;
                border-bottom: 1px solid var(--line); white-space: pre; cursor: pointer; }
table.lens th.row { position: sticky; left: 0; z-index: 1; text-align: right; cursor: default; }
table.lens tr.final th.row, table.lens tr.final td { border-top: 2px solid var(--ink); }
td.cell { padding: 3px 6px; min-width: 64px; max-width: 120px; overflow: hidden; text-overflow: ellipsis;
          white-space: pre; border: 1px solid #eef0f3; cursor: default; }
td.cell small { display: block; font-size: 10px; opacity: .75; }
td.cell.dark { color: #fff; }
td.cell.sel, th.sel { outline: 2px solid #e8590c; outline-offset: -2px; }
.panels { display: flex; flex-wrap: wrap; gap: 24px; align-items: flex-start; }
.panel { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; }
.bars { width: 400px; }
.bar-row { display: grid; grid-template-columns: 150px 1fr 58px; gap: 8px; align-items: center; margin: 3px 0; }
.bar-label { white-space: pre; overflow: hidden; text-overflow: ellipsis; font-size: 12px; }
.bar { height: 14px; background: var(--accent); border-radius: 3px; min-width: 1px; }
.bar-value { text-align: right; font-variant-numeric: tabular-nums; font-size: 12px; color: var(--muted); }
.legend { display: flex; align-items: center; gap: 8px; font-size: 12px; color: var(--muted); margin: 6px 0; }
.legend .ramp { width: 160px; height: 10px; border-radius: 3px;
                background: linear-gradient(90deg, rgba(29,95,209,0), rgba(29,95,209,1)); border: 1px solid var(--line); }
svg text { font: 11px system-ui, "Noto Sans CJK SC", "WenQuanYi Micro Hei", sans-serif; fill: var(--muted); }
svg .title { fill: var(--ink); font-weight: 600; }
table.stages { border-collapse: collapse; font-size: 12px; }
table.stages td, table.stages th { padding: 2px 10px 2px 0; text-align: right; white-space: nowrap; }
table.stages td:first-child, table.stages td:nth-child(2), table.stages th:first-child, table.stages th:nth-child(2) { text-align: left; }
details summary { cursor: pointer; color: var(--accent); }
table.experts td.cell span { display: block; padding-left: 4px; margin: 1px 0; font-size: 11px; }
)CSS";

// Lines of rms against layer for the per-layer stages that were traced.
std::string rms_chart(const TraceReport& r) {
  struct Series {
    const char* stage;
    const char* label;
    const char* color;
  };
  const Series series[] = {{"output", "residual stream (layer output)", "#1d5fd1"},
                           {"attn_residual", "residual after attention", "#7aa5ef"},
                           {"o_proj", "attention contribution (o_proj)", "#e8590c"},
                           {"down", "MLP contribution (down)", "#2f9e44"},
                           {"moe_out", "experts' contribution (moe_out)", "#2f9e44"},
                           {"attn_norm", "input norm", "#9c36b5"}};
  std::map<std::string, std::map<int, double>> values;
  for (const StageRecord& s : r.stages)
    if (s.layer >= 0 && s.overall.count > 0) values[s.stage][s.layer] = s.overall.rms();
  int max_layer = -1;
  double lo = INFINITY, hi = 0;
  for (const Series& se : series)
    for (const auto& [layer, v] : values[se.stage]) {
      max_layer = std::max(max_layer, layer);
      if (v > 0) lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  if (max_layer < 0 || hi <= 0) return "<p class=\"note\">No per-layer stages were traced (see --stages).</p>";

  // A log scale when the curves span more than a factor of 30.
  const bool log_scale = lo > 0 && hi / lo > 30;
  const double y0 = log_scale ? std::log10(lo) : 0.0;
  const double y1 = log_scale ? std::log10(hi) : hi * 1.08;
  const double W = 640, H = 300, left = 56, right = 16, top = 24, bottom = 40;
  auto X = [&](int layer) { return left + (max_layer == 0 ? 0.5 : layer / double(max_layer)) * (W - left - right); };
  auto Y = [&](double v) {
    const double t = log_scale ? std::log10(std::max(v, lo)) : v;
    return top + (1 - (t - y0) / (y1 - y0 == 0 ? 1 : y1 - y0)) * (H - top - bottom);
  };
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(W, "%.0f") + "\" height=\"" +
                    num(H, "%.0f") + "\" viewBox=\"0 0 " + num(W, "%.0f") + " " + num(H, "%.0f") +
                    "\" role=\"img\" aria-label=\"rms per layer\">";
  svg += "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#fff\"/>";
  // Grid lines and y labels at round numbers.
  for (const double v : log_scale ? nice_log_ticks(lo, hi) : nice_ticks(0, y1)) {
    const double y = Y(v);
    svg += "<line x1=\"" + num(left, "%.1f") + "\" x2=\"" + num(W - right, "%.1f") + "\" y1=\"" + num(y, "%.1f") +
           "\" y2=\"" + num(y, "%.1f") + "\" stroke=\"#eef0f3\"/>";
    svg += "<text class=\"tick\" x=\"" + num(left - 6, "%.1f") + "\" y=\"" + num(y + 4, "%.1f") +
           "\" text-anchor=\"end\">" + tick_label(v) + "</text>";
  }
  const int step = std::max(1, (max_layer + 1) / 12);
  for (int l = 0; l <= max_layer; l += step)
    svg += "<text x=\"" + num(X(l), "%.1f") + "\" y=\"" + num(H - bottom + 16, "%.1f") + "\" text-anchor=\"middle\">" +
           std::to_string(l) + "</text>";
  svg += "<text x=\"" + num((left + W - right) / 2, "%.1f") + "\" y=\"" + num(H - 6, "%.1f") +
         "\" text-anchor=\"middle\">layer</text>";
  svg += std::string("<text class=\"title\" x=\"") + num(left, "%.1f") + "\" y=\"14\">rms over the traced positions" +
         (log_scale ? " (log scale)" : "") + "</text>";
  std::string legend;
  for (const Series& se : series) {
    const auto& pts = values[se.stage];
    if (pts.empty()) continue;
    std::string path;
    for (const auto& [layer, v] : pts) path += (path.empty() ? "M" : " L") + num(X(layer), "%.1f") + " " + num(Y(v), "%.1f");
    svg += std::string("<path d=\"") + path + "\" fill=\"none\" stroke=\"" + se.color + "\" stroke-width=\"2\"/>";
    for (const auto& [layer, v] : pts)
      svg += std::string("<circle cx=\"") + num(X(layer), "%.1f") + "\" cy=\"" + num(Y(v), "%.1f") + "\" r=\"3\" fill=\"" +
             se.color + "\"><title>" + se.stage + " layer " + std::to_string(layer) + ": rms " + num(v, "%.4g") +
             "</title></circle>";
    legend += std::string("<div class=\"legend\"><svg width=\"18\" height=\"4\"><rect width=\"18\" height=\"4\" fill=\"") +
              se.color + "\"/></svg>" + escape_html(se.label) + "</div>";
  }
  svg += "</svg>";
  return "<div class=\"panels\"><div class=\"panel\">" + svg + "</div><div>" + legend + "</div></div>";
}

std::string bars(const std::vector<LensToken>& top) {
  std::string out;
  for (const LensToken& t : top) {
    out += "<div class=\"bar-row\"><span class=\"bar-label\" title=\"id " + std::to_string(t.id) + "\">" +
           escape_html(token_label(t)) + "</span><div><div class=\"bar\" style=\"width:" +
           num(std::clamp(100 * t.prob, 0.0, 100.0), "%.2f") + "%\"></div></div><span class=\"bar-value\">" +
           percent(t.prob) + "</span></div>";
  }
  return out;
}

std::string lens_cell(const std::vector<LensToken>& top, size_t li, size_t pi, const std::string& row_name,
                      int32_t position, bool selected) {
  if (top.empty()) return "<td class=\"cell\"></td>";
  const LensToken& t = top.front();
  const double a = std::clamp(t.prob, 0.0, 1.0);
  std::string title = row_name + ", position " + std::to_string(position) + ":";
  for (const LensToken& c : top) {
    title += '\n';
    title += token_label(c);
    title += "  ";
    title += percent(c.prob);
  }
  return "<td class=\"cell" + std::string(a > 0.55 ? " dark" : "") + (selected ? " sel" : "") + "\" data-l=\"" +
         std::to_string(li) + "\" data-p=\"" + std::to_string(pi) + "\" style=\"background:rgba(29,95,209," +
         num(a, "%.3f") + ")\" title=\"" + escape_html(title) + "\">" + escape_html(token_label(t)) + "<small>" +
         percent(t.prob) + "</small></td>";
}

// A hue per expert, spread by the golden angle so that neighbouring ids differ.
std::string expert_color(int32_t expert, double alpha) {
  const double hue = std::fmod(expert * 137.508, 360.0);
  return "hsla(" + num(hue, "%.0f") + ",70%,55%," + num(alpha, "%.2f") + ")";
}

// Layers down, positions across: each cell lists the experts the token took, heaviest
// first, and is tinted with the heaviest one's colour.
std::string routing_grid(const TraceReport& r) {
  const ExpertRouting& routing = *r.routing;
  std::string h = "<div class=\"panels\"><div class=\"grid-wrap\"><table class=\"lens experts\"><thead><tr><th class=\"row\">layer</th>";
  for (const int32_t p : routing.positions) {
    const auto at = static_cast<size_t>(p);
    const std::string text = at < r.token_texts.size() ? r.token_texts[at] : "";
    h += "<th>" + std::to_string(p) + "\n" + escape_html(shown_token(text, at < r.ids.size() ? r.ids[at] : -1)) + "</th>";
  }
  h += "</tr></thead><tbody>";
  for (const ExpertRoutingLayer& layer : routing.layers) {
    h += "<tr><th class=\"row\">layer " + std::to_string(layer.layer) + "</th>";
    for (size_t p = 0; p < layer.chosen.size(); ++p) {
      const auto& chosen = layer.chosen[p];
      std::string cell, title = "layer " + std::to_string(layer.layer) + ", position " +
                                std::to_string(routing.positions[p]) + ":";
      for (const ExpertChoice& ch : chosen) {
        cell += "<span style=\"border-left:4px solid " + expert_color(ch.expert, 1) + "\">e" + std::to_string(ch.expert) +
                " " + percent(ch.weight) + "</span>";
        title += "\nexpert " + std::to_string(ch.expert) + "  weight " + num(ch.weight, "%.3f");
      }
      const std::string tint = chosen.empty() ? "transparent" : expert_color(chosen.front().expert, 0.18);
      h += "<td class=\"cell\" style=\"background:" + tint + "\" title=\"" + escape_html(title) + "\">" + cell + "</td>";
    }
    h += "</tr>";
  }
  return h + "</tbody></table></div></div>\n";
}

const char* kScript = R"JS(
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("glass-lens-data").textContent);
  var detail = document.getElementById("detail");
  function label(t) {
    if (!t.text) return "#" + t.id;
    return t.text.replace(/ /g, "\u2423").replace(/\n/g, "\u21b5").replace(/\t/g, "\u21e5");
  }
  function pct(p) { return (p >= 0.0995 ? (100 * p).toFixed(0) : (100 * p).toFixed(1)) + "%"; }
  function renderBars(el, top) {
    el.textContent = "";
    top.forEach(function (t) {
      var row = document.createElement("div"); row.className = "bar-row";
      var l = document.createElement("span"); l.className = "bar-label"; l.textContent = label(t); l.title = "id " + t.id;
      var wrap = document.createElement("div");
      var bar = document.createElement("div"); bar.className = "bar";
      bar.style.width = Math.max(0, Math.min(100, 100 * t.prob)).toFixed(2) + "%";
      wrap.appendChild(bar);
      var v = document.createElement("span"); v.className = "bar-value"; v.textContent = pct(t.prob);
      row.appendChild(l); row.appendChild(wrap); row.appendChild(v);
      el.appendChild(row);
    });
  }
  var cells = document.querySelectorAll("td.cell[data-l]");
  Array.prototype.forEach.call(cells, function (td) {
    td.addEventListener("mouseenter", function () {
      var li = +td.getAttribute("data-l"), pi = +td.getAttribute("data-p");
      var row = data.rows[li];
      document.getElementById("detail-title").textContent =
        (row.final ? "Next token" : row.name) + " at position " + data.positions[pi] +
        " (input " + label({id: data.tokens[pi], text: data.token_texts[pi]}) + ")";
      renderBars(detail, row.top[pi]);
      Array.prototype.forEach.call(document.querySelectorAll(".sel"), function (e) { e.classList.remove("sel"); });
      td.classList.add("sel");
    });
  });
  // A position's header shows the model's prediction there: its cell in the logits row.
  var heads = document.querySelectorAll("th[data-p]");
  Array.prototype.forEach.call(heads, function (th) {
    th.addEventListener("click", function () {
      var li = data.rows.length - 1;
      if (li < 0 || !data.rows[li].final) return;
      var td = document.querySelector("td.cell[data-l=\"" + li + "\"][data-p=\"" + th.getAttribute("data-p") + "\"]");
      if (td) td.dispatchEvent(new Event("mouseenter"));
    });
  });
  document.body.setAttribute("data-glass-ready", "yes");
})();
)JS";

}  // namespace

std::string trace_report_html(const TraceReport& r) {
  const ModelConfig& c = r.config;
  std::string h;
  h += "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  h += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  h += "<title>glass trace: " + escape_html(r.model_dir) + "</title><style>" + std::string(kStyle) + "</style></head>\n";
  // Errors in the script are reported on the page itself, so a test reading the DOM sees them.
  h += "<body><script>window.addEventListener(\"error\", function (e) { document.documentElement.setAttribute("
       "\"data-glass-error\", String(e.message)); });</script>\n";
  h += "<header><h1><span>glass</span> trace</h1><div class=\"meta\">" + escape_html(r.model_dir) + " · " +
       std::to_string(c.num_layers) + " layers, hidden " + std::to_string(c.hidden_size) + ", " +
       std::to_string(c.num_heads) + " query / " + std::to_string(c.num_kv_heads) + " KV heads, vocab " +
       std::to_string(c.vocab_size) + " · " + escape_html(r.backend) + "</div></header>\n";

  // Prompt tokens.
  h += "<h2>Prompt: " + std::to_string(r.ids.size()) + " tokens</h2>";
  if (r.prompt_text) h += "<p class=\"note mono\">" + escape_html(visible_token(*r.prompt_text)) + "</p>";
  h += "<div class=\"tokens\">";
  for (size_t i = 0; i < r.ids.size(); ++i) {
    const std::string text = i < r.token_texts.size() ? r.token_texts[i] : "";
    h += "<span class=\"tok\" title=\"position " + std::to_string(i) + ", id " + std::to_string(r.ids[i]) + "\">" +
         escape_html(shown_token(text, r.ids[i])) + "<i>" +
         std::to_string(i) + " · " + std::to_string(r.ids[i]) + "</i></span>";
  }
  h += "</div>\n";

  // Logit lens grid.
  OJson data = {{"positions", OJson::array()}, {"tokens", OJson::array()}, {"token_texts", OJson::array()},
                {"rows", OJson::array()}};
  if (r.lens) {
    const LogitLens& l = *r.lens;
    h += "<h2>Logit lens</h2><p class=\"note\">Each cell is the most probable next token when the final norm and "
         "lm_head read that layer's residual stream at that position; its shade is that token's probability. The "
         "last row is the model's own prediction. Hover a cell for its top " +
         std::to_string(l.top_k) + " in the panel; click a position for the model's prediction there.</p>";
    h += "<div class=\"legend\">probability 0 <span class=\"ramp\"></span> 1</div>";
    h += "<div class=\"panels\"><div class=\"grid-wrap\"><table class=\"lens\"><thead><tr><th class=\"row\">layer</th>";
    for (size_t p = 0; p < l.positions.size(); ++p) {
      const auto at = static_cast<size_t>(l.positions[p]);
      const std::string text = at < r.token_texts.size() ? r.token_texts[at] : "";
      h += "<th data-p=\"" + std::to_string(p) + "\" title=\"input token " +
           std::to_string(p < l.tokens.size() ? l.tokens[p] : -1) + "\">" + std::to_string(l.positions[p]) + "\n" +
           escape_html(shown_token(text, p < l.tokens.size() ? l.tokens[p] : -1)) +
           "</th>";
      data["positions"].push_back(l.positions[p]);
      data["tokens"].push_back(p < l.tokens.size() ? l.tokens[p] : -1);
      data["token_texts"].push_back(text);
    }
    h += "</tr></thead><tbody>";
    auto add_row = [&](const std::string& name, const std::vector<std::vector<LensToken>>& top, bool final) {
      const size_t li = data["rows"].size();
      h += std::string("<tr") + (final ? " class=\"final\"" : "") + "><th class=\"row\">" + escape_html(name) + "</th>";
      OJson row_top = OJson::array();
      for (size_t p = 0; p < top.size(); ++p) {
        h += lens_cell(top[p], li, p, name, l.positions[p], final && p + 1 == top.size());
        OJson cell = OJson::array();
        for (const LensToken& t : top[p]) cell.push_back({{"id", t.id}, {"text", t.text}, {"prob", t.prob}});
        row_top.push_back(std::move(cell));
      }
      h += "</tr>";
      data["rows"].push_back({{"name", name}, {"final", final}, {"top", row_top}});
    };
    for (const LensLayer& layer : l.layers) add_row("layer " + std::to_string(layer.layer), layer.top, false);
    if (!l.final_top.empty()) add_row("logits", l.final_top, true);
    h += "</tbody></table></div>";
    // One panel for the details: it opens on the model's prediction at the last position
    // (rendered here, so it shows without scripts too) and follows the pointer.
    h += "<div class=\"panel bars\"><b id=\"detail-title\">";
    if (!l.final_top.empty()) {
      const size_t last = l.positions.size() - 1;
      const auto at = static_cast<size_t>(l.positions[last]);
      h += "Next token at position " + std::to_string(l.positions[last]) + " (input " +
           escape_html(shown_token(at < r.token_texts.size() ? r.token_texts[at] : "",
                                   last < l.tokens.size() ? l.tokens[last] : -1)) +
           ")";
      h += "</b><div id=\"detail\">" + bars(l.final_top.back()) + "</div></div></div>\n";
    } else {
      h += "Hover a cell</b><div id=\"detail\"></div></div></div>\n";
    }
    if (l.last_layer_max_abs_diff) {
      if (*l.last_layer_max_abs_diff == 0)
        h += "<p class=\"note\">The lens at the last layer reproduces the model's logits exactly (max |difference| 0): "
             "it is the same computation.</p>";
      else
        h += "<p class=\"note\">The lens at the last layer matches the model's logits to within " +
             num(*l.last_layer_max_abs_diff, "%.2g") + " (max |difference|).</p>";
    }
  }

  if (r.routing && !r.routing->layers.empty()) {
    h += "<h2>Experts chosen</h2><p class=\"note\">Each cell lists the experts (of " +
         std::to_string(r.routing->experts) +
         ") the router sent that token to in that layer, heaviest first, with the weights their outputs are summed "
         "with; the tint is the heaviest expert's colour.</p>";
    h += routing_grid(r);
  }

  // Per-layer rms curves.
  h += "<h2>RMS per layer</h2><p class=\"note\">The size of the residual stream and of what attention and the MLP "
       "add to it, layer by layer.</p>";
  h += rms_chart(r);

  // Every stage, for reference.
  h += "<h2>Stages</h2><details><summary>" + std::to_string(r.stages.size()) +
       " traced stages: shape, rms, min, max</summary><table class=\"stages mono\"><tr><th>stage</th><th>shape</th>"
       "<th>rms</th><th>min</th><th>max</th></tr>";
  for (const StageRecord& s : r.stages)
    h += "<tr><td>" + escape_html(s.name()) + "</td><td>" + escape_html(s.shape_text()) + "</td><td>" +
         num(s.overall.rms(), "%.4g") + "</td><td>" + num(s.overall.min_or_nan(), "%.4g") + "</td><td>" +
         num(s.overall.max_or_nan(), "%.4g") + "</td></tr>";
  h += "</table></details>\n";

  h += "<script type=\"application/json\" id=\"glass-lens-data\">" + script_json(data) + "</script>\n";
  h += "<script>" + std::string(kScript) + "</script>\n</body></html>\n";
  return h;
}

}  // namespace glass
