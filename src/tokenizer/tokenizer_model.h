// The loaded parts of a tokenizer, shared read-only by copies of a Tokenizer. Internal to
// src/tokenizer (and its tests); other components use tokenizer.h.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/token_map.h"

namespace glass {

struct TokenizerModel {
  std::string source;
  Normalizer normalizer;
  PreTokenizer pre_tokenizer;
  std::optional<BpeModel> bpe;
  std::vector<AddedToken> added_tokens;              // in file order
  TokenIdMap added_ids;                              // content -> id (the last one wins)
  AddedTokenMatcher raw_matcher;                     // normalized = false: matched in the raw text
  AddedTokenMatcher normalized_matcher;              // normalized = true: matched after normalizing
  // Post-processor template for a single sequence: ids before and after it.
  std::vector<int32_t> template_prefix, template_suffix;

  // Per id: the vocabulary string and the bytes it decodes to, in two arenas.
  std::string piece_arena, bytes_arena;
  std::vector<uint32_t> piece_offset, bytes_offset;  // vocab_size + 1 entries each
  enum : uint8_t { kExists = 1, kSpecial = 2 };
  std::vector<uint8_t> id_flags;

  // Fills the per-id tables from the BPE vocabulary and the added tokens.
  void build_id_tables();
};

// Ids must stay below this: the per-id tables are dense.
inline constexpr int64_t kMaxTokenId = (1 << 24) - 1;

}  // namespace glass
