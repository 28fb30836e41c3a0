// Loading: tokenizer.json as checkpoints ship it, or the older vocab.json + merges.txt +
// tokenizer_config.json. Every error names the file and the field.
#include <sys/stat.h>

#include <algorithm>

#include "base/error.h"
#include "base/json_fields.h"
#include "base/mapped_file.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_model.h"
#include "tokenizer/utf8.h"

namespace glass {

namespace {

// Where in a file something is: the file, then a field path such as model.merges[3].
struct Where {
  const std::string& source;
  std::string path;
  Where at(const std::string& field) const { return {source, path.empty() ? field : path + "." + field}; }
  Where index(size_t i) const { return {source, str_cat(path, "[", i, "]")}; }
  template <class... Args>
  [[noreturn]] void fail(const Args&... args) const {
    if (path.empty()) glass::fail(source, ": ", args...);
    glass::fail(source, ": ", path, ": ", args...);
  }
};

enum class PathKind { kMissing, kFile, kDirectory, kOther };

PathKind path_kind(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return PathKind::kMissing;
  if (S_ISDIR(st.st_mode)) return PathKind::kDirectory;
  if (S_ISREG(st.st_mode)) return PathKind::kFile;
  return PathKind::kOther;
}

// Tokenizer files are JSON or text read whole: a regular file of at most
// kMaxJsonFileBytes (a FIFO or a device is refused without blocking).
std::string read_file_limited(const std::string& path) {
  return read_text_file(path, kMaxJsonFileBytes, "a tokenizer file");
}

const Json* field(const Json& obj, const char* name) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

bool bool_field(const Json& obj, const char* name, bool fallback, const Where& w) {
  const Json* v = field(obj, name);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) w.at(name).fail("must be true or false, got ", json_type_name(*v), " ", json_excerpt(*v));
  return v->get<bool>();
}

const std::string& string_value(const Json& v, const Where& w) {
  if (!v.is_string()) w.fail("must be a string, got ", json_type_name(v), " ", json_excerpt(v));
  return v.get_ref<const std::string&>();
}

std::optional<std::string> string_field(const Json& obj, const char* name, const Where& w) {
  const Json* v = field(obj, name);
  if (v == nullptr) return std::nullopt;
  return string_value(*v, w.at(name));
}

const Json& object_field(const Json& obj, const char* name, const Where& w) {
  const Json* v = field(obj, name);
  if (v == nullptr) w.at(name).fail("missing (an object)");
  if (!v->is_object()) w.at(name).fail("must be an object, got ", json_type_name(*v));
  return *v;
}

const Json& array_field(const Json& obj, const char* name, const Where& w) {
  const Json* v = field(obj, name);
  if (v == nullptr) w.at(name).fail("missing (an array)");
  if (!v->is_array()) w.at(name).fail("must be an array, got ", json_type_name(*v));
  return *v;
}

int32_t token_id_value(const Json& v, const Where& w) {
  if (!v.is_number_integer()) w.fail("a token id must be an integer, got ", json_type_name(v), " ", json_excerpt(v));
  if (v.is_number_unsigned() ? v.get<uint64_t>() > static_cast<uint64_t>(kMaxTokenId)
                             : (v.get<int64_t>() < 0 || v.get<int64_t>() > kMaxTokenId))
    w.fail("token id ", json_excerpt(v), " is out of range (0 to ", kMaxTokenId, ")");
  return static_cast<int32_t>(v.get<int64_t>());
}

std::string type_of(const Json& obj, const Where& w) {
  if (!obj.is_object()) w.fail("must be an object, got ", json_type_name(obj));
  auto t = string_field(obj, "type", w);
  if (!t) w.at("type").fail("missing");
  return *t;
}

// --- reading tokenizer.json ---------------------------------------------------------------

// A merge as read, before its tokens are resolved: "a b" (one string) or ["a", "b"].
struct MergeText {
  uint64_t offset;  // into MergeList::arena
  uint32_t left_length, right_length;  // right_length == UINT32_MAX: the "a b" form, unsplit
};
struct MergeList {
  std::string arena;
  std::vector<MergeText> items;
};

// A SAX reader that builds the JSON tree for everything except the vocabulary and the
// merges, which go straight into compact tables: a DOM of 150k vocabulary entries and
// 150k merge arrays would cost most of the loading time.
class TokenizerJsonReader {
 public:
  using string_t = Json::string_t;
  using number_integer_t = Json::number_integer_t;
  using number_unsigned_t = Json::number_unsigned_t;
  using number_float_t = Json::number_float_t;
  using binary_t = Json::binary_t;

  // `vocab_path` / `merges_path`: object keys leading to them ({"model", "vocab"}; {} for
  // a vocab.json whose top level is the vocabulary).
  TokenizerJsonReader(const std::string& source, std::vector<std::string> vocab_path,
                      std::vector<std::string> merges_path)
      : source_(source), vocab_path_(std::move(vocab_path)), merges_path_(std::move(merges_path)) {}

  Json root;
  TokenIdMap vocab;
  bool vocab_read = false;
  MergeList merges;
  bool merges_read = false;
  std::string error;  // set when a handler stopped the parse

  bool null() { return scalar(Json(nullptr)); }
  bool boolean(bool v) { return scalar(Json(v)); }
  bool number_integer(number_integer_t v) {
    if (mode_ == Mode::kVocab) return vocab_entry(v < 0 || v > kMaxTokenId ? -1 : v, Json(v));
    return scalar(Json(v));
  }
  bool number_unsigned(number_unsigned_t v) {
    if (mode_ == Mode::kVocab)
      return vocab_entry(v > static_cast<uint64_t>(kMaxTokenId) ? -1 : static_cast<int64_t>(v), Json(v));
    return scalar(Json(v));
  }
  bool number_float(number_float_t v, const string_t&) { return scalar(Json(v)); }
  bool string(string_t& v) {
    if (mode_ == Mode::kVocab) return vocab_entry(-2, Json(v));
    if (mode_ == Mode::kMerges) {
      merges.items.push_back({merges.arena.size(), static_cast<uint32_t>(v.size()), UINT32_MAX});
      merges.arena += v;
      return true;
    }
    if (mode_ == Mode::kMergePair) {
      if (pair_count_ == 2) return stop(str_cat(where_merge(), ": must be a pair of token strings, got more"));
      pair_[pair_count_++] = v;
      return true;
    }
    return value(Json(std::move(v)));
  }
  bool binary(binary_t&) { return stop("unexpected binary value"); }

  bool start_object(std::size_t) {
    if (mode_ == Mode::kVocab) return stop(str_cat(where_vocab(), ": a token id must be an integer, got an object"));
    if (mode_ != Mode::kDom) return stop(str_cat(where_merge(), ": must be \"a b\" or [\"a\", \"b\"], got an object"));
    if (location() == vocab_path_) {
      mode_ = Mode::kVocab;
      vocab_read = true;
      return value(Json::object(), false);
    }
    return open(Json::object());
  }
  bool key(string_t& k) {
    if (mode_ == Mode::kVocab) {
      vocab_key_ = k;
      return true;
    }
    key_ = k;
    return true;
  }
  bool end_object() {
    if (mode_ == Mode::kVocab) {
      mode_ = Mode::kDom;
      return true;
    }
    return close();
  }
  bool start_array(std::size_t) {
    if (mode_ == Mode::kVocab) return stop(str_cat(where_vocab(), ": a token id must be an integer, got an array"));
    if (mode_ == Mode::kMerges) {
      mode_ = Mode::kMergePair;
      pair_count_ = 0;
      return true;
    }
    if (mode_ == Mode::kMergePair) return stop(str_cat(where_merge(), ": must be a pair of token strings, got a nested array"));
    if (location() == merges_path_) {
      mode_ = Mode::kMerges;
      merges_read = true;
      return value(Json::array(), false);
    }
    return open(Json::array());
  }
  bool end_array() {
    if (mode_ == Mode::kMergePair) {
      if (pair_count_ != 2) return stop(str_cat(where_merge(), ": must be a pair of token strings, got ", pair_count_));
      merges.items.push_back({merges.arena.size(), static_cast<uint32_t>(pair_[0].size()),
                              static_cast<uint32_t>(pair_[1].size())});
      merges.arena += pair_[0];
      merges.arena += pair_[1];
      mode_ = Mode::kMerges;
      return true;
    }
    if (mode_ == Mode::kMerges) {
      mode_ = Mode::kDom;
      return true;
    }
    return close();
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    error = str_cat(source_, ": not valid JSON ", json_syntax_problem(text, position, e.what()));
    return false;
  }

  std::string_view text;  // what is being parsed, for the line and column of an error

 private:
  enum class Mode { kDom, kVocab, kMerges, kMergePair };

  // A value that is not a string: fine in the tree, wrong as a vocabulary id or a merge.
  bool scalar(Json v) {
    if (mode_ == Mode::kVocab) return vocab_entry(-2, v);
    if (mode_ == Mode::kMerges)
      return stop(str_cat(where_merge(), ": must be \"a b\" or [\"a\", \"b\"], got ", json_type_name(v), " ", json_excerpt(v)));
    if (mode_ == Mode::kMergePair)
      return stop(str_cat(where_merge(), ": must be a pair of token strings, got ", json_type_name(v), " ", json_excerpt(v)));
    return value(std::move(v));
  }
  bool stop(const std::string& message) {
    if (error.empty()) error = message.starts_with(source_) ? message : str_cat(source_, ": ", message);
    return false;
  }
  std::string path_text() const {
    std::string p;
    for (const std::string& k : vocab_path_) p += (p.empty() ? "" : ".") + k;
    return p;
  }
  std::string where_vocab() const { return str_cat(source_, ": ", path_text(), "[\"", text_excerpt(vocab_key_), "\"]"); }
  std::string where_merge() const {
    std::string p;
    for (const std::string& k : merges_path_) p += (p.empty() ? "" : ".") + k;
    return str_cat(source_, ": ", p, "[", merges.items.size(), "]");
  }
  bool vocab_entry(int64_t id, const Json& v) {
    if (id < 0) {
      return stop(id == -1 ? str_cat(where_vocab(), ": token id ", json_excerpt(v), " is out of range (0 to ", kMaxTokenId, ")")
                           : str_cat(where_vocab(), ": a token id must be an integer, got ", json_type_name(v), " ", json_excerpt(v)));
    }
    if (!vocab.insert(vocab_key_, static_cast<int32_t>(id)))
      return stop(str_cat(where_vocab(), ": the token appears twice"));
    return true;
  }
  // Object keys from the top down to where the next value goes ("" inside arrays).
  std::vector<std::string> location() const {
    std::vector<std::string> loc(keys_.begin() + (keys_.empty() ? 0 : 1), keys_.end());  // the root has no key
    if (!stack_.empty()) loc.push_back(stack_.back()->is_object() ? key_ : std::string());
    return loc;
  }
  // Puts `v` where the next value goes; containers are opened unless `enter` is false.
  bool value(Json v, bool enter = false) {
    Json* slot;
    std::string stored_under;
    if (stack_.empty()) {
      root = std::move(v);
      slot = &root;
    } else if (stack_.back()->is_object()) {
      slot = &(*stack_.back())[key_];
      *slot = std::move(v);
      stored_under = key_;
    } else {
      stack_.back()->push_back(std::move(v));
      slot = &stack_.back()->back();
    }
    if (enter) {
      keys_.push_back(std::move(stored_under));
      stack_.push_back(slot);
    }
    return true;
  }
  bool open(Json container) {
    // No deeper tree than any other JSON input (base/json_fields.h): error messages,
    // copies and the Sequence parsers walk it recursively.
    if (stack_.size() >= static_cast<size_t>(kMaxJsonDepth))
      return stop(str_cat("JSON nested more than ", kMaxJsonDepth, " levels deep at ", nesting_path()));
    return value(std::move(container), true);
  }
  // The keys down to the innermost open container ("[...]" for array items), cut short.
  std::string nesting_path() const {
    std::string p;
    for (size_t i = 0; i < stack_.size(); ++i) {
      if (p.size() > 80) {
        p += "...";
        break;
      }
      if (stack_[i]->is_array()) {
        p += "[...]";
      } else {
        const std::string& k = i + 1 < keys_.size() ? keys_[i + 1] : key_;
        p += (p.empty() ? "" : ".") + k.substr(0, 32);
      }
    }
    return p;
  }
  bool close() {
    stack_.pop_back();
    key_ = keys_.back();
    keys_.pop_back();
    return true;
  }

  const std::string& source_;
  std::vector<std::string> vocab_path_, merges_path_;
  Mode mode_ = Mode::kDom;
  std::vector<Json*> stack_;      // open containers
  std::vector<std::string> keys_;  // the key each open container was stored under
  std::string key_;                // the last key read in the innermost object
  std::string vocab_key_;
  std::string pair_[2];
  int pair_count_ = 0;
};

void read_json(std::string_view text, TokenizerJsonReader& reader) {
  reader.text = text;
  const bool ok = Json::sax_parse(text.data(), text.data() + text.size(), &reader, Json::input_format_t::json, true, false);
  if (!ok) glass::fail(reader.error.empty() ? "not valid JSON" : reader.error);
}

// --- model -----------------------------------------------------------------------------

void check_unique_ids(const TokenIdMap& vocab, const Where& w) {
  std::vector<std::pair<int32_t, std::string_view>> by_id;
  by_id.reserve(vocab.size());
  vocab.for_each([&](std::string_view piece, int32_t id) { by_id.emplace_back(id, piece); });
  std::sort(by_id.begin(), by_id.end());
  for (size_t i = 1; i < by_id.size(); ++i)
    if (by_id[i].first == by_id[i - 1].first)
      w.fail("id ", by_id[i].first, " is used by both \"", by_id[i - 1].second, "\" and \"", by_id[i].second, "\"");
}

struct MergeIds {
  std::vector<std::pair<int32_t, int32_t>> pairs;
  std::vector<int32_t> merged;
};

// Resolves merges to ids: both sides and their concatenation must be in the vocabulary.
template <class MakeWhere>
void add_merge(std::string_view left, std::string_view right, const TokenIdMap& vocab, std::string& scratch,
               MergeIds& out, const MakeWhere& where) {
  const int32_t l = vocab.find(left);
  if (l < 0) where().fail("merge \"", text_excerpt(left), " ", text_excerpt(right), "\": token \"", text_excerpt(left), "\" is not in the vocabulary");
  const int32_t r = vocab.find(right);
  if (r < 0) where().fail("merge \"", text_excerpt(left), " ", text_excerpt(right), "\": token \"", text_excerpt(right), "\" is not in the vocabulary");
  scratch.assign(left);
  scratch.append(right);
  const int32_t m = vocab.find(scratch);
  if (m < 0)
    where().fail("merge \"", text_excerpt(left), " ", text_excerpt(right), "\": the merged token \"", text_excerpt(scratch), "\" is not in the vocabulary");
  out.pairs.emplace_back(l, r);
  out.merged.push_back(m);
}

MergeIds resolve_merges(const MergeList& list, const TokenIdMap& vocab, const Where& w) {
  MergeIds out;
  out.pairs.reserve(list.items.size());
  out.merged.reserve(list.items.size());
  std::string scratch;
  for (size_t i = 0; i < list.items.size(); ++i) {
    const MergeText& m = list.items[i];
    const auto at = [&] { return w.index(i); };  // built only for an error message
    if (m.right_length == UINT32_MAX) {  // "a b"
      const std::string_view s(list.arena.data() + m.offset, m.left_length);
      const size_t space = s.find(' ');
      if (space == std::string_view::npos || space == 0 || space + 1 == s.size() ||
          s.find(' ', space + 1) != std::string_view::npos)
        at().fail("\"", text_excerpt(s), "\" is not two tokens separated by one space");
      add_merge(s.substr(0, space), s.substr(space + 1), vocab, scratch, out, at);
    } else {
      const std::string_view left(list.arena.data() + m.offset, m.left_length);
      const std::string_view right(list.arena.data() + m.offset + m.left_length, m.right_length);
      add_merge(left, right, vocab, scratch, out, at);
    }
  }
  return out;
}

BpeOptions parse_bpe_options(const Json& model, const TokenIdMap& vocab, const Where& w) {
  BpeOptions o;
  if (const Json* d = field(model, "dropout")) {
    if (!d->is_number()) w.at("dropout").fail("must be a number or null");
    if (d->get<double>() != 0.0)
      w.at("dropout").fail("BPE dropout (random merges) is not supported; glass encodes deterministically");
  }
  for (const char* name : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    auto v = string_field(model, name, w);
    if (v && !v->empty()) w.at(name).fail("\"", text_excerpt(*v), "\" is not supported (byte-level BPE uses none)");
  }
  if (bool_field(model, "byte_fallback", false, w))
    w.at("byte_fallback").fail("byte fallback (SentencePiece-style <0xNN> tokens) is not supported; only byte-level BPE");
  if (auto unk = string_field(model, "unk_token", w)) {
    o.unk_id = vocab.find(*unk);
    if (o.unk_id < 0) w.at("unk_token").fail("\"", text_excerpt(*unk), "\" is not in the vocabulary");
  }
  o.fuse_unk = bool_field(model, "fuse_unk", false, w);
  o.ignore_merges = bool_field(model, "ignore_merges", false, w);
  return o;
}

void parse_model(const Json& root, TokenizerJsonReader& reader, TokenizerModel& m, const Where& top) {
  const Where w = top.at("model");
  const Json* model = field(root, "model");
  if (model == nullptr) w.fail("missing: a tokenizer.json needs a model (BPE with vocab and merges)");
  if (!model->is_object()) w.fail("must be an object, got ", json_type_name(*model));
  if (auto type = string_field(*model, "type", w)) {
    if (*type == "WordPiece" || *type == "Unigram" || *type == "WordLevel")
      w.at("type").fail("\"", text_excerpt(*type), "\" is not supported: glass implements byte-level BPE only");
    if (*type != "BPE") w.at("type").fail("unknown model type \"", text_excerpt(*type), "\" (expected \"BPE\")");
  } else if (field(*model, "merges") == nullptr) {
    w.at("type").fail("missing, and there are no merges: not a BPE model");
  }
  const Json* vocab_json = field(*model, "vocab");
  if (vocab_json == nullptr) w.at("vocab").fail("missing (an object mapping token strings to ids)");
  if (!reader.vocab_read) w.at("vocab").fail("must be an object mapping token strings to ids, got ", json_type_name(*vocab_json));
  const Json* merges_json = field(*model, "merges");
  if (merges_json == nullptr) w.at("merges").fail("missing (an array)");
  if (!reader.merges_read) w.at("merges").fail("must be an array, got ", json_type_name(*merges_json));
  check_unique_ids(reader.vocab, w.at("vocab"));
  const MergeIds merges = resolve_merges(reader.merges, reader.vocab, w.at("merges"));
  const BpeOptions options = parse_bpe_options(*model, reader.vocab, w);
  m.bpe.emplace(std::move(reader.vocab), merges.pairs, merges.merged, options);
}

// --- added tokens ------------------------------------------------------------------------

AddedToken parse_added_token(const Json& t, int32_t id, const Where& w) {
  if (!t.is_object()) w.fail("must be an object, got ", json_type_name(t));
  AddedToken a;
  a.id = id;
  auto content = string_field(t, "content", w);
  if (!content) w.at("content").fail("missing");
  a.content = *content;
  a.special = bool_field(t, "special", false, w);
  a.lstrip = bool_field(t, "lstrip", false, w);
  a.rstrip = bool_field(t, "rstrip", false, w);
  a.single_word = bool_field(t, "single_word", false, w);
  a.normalized = bool_field(t, "normalized", !a.special, w);  // Hugging Face's default
  return a;
}

void finish_added_tokens(TokenizerModel& m) {
  // The same content twice: the last id wins, as in Hugging Face.
  for (auto t = m.added_tokens.rbegin(); t != m.added_tokens.rend(); ++t)
    if (!t->content.empty()) m.added_ids.insert(t->content, t->id);
  for (const AddedToken& t : m.added_tokens) {
    if (t.content.empty()) continue;
    AddedToken resolved = t;
    resolved.id = m.added_ids.find(t.content);
    if (t.normalized) {
      std::string storage;
      const std::string pattern(m.normalizer.apply(t.content, storage));
      m.normalized_matcher.add(pattern, resolved);
    } else {
      m.raw_matcher.add(t.content, resolved);
    }
  }
}

// --- normalizer, pre-tokenizer, post-processor, decoder ------------------------------------

void parse_normalizer(const Json* n, TokenizerModel& m, const Where& w) {
  if (n == nullptr) return;
  const std::string type = type_of(*n, w);
  if (type == "NFC") {
    m.normalizer = Normalizer(Normalizer::Form::kNfc);
  } else if (type == "Sequence") {
    const Json& list = array_field(*n, "normalizers", w);
    for (size_t i = 0; i < list.size(); ++i) parse_normalizer(&list[i], m, w.at("normalizers").index(i));
  } else {
    w.at("type").fail("normalizer \"", text_excerpt(type), "\" is not supported (glass supports NFC, a Sequence of NFC, or none)");
  }
}

SplitBehavior parse_behavior(const std::string& s, const Where& w) {
  if (s == "Isolated") return SplitBehavior::kIsolated;
  if (s == "Removed") return SplitBehavior::kRemoved;
  if (s == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (s == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (s == "Contiguous") return SplitBehavior::kContiguous;
  w.fail("unknown split behavior \"", text_excerpt(s), "\"");
}

struct PreTokenizerParse {
  int byte_level_steps = 0;
  bool byte_level_last = false;
};

void parse_pre_tokenizer(const Json& p, TokenizerModel& m, PreTokenizerParse& state,
                         const Where& w) {
  const std::string type = type_of(p, w);
  if (state.byte_level_steps > 0 && type != "Sequence")
    w.fail("a ", type, " step after ByteLevel is not supported (ByteLevel must come last)");
  if (type == "Sequence") {
    const Json& list = array_field(p, "pretokenizers", w);
    for (size_t i = 0; i < list.size(); ++i)
      parse_pre_tokenizer(list[i], m, state, w.at("pretokenizers").index(i));
  } else if (type == "Split") {
    const Json& pattern = object_field(p, "pattern", w);
    std::string text;
    bool literal = false;
    if (auto re = string_field(pattern, "Regex", w.at("pattern"))) {
      text = *re;
    } else if (auto s = string_field(pattern, "String", w.at("pattern"))) {
      text = *s;
      literal = true;
    } else {
      w.at("pattern").fail("must hold \"Regex\" or \"String\"");
    }
    auto behavior = string_field(p, "behavior", w);
    if (!behavior) w.at("behavior").fail("missing");
    SplitStep step{Regex(text, str_cat(w.source, ": ", w.path, ".pattern"), literal), parse_behavior(*behavior, w.at("behavior")),
                   bool_field(p, "invert", false, w), std::nullopt};
    if (!literal && step.behavior == SplitBehavior::kIsolated && !step.invert) step.fast = FastSplitter::recognize(text);
    m.pre_tokenizer.add_split(std::move(step));
  } else if (type == "ByteLevel") {
    // Hugging Face's defaults when the fields are absent: both true.
    if (bool_field(p, "add_prefix_space", true, w)) m.pre_tokenizer.add_prefix_space();
    if (bool_field(p, "use_regex", true, w)) {
      SplitStep step{Regex(kGpt2SplitPattern, str_cat(w.source, ": ", w.path, " (GPT-2 regex)")),
                     SplitBehavior::kIsolated, false, std::nullopt};
      m.pre_tokenizer.add_split(std::move(step));
    }
    ++state.byte_level_steps;
  } else {
    w.at("type").fail("pre-tokenizer \"", text_excerpt(type), "\" is not supported (glass supports Split, ByteLevel and Sequence)");
  }
}

void parse_post_processor(const Json* p, TokenizerModel& m, const Where& w) {
  if (p == nullptr) return;
  const std::string type = type_of(*p, w);
  if (type == "ByteLevel") return;  // only adjusts offsets
  if (type == "Sequence") {
    const Json& list = array_field(*p, "processors", w);
    for (size_t i = 0; i < list.size(); ++i) parse_post_processor(&list[i], m, w.at("processors").index(i));
    return;
  }
  if (type != "TemplateProcessing")
    w.at("type").fail("post-processor \"", text_excerpt(type), "\" is not supported (glass supports ByteLevel, TemplateProcessing, Sequence)");
  const Json& single = array_field(*p, "single", w);
  const Json* specials = field(*p, "special_tokens");
  bool seen_sequence = false;
  for (size_t i = 0; i < single.size(); ++i) {
    const Where at = w.at("single").index(i);
    const Json& item = single[i];
    if (const Json* seq = field(item, "Sequence")) {
      if (seen_sequence) at.fail("the template has the sequence twice");
      (void)seq;
      seen_sequence = true;
    } else if (const Json* sp = field(item, "SpecialToken")) {
      auto name = string_field(*sp, "id", at.at("SpecialToken"));
      if (!name) at.at("SpecialToken").at("id").fail("missing");
      const Json* entry = specials ? field(*specials, name->c_str()) : nullptr;
      if (entry == nullptr) w.at("special_tokens").fail("no entry for \"", text_excerpt(*name), "\" used by the template");
      const Json& ids = array_field(*entry, "ids", w.at("special_tokens").at(*name));
      std::vector<int32_t>& dest = seen_sequence ? m.template_suffix : m.template_prefix;
      for (size_t k = 0; k < ids.size(); ++k)
        dest.push_back(token_id_value(ids[k], w.at("special_tokens").at(*name).at("ids").index(k)));
    } else {
      at.fail("must be {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    }
  }
  if (!seen_sequence) w.at("single").fail("the template has no {\"Sequence\"} item");
}

void parse_decoder(const Json* d, const Where& w) {
  if (d == nullptr) w.fail("missing: glass decodes byte-level BPE and needs the ByteLevel decoder");
  const std::string type = type_of(*d, w);
  if (type == "ByteLevel") return;
  if (type == "Sequence") {
    const Json& list = array_field(*d, "decoders", w);
    if (list.empty()) w.at("decoders").fail("empty");
    for (size_t i = 0; i < list.size(); ++i) parse_decoder(&list[i], w.at("decoders").index(i));
    return;
  }
  w.at("type").fail("decoder \"", text_excerpt(type), "\" is not supported (glass supports ByteLevel)");
}

std::shared_ptr<TokenizerModel> model_from_json(TokenizerJsonReader& reader, const std::string& source) {
  const Json& root = reader.root;
  const Where top{source, ""};
  if (!root.is_object()) glass::fail(source, ": not a tokenizer.json (the top level is ", json_type_name(root), ", not an object)");
  for (const char* name : {"truncation", "padding"})
    if (field(root, name) != nullptr)
      top.at(name).fail("is set; glass does not truncate or pad inside the tokenizer (it must be null)");
  auto m = std::make_shared<TokenizerModel>();
  m->source = source;
  parse_model(root, reader, *m, top);
  parse_normalizer(field(root, "normalizer"), *m, top.at("normalizer"));
  const Json* pre = field(root, "pre_tokenizer");
  if (pre == nullptr) top.at("pre_tokenizer").fail("missing: byte-level BPE needs a ByteLevel pre-tokenizer");
  PreTokenizerParse state;
  parse_pre_tokenizer(*pre, *m, state, top.at("pre_tokenizer"));
  if (state.byte_level_steps != 1)
    top.at("pre_tokenizer").fail(state.byte_level_steps == 0 ? "has no ByteLevel step: only byte-level BPE is supported"
                                                             : "has more than one ByteLevel step");
  parse_post_processor(field(root, "post_processor"), *m, top.at("post_processor"));
  parse_decoder(field(root, "decoder"), top.at("decoder"));
  if (const Json* added = field(root, "added_tokens")) {
    const Where w = top.at("added_tokens");
    if (!added->is_array()) w.fail("must be an array, got ", json_type_name(*added));
    for (size_t i = 0; i < added->size(); ++i) {
      const Json& t = (*added)[i];
      const Where at = w.index(i);
      const Json* id = field(t, "id");
      if (id == nullptr) at.at("id").fail("missing");
      m->added_tokens.push_back(parse_added_token(t, token_id_value(*id, at.at("id")), at));
    }
  }
  finish_added_tokens(*m);
  m->build_id_tables();
  // The template's ids are added to every encoding: each must be a token, or encode
  // would return ids that neither the model nor decode knows.
  for (const std::vector<int32_t>* ids : {&m->template_prefix, &m->template_suffix})
    for (int32_t id : *ids)
      if (static_cast<size_t>(id) >= m->id_flags.size() || !(m->id_flags[static_cast<size_t>(id)] & TokenizerModel::kExists))
        top.at("post_processor").at("special_tokens").fail("the template adds id ", id,
                                                           ", which is not in the vocabulary or added_tokens");
  return m;
}

// --- vocab.json + merges.txt + tokenizer_config.json ---------------------------------------

std::shared_ptr<TokenizerModel> model_from_legacy_files(const std::string& dir) {
  const std::string vocab_path = dir + "/vocab.json";
  const std::string merges_path = dir + "/merges.txt";
  const std::string config_path = dir + "/tokenizer_config.json";
  auto m = std::make_shared<TokenizerModel>();
  m->source = dir + " (vocab.json + merges.txt)";

  TokenizerJsonReader vocab_reader(vocab_path, {}, {"-"});
  read_json(read_file_limited(vocab_path), vocab_reader);
  if (!vocab_reader.vocab_read) glass::fail(vocab_path, ": the top level must be an object mapping token strings to ids");
  TokenIdMap vocab = std::move(vocab_reader.vocab);
  check_unique_ids(vocab, Where{vocab_path, ""});

  const std::string merges_text = read_file_limited(merges_path);
  MergeIds merges;
  std::string scratch;
  size_t line_no = 0;
  for (size_t pos = 0; pos < merges_text.size();) {
    size_t eol = merges_text.find('\n', pos);
    if (eol == std::string::npos) eol = merges_text.size();
    std::string_view line(merges_text.data() + pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (line_no == 1 && line.starts_with("#version"))) continue;
    const auto at = [&] { return Where{merges_path, str_cat("line ", line_no)}; };
    const size_t space = line.find(' ');
    if (space == std::string_view::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string_view::npos)
      at().fail("\"", text_excerpt(line), "\" is not two tokens separated by one space");
    add_merge(line.substr(0, space), line.substr(space + 1), vocab, scratch, merges, at);
  }

  Json config = Json::object();
  if (path_kind(config_path) != PathKind::kMissing) config = parse_json(read_file_limited(config_path), config_path);
  const Where cw{config_path, ""};
  if (!config.is_object()) glass::fail(config_path, ": the top level must be an object");
  const std::string cls = string_field(config, "tokenizer_class", cw).value_or("Qwen2Tokenizer");
  const bool prefix_space = bool_field(config, "add_prefix_space", false, cw);
  BpeOptions bpe_options;
  if (auto unk = string_field(config, "unk_token", cw)) bpe_options.unk_id = vocab.find(*unk);
  m->bpe.emplace(std::move(vocab), merges.pairs, merges.merged, bpe_options);
  if (prefix_space) m->pre_tokenizer.add_prefix_space();
  if (cls == "Qwen2Tokenizer" || cls == "Qwen2TokenizerFast") {
    // What transformers' Qwen2Tokenizer does: NFC, then its split regex.
    m->normalizer = Normalizer(Normalizer::Form::kNfc);
    m->pre_tokenizer.add_split({Regex(kQwen2SplitPattern, config_path + " (Qwen2 regex)"), SplitBehavior::kIsolated,
                                false, FastSplitter::recognize(kQwen2SplitPattern)});
  } else if (cls == "GPT2Tokenizer" || cls == "GPT2TokenizerFast") {
    m->pre_tokenizer.add_split(
        {Regex(kGpt2SplitPattern, config_path + " (GPT-2 regex)"), SplitBehavior::kIsolated, false, std::nullopt});
  } else {
    cw.at("tokenizer_class").fail("\"", text_excerpt(cls), "\" is not supported without a tokenizer.json (glass knows Qwen2Tokenizer and GPT2Tokenizer)");
  }
  if (const Json* decoder = field(config, "added_tokens_decoder")) {
    const Where w = cw.at("added_tokens_decoder");
    if (!decoder->is_object()) w.fail("must be an object mapping ids to tokens");
    for (auto it = decoder->begin(); it != decoder->end(); ++it) {
      const Where at = w.at(text_excerpt(it.key()));
      const std::string& key = it.key();
      if (key.empty() || key.size() > 9 || key.find_first_not_of("0123456789") != std::string::npos)
        at.fail("the key must be a token id");
      const int64_t id = std::stoll(key);
      if (id > kMaxTokenId) at.fail("token id ", id, " is out of range (0 to ", kMaxTokenId, ")");
      m->added_tokens.push_back(parse_added_token(it.value(), static_cast<int32_t>(id), at));
    }
    std::stable_sort(m->added_tokens.begin(), m->added_tokens.end(),
                     [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
  }
  finish_added_tokens(*m);
  if (bool_field(config, "add_bos_token", false, cw)) {
    const Json* bos = field(config, "bos_token");
    std::string content;
    if (bos != nullptr && bos->is_string()) content = bos->get<std::string>();
    if (bos != nullptr && bos->is_object()) content = string_field(*bos, "content", cw.at("bos_token")).value_or("");
    const int32_t added = m->added_ids.find(content);
    const int32_t bos_id = added >= 0 ? added : m->bpe->token_id(content);
    if (bos_id < 0) cw.at("bos_token").fail("add_bos_token is true but the bos_token is not a known token");
    m->template_prefix.push_back(bos_id);
  }
  m->build_id_tables();
  return m;
}

// --- a GGUF file's tokenizer.ggml.* ---------------------------------------------------------

std::shared_ptr<TokenizerModel> model_from_ggml_vocabulary(const GgmlVocabulary& v, const std::string& source) {
  const Where top{source, ""};
  if (v.model != "gpt2")
    refuse(source, ": tokenizer.ggml.model is \"", text_excerpt(v.model),
           "\"; glass runs byte-level BPE tokenizers (\"gpt2\"), as the Qwen family's");
  if (v.tokens.empty()) top.at("tokenizer.ggml.tokens").fail("missing or empty");
  if (static_cast<int64_t>(v.tokens.size()) > kMaxTokenId + 1)
    top.at("tokenizer.ggml.tokens").fail(v.tokens.size(), " tokens is more than glass supports (", kMaxTokenId + 1, ")");
  if (!v.token_types.empty() && v.token_types.size() != v.tokens.size())
    top.at("tokenizer.ggml.token_type").fail("has ", v.token_types.size(), " entries for ", v.tokens.size(), " tokens");
  auto m = std::make_shared<TokenizerModel>();
  m->source = source;
  TokenIdMap vocab;
  vocab.reserve(v.tokens.size());
  BpeOptions bpe_options;
  for (size_t id = 0; id < v.tokens.size(); ++id) {
    const std::string_view text = v.tokens[id];
    const auto type = v.token_types.empty() ? GgmlTokenType::kNormal : static_cast<GgmlTokenType>(v.token_types[id]);
    const auto at = [&] { return top.at("tokenizer.ggml.tokens").index(id); };
    switch (type) {
      case GgmlTokenType::kUnknown:
        bpe_options.unk_id = static_cast<int32_t>(id);
        [[fallthrough]];
      case GgmlTokenType::kNormal:
        if (text.empty()) at().fail("an empty token");
        if (!vocab.insert(text, static_cast<int32_t>(id)))
          at().fail("\"", text_excerpt(text), "\" is also token ", vocab.find(text));
        break;
      case GgmlTokenType::kControl:
      case GgmlTokenType::kUserDefined: {
        // What llama.cpp's converter makes of Hugging Face's added tokens: matched in the
        // raw text, control ones special.
        AddedToken a;
        a.id = static_cast<int32_t>(id);
        a.content = std::string(text);
        a.special = type == GgmlTokenType::kControl;
        a.normalized = false;
        m->added_tokens.push_back(std::move(a));
        break;
      }
      case GgmlTokenType::kUnused:
        break;  // padding rows past the tokenizer: no token, as in tokenizer.json
      case GgmlTokenType::kByte:
        refuse(source, ": tokenizer.ggml.token_type[", id,
               "] is a byte token (SentencePiece byte fallback); glass runs byte-level BPE only");
      default:
        top.at("tokenizer.ggml.token_type").index(id).fail("unknown token type ", v.token_types[id],
                                                           " (llama.cpp's are 1 to 6)");
    }
  }
  MergeIds merges;
  merges.pairs.reserve(v.merges.size());
  merges.merged.reserve(v.merges.size());
  std::string scratch;
  for (size_t i = 0; i < v.merges.size(); ++i) {
    const std::string_view s = v.merges[i];
    const auto at = [&] { return top.at("tokenizer.ggml.merges").index(i); };
    const size_t space = s.find(' ');
    if (space == std::string_view::npos || space == 0 || space + 1 == s.size() ||
        s.find(' ', space + 1) != std::string_view::npos)
      at().fail("\"", text_excerpt(s), "\" is not two tokens separated by one space");
    add_merge(s.substr(0, space), s.substr(space + 1), vocab, scratch, merges, at);
  }
  m->bpe.emplace(std::move(vocab), merges.pairs, merges.merged, bpe_options);
  if (v.pre == "qwen2") {
    // Qwen's tokenizer.json: NFC, then the Qwen2 split (llama.cpp itself skips the NFC).
    m->normalizer = Normalizer(Normalizer::Form::kNfc);
    m->pre_tokenizer.add_split({Regex(kQwen2SplitPattern, source + " (Qwen2 regex)"), SplitBehavior::kIsolated, false,
                                FastSplitter::recognize(kQwen2SplitPattern)});
  } else if (v.pre == "gpt-2" || v.pre == "default" || v.pre.empty()) {
    m->pre_tokenizer.add_split(
        {Regex(kGpt2SplitPattern, source + " (GPT-2 regex)"), SplitBehavior::kIsolated, false, std::nullopt});
  } else {
    refuse(source, ": tokenizer.ggml.pre is \"", text_excerpt(v.pre),
           "\"; glass knows the pre-tokenizers \"qwen2\" and \"gpt-2\"");
  }
  finish_added_tokens(*m);
  if (v.add_bos) {
    if (v.bos_id < 0 || static_cast<size_t>(v.bos_id) >= v.tokens.size())
      top.at("tokenizer.ggml.bos_token_id").fail("add_bos_token is true but the BOS id ", v.bos_id, " is not a token");
    m->template_prefix.push_back(v.bos_id);
  }
  m->build_id_tables();
  if (!m->template_prefix.empty() && (static_cast<size_t>(v.bos_id) >= m->id_flags.size() ||
                                      !(m->id_flags[static_cast<size_t>(v.bos_id)] & TokenizerModel::kExists)))
    top.at("tokenizer.ggml.bos_token_id").fail("add_bos_token is true but the BOS id ", v.bos_id, " is an unused token");
  return m;
}

}  // namespace

Tokenizer Tokenizer::from_ggml_vocabulary(const GgmlVocabulary& vocabulary, const std::string& source) {
  return Tokenizer(model_from_ggml_vocabulary(vocabulary, source));
}

Tokenizer Tokenizer::from_json(std::string_view json_text, const std::string& source) {
  TokenizerJsonReader reader(source, {"model", "vocab"}, {"model", "merges"});
  read_json(json_text, reader);
  return Tokenizer(model_from_json(reader, source));
}

Tokenizer Tokenizer::load(const std::string& path) {
  switch (path_kind(path)) {
    case PathKind::kFile:
      return from_json(read_file_limited(path), path);
    case PathKind::kDirectory: {
      const std::string json_path = path + "/tokenizer.json";
      if (path_kind(json_path) != PathKind::kMissing) return from_json(read_file_limited(json_path), json_path);
      if (path_kind(path + "/vocab.json") == PathKind::kFile && path_kind(path + "/merges.txt") == PathKind::kFile)
        return Tokenizer(model_from_legacy_files(path));
      fail(path, ": no tokenizer.json, and no vocab.json + merges.txt to fall back to");
    }
    case PathKind::kMissing:
      fail(path, ": no such file or folder (expected a tokenizer.json or a folder holding one)");
    case PathKind::kOther:
      break;
  }
  fail(path, ": not a file or folder");
}

}  // namespace glass
