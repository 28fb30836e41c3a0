// glass tokenize / detokenize / bench-tokenizer: the tokenizer from the command line.
#include <chrono>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include "runtime/model_files.h"
#include "base/error.h"
#include "base/json_fields.h"
#include "base/mapped_file.h"
#include "cli/commands.h"
#include "cli/model_source.h"
#include "cli/token_ids.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace glass::cli {

namespace {

// -m DIR or tokenizer.json; without it the demo model's tokenizer, which is the real
// Qwen2.5 tokenizer (the demo's random weights do not matter here).
Tokenizer load_tokenizer(const std::string& flag) {
  if (!flag.empty()) {
    return load_model_tokenizer(local_model_path(flag, "tokenizer.json"));
  }
  std::cerr << "glass: no -m given: using the built-in demo model's tokenizer (the real Qwen2.5 tokenizer)\n";
  return load_model_tokenizer(demo_model_dir());
}

// Bytes as a JSON-style string literal; bytes that are not UTF-8 (half a character) as \xNN.
std::string quote_bytes(std::string_view bytes) {
  std::string out = "\"";
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t i = 0;
  while (i < bytes.size()) {
    const utf8::Sequence s = utf8::classify(p + i, bytes.size() - i);
    if (s.kind != utf8::SequenceKind::kComplete) {
      for (size_t k = 0; k < s.length; ++k) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", p[i + k]);
        out += buf;
      }
      i += s.length;
      continue;
    }
    if (s.length == 1) {
      const unsigned char c = p[i];
      if (c == '"' || c == '\\') {
        out += '\\';
        out += static_cast<char>(c);
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == '\r') {
        out += "\\r";
      } else if (c == '\t') {
        out += "\\t";
      } else if (c < 0x20 || c == 0x7F) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += static_cast<char>(c);
      }
    } else {
      out.append(bytes.substr(i, s.length));
    }
    i += s.length;
  }
  return out + "\"";
}

// `s` and spaces up to `width` characters (code points, close enough for a table).
std::string pad(const std::string& s, size_t width) {
  size_t chars = 0;
  for (char c : s) chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return chars >= width ? s : s + std::string(width - chars, ' ');
}

// Reads stdin line by line; `handle` gets each line's JSON value.
template <class F>
void for_each_jsonl_line(F&& handle) {
  std::string line;
  size_t n = 0;
  while (read_line(std::cin, line, str_cat("stdin line ", n + 1))) {
    ++n;
    const std::string where = str_cat("stdin line ", n);
    handle(parse_json(line, where), where);
  }
}

void check_ids(const Tokenizer& t, const std::vector<int32_t>& ids, const std::string& where) {
  for (int32_t id : ids)
    if (!t.has_token(id))
      fail(where, ": token id ", id, " is not in the vocabulary of ", t.source(), " (size ", t.vocab_size(), ")");
}

}  // namespace

Command add_tokenize_command(CLI::App& app) {
  struct Options {
    std::string model, text;
    bool jsonl = false, special_as_text = false, show_pieces = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("tokenize", "Text to token ids");
  sub->add_option("-m,--model", o->model, "Folder with tokenizer.json (or vocab.json + merges.txt), a tokenizer.json, or a GGUF file (default: the built-in demo model's Qwen2.5 tokenizer)");
  sub->add_option("--text", o->text, "One text: prints its ids, then each token's id, vocabulary string and bytes");
  sub->add_flag("--jsonl", o->jsonl, "Read one JSON string per line on stdin; write one JSON array of ids per line");
  sub->add_flag("--special-as-text", o->special_as_text, "Tokenize special tokens written in the text (<|im_end|>, ...) as plain text");
  sub->add_flag("--show-pieces", o->show_pieces, "With --text: also list the pre-tokenizer's pieces");
  sub->callback([sub, o] {
    if (o->jsonl == (sub->count("--text") > 0)) throw CLI::ValidationError("tokenize", "give exactly one of --text and --jsonl");
  });

  return {sub, [o] {
            const Tokenizer t = load_tokenizer(o->model);
            EncodeOptions options;
            options.parse_special = !o->special_as_text;
            if (o->jsonl) {
              std::vector<int32_t> ids;
              std::string out;
              for_each_jsonl_line([&](const Json& v, const std::string& where) {
                if (!v.is_string()) fail(where, ": expected a JSON string, got ", json_type_name(v));
                ids.clear();
                t.encode(v.get_ref<const std::string&>(), ids, options);
                out = Json(ids).dump();
                out += '\n';
                std::fwrite(out.data(), 1, out.size(), stdout);
              });
              return 0;
            }
            const std::vector<int32_t> ids = t.encode(o->text, options);
            std::ostringstream os;
            for (size_t i = 0; i < ids.size(); ++i) os << (i ? " " : "") << ids[i];
            os << "\n" << ids.size() << (ids.size() == 1 ? " token" : " tokens") << "\n";
            os << std::setw(8) << "id" << "  " << pad("token", 20) << "  bytes\n";
            for (int32_t id : ids)
              os << std::setw(8) << id << "  " << pad(Json(t.token_text(id)).dump(), 20) << "  "
                 << quote_bytes(t.token_bytes(id)) << (t.is_special(id) ? "  (special)" : "") << "\n";
            if (o->show_pieces) {
              os << "pieces BPE encodes (normalized, pre-tokenized; added tokens whole):\n";
              for (const std::string& p : t.pre_tokenize(o->text)) os << "  " << quote_bytes(p) << "\n";
            }
            std::cout << os.str();
            return 0;
          }};
}

Command add_detokenize_command(CLI::App& app) {
  struct Options {
    std::string model, ids;
    bool jsonl = false, skip_special = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("detokenize", "Token ids to text");
  sub->add_option("-m,--model", o->model, "Folder with tokenizer.json (or vocab.json + merges.txt), a tokenizer.json, or a GGUF file (default: the built-in demo model's Qwen2.5 tokenizer)");
  sub->add_option("--ids", o->ids, "Token ids, e.g. \"9707 11 1879\": prints their text and a newline");
  sub->add_flag("--jsonl", o->jsonl, "Read one JSON array of ids per line on stdin; write one JSON string per line");
  sub->add_flag("--skip-special", o->skip_special, "Leave out special tokens");
  sub->callback([sub, o] {
    if (o->jsonl == (sub->count("--ids") > 0)) throw CLI::ValidationError("detokenize", "give exactly one of --ids and --jsonl");
  });

  return {sub, [o] {
            const Tokenizer t = load_tokenizer(o->model);
            if (o->jsonl) {
              std::string out;
              for_each_jsonl_line([&](const Json& v, const std::string& where) {
                if (!v.is_array()) fail(where, ": expected a JSON array of token ids, got ", json_type_name(v));
                std::vector<int32_t> ids;
                for (const Json& id : v) {
                  if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
                    fail(where, ": ", json_excerpt(id), " is not a token id");
                  ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
                }
                check_ids(t, ids, where);
                out = Json(t.decode(ids, o->skip_special)).dump();
                out += '\n';
                std::fwrite(out.data(), 1, out.size(), stdout);
              });
              return 0;
            }
            const std::vector<int32_t> ids = parse_token_ids(o->ids, "--ids");
            check_ids(t, ids, "--ids");
            std::cout << t.decode(ids, o->skip_special) << "\n";
            return 0;
          }};
}

Command add_bench_tokenizer_command(CLI::App& app) {
  struct Options {
    std::string model, file;
    int repeat = 5;
    bool pcre2 = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("bench-tokenizer", "Encode throughput on a text file, one thread");
  sub->add_option("-m,--model", o->model, "Folder with tokenizer.json, a tokenizer.json, or a GGUF file (default: the built-in demo model's Qwen2.5 tokenizer)");
  sub->add_option("FILE", o->file, "UTF-8 text to encode as one string")->required();
  sub->add_option("--repeat", o->repeat, "Timed runs; the best is reported")->check(CLI::Range(1, 1000));
  sub->add_flag("--pcre2", o->pcre2, "Split with PCRE2 even where the hand-written splitter applies");

  return {sub, [o] {
            const Tokenizer t = load_tokenizer(o->model);
            const std::string text = read_text_file(o->file, kMaxTextFileBytes, "a text to tokenize");
            EncodeOptions options;
            options.fast_split = !o->pcre2;
            std::vector<int32_t> ids;
            double best = 1e30, best_decode = 1e30;
            std::string decoded;
            for (int r = 0; r < o->repeat; ++r) {
              ids.clear();
              const auto t0 = std::chrono::steady_clock::now();
              t.encode(text, ids, options);
              const auto t1 = std::chrono::steady_clock::now();
              decoded = t.decode(ids);
              const auto t2 = std::chrono::steady_clock::now();
              best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
              best_decode = std::min(best_decode, std::chrono::duration<double>(t2 - t1).count());
            }
            const double mb = static_cast<double>(text.size()) / 1e6;
            const double n = static_cast<double>(ids.size());
            std::printf("glass encode: %.2f MB -> %s tokens in %.4f s = %.2f MB/s, %.2f Mtok/s (best of %d, one thread, %s split)\n",
                        mb, format_count(ids.size()).c_str(), best, mb / best, n / best / 1e6, o->repeat,
                        o->pcre2 || !t.has_fast_split() ? "PCRE2" : "hand-written");
            std::printf("glass decode: %.2f MB of text in %.4f s = %.2f MB/s, %.2f Mtok/s\n",
                        static_cast<double>(decoded.size()) / 1e6, best_decode,
                        static_cast<double>(decoded.size()) / 1e6 / best_decode, n / best_decode / 1e6);
            return 0;
          }};
}

}  // namespace glass::cli
