// --dump: the recorded tensors as .npy files with an index.json, written as a whole.
#include <unistd.h>

#include <filesystem>
#include <system_error>

#include "base/error.h"
#include "base/json_fields.h"
#include "base/mapped_file.h"
#include "trace/npy.h"
#include "trace/trace_report.h"

namespace glass {

namespace fs = std::filesystem;

namespace {

constexpr const char* kDumpFormat = "glass-trace-dump";

// Whether `dir` may be replaced: absent, empty, or holding an earlier dump.
void check_replaceable(const fs::path& dir) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(dir, ec);
  if (!fs::exists(st)) return;
  if (!fs::is_directory(st)) fail("--dump ", dir.string(), ": exists and is not a folder");
  if (fs::is_empty(dir, ec)) return;
  const fs::path index = dir / "index.json";
  bool earlier_dump = false;
  if (fs::is_regular_file(index, ec)) {
    try {
      const Json j = read_json_file(index.string());
      earlier_dump = j.is_object() && j.value("format", "") == kDumpFormat;
    } catch (const Error&) {
      earlier_dump = false;
    }
  }
  if (!earlier_dump)
    fail("--dump ", dir.string(), ": the folder is not empty and is not an earlier glass trace dump; ",
         "refusing to replace it");
}

Json index_entry(const StageRecord& s, const std::string& file) {
  Json axes = Json::array();
  for (const NamedAxis& a : s.axes) axes.push_back(a.name);
  Json e = {{"file", file},          {"name", s.name()},         {"stage", s.stage},
            {"layer", s.layer >= 0 ? Json(s.layer) : Json(nullptr)},
            {"axes", axes},          {"shape", s.shape()},       {"dtype", "<f4"},
            {"positions", s.positions}, {"tokens", s.tokens}};
  if (s.stage == "attn_scores") e["padding"] = "-inf past each row's position on the keys axis (the causal mask)";
  if (s.stage == "attn_weights") e["padding"] = "-1 past each row's position on the keys axis";
  return e;
}

}  // namespace

void write_trace_dump(const std::string& dir_name, const TraceReport& report) {
  // "out/" names the folder "out": drop trailing slashes so filename() is not empty.
  std::string trimmed = dir_name;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  const fs::path dir(trimmed);
  if (dir.filename().empty() || dir.filename() == "." || dir.filename() == "..")
    fail("--dump ", dir_name, ": name a folder to create (not . or / or ..)");
  check_replaceable(dir);
  const fs::path parent = dir.has_parent_path() ? dir.parent_path() : fs::path(".");
  const std::string pid = std::to_string(::getpid());
  // Hidden siblings (built with += : GCC 12 warns falsely about "literal" + std::string).
  std::string hidden(1, '.');
  hidden += dir.filename().string();
  const fs::path tmp = parent / (hidden + ".tmp." + pid);
  const fs::path old = parent / (hidden + ".old." + pid);
  std::error_code ec;
  fs::remove_all(tmp, ec);
  if (!fs::create_directory(tmp, ec) || ec)
    fail("--dump ", dir_name, ": cannot create the folder ", tmp.string(), ": ", ec.message());
  try {
    Json tensors = Json::array();
    for (const StageRecord& s : report.stages) {
      if (s.data.empty() && s.row_size() * static_cast<int64_t>(s.positions.size()) != 0) continue;
      const std::string file = s.name() + ".npy";
      write_npy((tmp / file).string(), s.shape(), s.data);
      tensors.push_back(index_entry(s, file));
    }
    Json prompt = Json::object();
    if (report.prompt_text) prompt["text"] = *report.prompt_text;
    prompt["ids"] = report.ids;
    prompt["tokens"] = report.token_texts;
    const Json index = {{"format", kDumpFormat}, {"version", 1},        {"model", report.model_dir},
                        {"prompt", prompt},      {"positions", report.positions}, {"tensors", tensors}};
    const std::string text = index.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
    write_file_atomic((tmp / "index.json").string(), text.data(), text.size());

    // Swap the finished folder into place; an earlier dump is moved aside first.
    const bool existed = fs::exists(fs::symlink_status(dir, ec));
    if (existed) {
      fs::rename(dir, old, ec);
      if (ec) fail("--dump ", dir_name, ": cannot move the earlier dump aside: ", ec.message());
    }
    fs::rename(tmp, dir, ec);
    if (ec) {
      const std::string why = ec.message();
      if (existed) fs::rename(old, dir, ec);
      fail("--dump ", dir_name, ": cannot move the new dump into place: ", why);
    }
    if (existed) fs::remove_all(old, ec);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
}

}  // namespace glass
