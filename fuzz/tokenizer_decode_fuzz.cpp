// The Qwen2.5 tokenizer's decode of arbitrary ids (`glass detokenize`, the server's
// replies). The first byte picks skip_special and how the rest becomes ids: 4-byte
// little-endian int32 (any value, negative and past the vocabulary too), or 3-byte values
// modulo a little more than the vocabulary (mostly real tokens). Checks: valid UTF-8, and
// the streaming decoder agrees with decode.
#include <vector>

#include "fuzz_support.h"
#include "tokenizer_checks.h"

// The fixed inputs load before fuzzing starts, outside the per-input timeout.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)glass::fuzz::qwen_tokenizer();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace glass;
  const Tokenizer& t = fuzz::qwen_tokenizer();
  if (size == 0) return 0;
  const uint8_t flags = data[0];
  std::vector<int32_t> ids;
  if (flags & 2) {
    for (size_t i = 1; i + 4 <= size; i += 4)
      ids.push_back(static_cast<int32_t>(static_cast<uint32_t>(data[i]) | static_cast<uint32_t>(data[i + 1]) << 8 |
                                         static_cast<uint32_t>(data[i + 2]) << 16 |
                                         static_cast<uint32_t>(data[i + 3]) << 24));
  } else {
    const uint32_t range = static_cast<uint32_t>(t.vocab_size()) + 8;
    for (size_t i = 1; i + 3 <= size; i += 3)
      ids.push_back(static_cast<int32_t>(
          (static_cast<uint32_t>(data[i]) | static_cast<uint32_t>(data[i + 1]) << 8 | static_cast<uint32_t>(data[i + 2]) << 16) %
          range));
  }
  fuzz::run_one([&] {
    fuzz::check_decode(t, ids, (flags & 1) != 0);
    for (int32_t id : ids) {
      if (!t.has_token(id)) continue;
      (void)t.token_text(id);
      (void)t.token_bytes(id);
    }
  });
  return 0;
}
