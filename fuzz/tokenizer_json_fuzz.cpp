// tokenizer.json: loaded as Tokenizer::load loads the file, then used the way a loaded
// tokenizer is (encode a few texts, decode, the streaming decoder, token lookups), so
// that what the loader accepted is exercised too.
#include "fuzz_support.h"
#include "tokenizer_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace glass;
  fuzz::run_one([&] {
    const Tokenizer t = Tokenizer::from_json(fuzz::as_text(data, size), "tokenizer.json");
    static constexpr std::string_view kTexts[] = {
        "Hello, world! It's 2024: 12345 apples.", "  leading\tand\r\ntrailing  ", "caf\xC3\xA9 \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x98\x80",
        "<|im_start|>user\nHi<|im_end|>", "\xFF\xC3 cut \xE4\xBD", ""};
    for (std::string_view text : kTexts) {
      for (bool parse_special : {true, false}) {
        EncodeOptions options;
        options.parse_special = parse_special;
        const std::vector<int32_t> ids = t.encode(text, options);
        fuzz::check_ids(t, ids);
        options.fast_split = false;
        GLASS_FUZZ_CHECK(t.encode(text, options) == ids, "fast and PCRE2 splits give different ids");
        fuzz::check_decode(t, ids, false);
        fuzz::check_decode(t, ids, true);
      }
      (void)t.pre_tokenize(text);
    }
    std::vector<int32_t> all;
    for (size_t id = 0; id < std::min<size_t>(t.vocab_size() + 2, 600); ++id) all.push_back(static_cast<int32_t>(id));
    all.push_back(-1);
    fuzz::check_decode(t, all, false);
    for (int32_t id : all) {
      if (!t.has_token(id)) continue;
      const std::string piece = t.token_text(id);
      GLASS_FUZZ_CHECK(t.token_id(piece) >= 0, "token_text(", id, ") is not found by token_id");
      (void)t.token_bytes(id);
      (void)t.is_special(id);
    }
  });
  return 0;
}
