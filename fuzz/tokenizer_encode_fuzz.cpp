// The Qwen2.5 tokenizer's encode on arbitrary bytes (what `glass tokenize`, prompts and
// the server's /v1/completions do with text). The first byte picks the options. Checks:
// every id is a token, the hand-written splitter and PCRE2 give the same ids (as the
// README promises), and decoding the ids (whole and streamed) gives valid UTF-8 that
// agrees.
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
  const std::string_view text = fuzz::as_text(data + 1, size - 1);
  fuzz::run_one([&] {
    EncodeOptions options;
    options.parse_special = (flags & 1) != 0;
    options.add_special_tokens = (flags & 2) != 0;
    const std::vector<int32_t> ids = t.encode(text, options);
    fuzz::check_ids(t, ids);
    options.fast_split = false;
    const std::vector<int32_t> slow = t.encode(text, options);
    GLASS_FUZZ_CHECK(slow == ids, "fast split gives ", ids.size(), " ids, PCRE2 ", slow.size());
    fuzz::check_decode(t, ids, (flags & 4) != 0);
    if (flags & 8) (void)t.pre_tokenize(text, (flags & 16) != 0);
  });
  return 0;
}
