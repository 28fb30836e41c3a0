#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>
#include <new>

#include "base/error.h"
#include "tokenizer/unicode.h"
#include "tokenizer/utf8.h"

namespace glass {

namespace {

// True when every character is NFC-stable, so NFC leaves the text as it is.
bool nfc_quick_check(std::string_view text) {
  const UnicodeTable& table = UnicodeTable::get();
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    if (static_cast<unsigned char>(*p) < 0x80) {
      ++p;
      continue;
    }
    if (!(table.flags(utf8::decode_valid(p)) & kCharNfcStable)) return false;
  }
  return true;
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
  if (form_ == Form::kNone || nfc_quick_check(text)) return text;
  storage = nfc_reference(text);
  return storage;
}

}  // namespace glass
