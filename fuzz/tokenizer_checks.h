// Properties the tokenizer promises for any input (tokenizer.h), checked by the
// tokenizer targets.
#pragma once

#include <span>
#include <string>

#include "fuzz_support.h"
#include "tokenizer/utf8.h"

namespace glass::fuzz {

// decode gives valid UTF-8, and a StreamingDecoder fed the ids one at a time releases
// only valid UTF-8, holds back at most 3 bytes, and adds up to decode's text.
inline void check_decode(const Tokenizer& t, std::span<const int32_t> ids, bool skip_special) {
  const std::string text = t.decode(ids, skip_special);
  GLASS_FUZZ_CHECK(utf8::is_valid(text), "decode gave invalid UTF-8");
  StreamingDecoder stream(t, skip_special);
  std::string streamed;
  for (int32_t id : ids) {
    const std::string piece = stream.push(id);
    GLASS_FUZZ_CHECK(utf8::is_valid(piece), "StreamingDecoder::push gave invalid UTF-8 at id ", id);
    GLASS_FUZZ_CHECK(stream.pending_bytes() <= 3, stream.pending_bytes(), " bytes pending");
    streamed += piece;
  }
  streamed += stream.flush();
  GLASS_FUZZ_CHECK(streamed == text, "streamed text differs from decode: ", streamed.size(), " vs ", text.size(),
                   " bytes");
}

// Every id encode gives is a token of the vocabulary.
inline void check_ids(const Tokenizer& t, std::span<const int32_t> ids) {
  for (int32_t id : ids) GLASS_FUZZ_CHECK(t.has_token(id), "encode gave id ", id, " which has no token");
}

}  // namespace glass::fuzz
