// glass's tokenizer: byte-level BPE loaded from a Hugging Face tokenizer.json (or
// vocab.json + merges.txt + tokenizer_config.json), giving the ids and text that the
// Hugging Face `tokenizers` library gives for the same file.
//
// Encoding: added tokens are found first (special ones too, as transformers does by
// default), the text between them is normalized (NFC), cut by the pre-tokenizer's
// regex, mapped to the byte-level alphabet and merged by BPE rank.
//
// Invalid UTF-8: text given to encode() is first repaired with each invalid or truncated
// sequence replaced by U+FFFD (Unicode's maximal-subpart rule, as Rust's
// String::from_utf8_lossy, Python's bytes.decode(errors="replace") and JavaScript's
// TextDecoder do), so the ids are those Hugging Face gives for the repaired string. No
// byte is dropped silently: each bad sequence shows up as the tokens of U+FFFD. decode()
// likewise repairs bytes that do not form UTF-8 (a sequence cut short, or token ids
// that do not fit together), and StreamingDecoder holds back a sequence until it is
// complete.
//
// A Tokenizer is immutable after loading and safe to use from many threads at once;
// copies share the loaded data.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/added_tokens.h"

namespace glass {

struct EncodeOptions {
  // Recognise special tokens (<|im_start|>, <|endoftext|>, ...) written in the text.
  // Off: their text is tokenized as plain text. Non-special added tokens (Qwen's
  // <tool_call>, <|fim_prefix|>, ...) are recognised either way, as in Hugging Face's
  // encode_special_tokens / transformers' split_special_tokens.
  bool parse_special = true;
  // Apply the file's post-processor template (e.g. a BOS token). Qwen2.5 adds nothing.
  bool add_special_tokens = true;
  // Use the hand-written splitter when the split regex is the Qwen2 / cl100k pattern.
  // Off: always PCRE2 (same ids, slower); for comparison and measurement.
  bool fast_split = true;
};

struct TokenizerModel;  // the loaded parts, see tokenizer_model.h

// A tokenizer as a GGUF file holds it: llama.cpp's tokenizer.ggml.* keys. Views into the
// file; Tokenizer::from_ggml_vocabulary copies what it keeps.
struct GgmlVocabulary {
  std::string_view model;                // tokenizer.ggml.model: "gpt2" is byte-level BPE
  std::string_view pre;                  // tokenizer.ggml.pre: which pre-tokenizer ("qwen2")
  std::vector<std::string_view> tokens;  // tokenizer.ggml.tokens, index = id
  std::vector<int32_t> token_types;      // tokenizer.ggml.token_type (empty: all normal)
  std::vector<std::string_view> merges;  // tokenizer.ggml.merges, "left right" in rank order
  bool add_bos = false;                  // tokenizer.ggml.add_bos_token
  int32_t bos_id = -1;                   // tokenizer.ggml.bos_token_id
};

// llama.cpp's token types (tokenizer.ggml.token_type).
enum class GgmlTokenType : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

class Tokenizer {
 public:
  // `path`: a tokenizer.json file, or a folder holding tokenizer.json, or, without it,
  // vocab.json + merges.txt (+ tokenizer_config.json for added tokens). Throws
  // glass::Error naming the file and field at fault.
  static Tokenizer load(const std::string& path);
  // Parses tokenizer.json contents; `source` names it in errors.
  static Tokenizer from_json(std::string_view json_text, const std::string& source);
  // The tokenizer of a GGUF file (`source` names the file in errors), giving the ids the
  // same model's tokenizer.json gives: normal tokens are the BPE vocabulary, control and
  // user-defined tokens the added tokens (control ones special), unused ones (the
  // converter's [PAD...] rows past the tokenizer) holes. Pre-tokenizers: "qwen2" (NFC and
  // the Qwen2 split, as Qwen's tokenizer.json) and "gpt-2" / "default" (the GPT-2 split).
  static Tokenizer from_ggml_vocabulary(const GgmlVocabulary& vocabulary, const std::string& source);

  std::vector<int32_t> encode(std::string_view text, const EncodeOptions& options = {}) const;
  // Appends to `out` (reuse one vector across calls to avoid reallocations).
  void encode(std::string_view text, std::vector<int32_t>& out, const EncodeOptions& options = {}) const;

  // The text of `ids`. Ids with no token (negative, past vocab_size(), or holes) are
  // skipped, as Hugging Face does; with `skip_special`, special tokens are too. Bytes that
  // do not form UTF-8 become U+FFFD.
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;

  // The id of a vocabulary string as tokenizer.json writes it (added tokens included),
  // e.g. "Hello", "Ġworld", "<|im_end|>"; -1 if there is none.
  int32_t token_id(std::string_view piece) const;
  // The vocabulary string of `id` (the inverse of token_id). Throws glass::Error for an
  // id with no token.
  std::string token_text(int32_t id) const;
  // The bytes `id` decodes to, e.g. " world" for "Ġworld"; may be part of a UTF-8
  // character. Empty for an id with no token.
  std::string_view token_bytes(int32_t id) const;
  bool has_token(int32_t id) const;
  bool is_special(int32_t id) const;
  // 1 + the highest id (model vocabulary and added tokens).
  size_t vocab_size() const;

  const std::vector<AddedToken>& added_tokens() const;
  // Whether the split regex is one the hand-written splitter knows (see EncodeOptions).
  bool has_fast_split() const;
  // Where it was loaded from.
  const std::string& source() const;

  // What BPE sees: the pre-tokenizer's pieces of `text` (normalized), with each added
  // token as a piece of its own. For display and tests.
  std::vector<std::string> pre_tokenize(std::string_view text, bool fast_split = true) const;

  // For the loaders; use load() or from_json().
  explicit Tokenizer(std::shared_ptr<const TokenizerModel> model);

 private:
  std::shared_ptr<const TokenizerModel> m_;
};

// Incremental decoding for streaming output: push ids one at a time and get the text
// they complete. Text is released only as whole UTF-8 characters (a Chinese character
// or an emoji often spans two tokens); the concatenation of everything push() and
// flush() return equals Tokenizer::decode of all the ids. One decoder per stream; it
// holds a (cheap, shared) copy of the tokenizer, so it may outlive the one it was made from.
class StreamingDecoder {
 public:
  explicit StreamingDecoder(const Tokenizer& tokenizer, bool skip_special = false);
  // The text completed by `id` (possibly empty); always valid UTF-8.
  std::string push(int32_t id);
  // The rest: an incomplete sequence at the end becomes U+FFFD. Resets the decoder.
  std::string flush();
  // Bytes held back waiting for the rest of a character (0-3).
  size_t pending_bytes() const { return pending_.size(); }

 private:
  Tokenizer tokenizer_;
  bool skip_special_;
  std::string pending_;
};

}  // namespace glass
