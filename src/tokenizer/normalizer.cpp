#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <new>

#include "base/error.h"
#include "tokenizer/unicode.h"
#include "tokenizer/utf8.h"

namespace glass {

namespace {

// Offset of the first character that is not NFC-stable, or text.size().
size_t first_unstable(std::string_view text, size_t from) {
  const UnicodeTable& table = UnicodeTable::get();
  const char* p = text.data() + from;
  const char* end = text.data() + text.size();
  while (p < end) {
    if (static_cast<unsigned char>(*p) < 0x80) {
      ++p;
      continue;
    }
    const char* start = p;
    if (!(table.flags(utf8::decode_valid(p)) & kCharNfcStable)) return static_cast<size_t>(start - text.data());
  }
  return text.size();
}

// Offset of the first NFC-stable character at or after `from`, or text.size().
size_t first_stable(std::string_view text, size_t from) {
  const UnicodeTable& table = UnicodeTable::get();
  const char* p = text.data() + from;
  const char* end = text.data() + text.size();
  while (p < end) {
    const char* start = p;
    if (table.flags(utf8::decode_valid(p)) & kCharNfcStable) return static_cast<size_t>(start - text.data());
  }
  return text.size();
}

size_t previous_char_start(std::string_view text, size_t pos) {
  size_t b = pos - 1;
  while (b > 0 && (static_cast<unsigned char>(text[b]) & 0xC0) == 0x80) --b;
  return b;
}

}  // namespace

std::string nfc_reference(std::string_view text) {
  if (text.empty()) return {};
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t len = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                            static_cast<utf8proc_ssize_t>(text.size()), &out,
                                            static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (len < 0) {
    if (len == UTF8PROC_ERROR_NOMEM) throw std::bad_alloc();
    fail("NFC normalization failed: ", utf8proc_errmsg(len));
  }
  std::string result(reinterpret_cast<const char*>(out), static_cast<size_t>(len));
  std::free(out);
  return result;
}

std::string_view Normalizer::apply(std::string_view text, std::string& storage) const {
  if (form_ == Form::kNone) return text;
  size_t unstable = first_unstable(text, 0);
  if (unstable == text.size()) return text;
  // NFC cannot reach across an NFC-stable character (a starter that nothing before it
  // composes with), so only the stretches from the character before an unstable run to
  // the next stable character go through utf8proc; the rest is copied.
  storage.clear();
  storage.reserve(text.size() + 16);
  size_t copied = 0;
  while (unstable < text.size()) {
    const size_t begin = unstable == 0 ? 0 : std::max(copied, previous_char_start(text, unstable));
    const size_t end = first_stable(text, unstable);
    storage.append(text.substr(copied, begin - copied));
    storage += nfc_reference(text.substr(begin, end - begin));
    copied = end;
    unstable = first_unstable(text, end);
  }
  storage.append(text.substr(copied));
  return storage;
}

}  // namespace glass
