// Small tokenizer.json documents for unit tests: the 256 byte characters are ids 0-255
// in byte order, and each merge's result takes the next id.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/json_fields.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/fast_split.h"
#include "tokenizer/tokenizer.h"

namespace glass::test {

// `merges` are pairs of raw byte strings, e.g. {"a", "b"}, {"ab", "c"}, {" ", "x"}.
inline Json tiny_tokenizer_json(const std::vector<std::pair<std::string, std::string>>& merges,
                                const std::string& split_pattern = kQwen2SplitPattern) {
  Json vocab = Json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_level::encode(std::string(1, static_cast<char>(b)))] = b;
  Json merge_list = Json::array();
  int next = 256;
  for (const auto& [l, r] : merges) {
    const std::string a = byte_level::encode(l), b = byte_level::encode(r);
    merge_list.push_back(a + " " + b);
    if (!vocab.contains(a + b)) vocab[a + b] = next++;
  }
  return Json{
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", Json::array()},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"}, {"pattern", {{"Regex", split_pattern}}}, {"behavior", "Isolated"}, {"invert", false}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}}}}},
      {"post_processor", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", ""},
        {"end_of_word_suffix", ""}, {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false},
        {"vocab", vocab}, {"merges", merge_list}}},
  };
}

// An added token entry with Hugging Face's field names.
inline Json added_token(int id, const std::string& content, bool special, bool lstrip = false, bool rstrip = false,
                        bool normalized = false, bool single_word = false) {
  return Json{{"id", id}, {"content", content}, {"single_word", single_word}, {"lstrip", lstrip},
              {"rstrip", rstrip}, {"normalized", normalized}, {"special", special}};
}

inline Tokenizer tokenizer_of(const Json& j) { return Tokenizer::from_json(j.dump(), "test tokenizer.json"); }

// The id of the vocabulary string for raw bytes `s`.
inline int32_t id_of(const Tokenizer& t, const std::string& s) { return t.token_id(byte_level::encode(s)); }

}  // namespace glass::test
