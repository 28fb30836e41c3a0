// Text normalization before pre-tokenization: none, or Unicode NFC (via utf8proc).
#pragma once

#include <string>
#include <string_view>

namespace glass {

class Normalizer {
 public:
  enum class Form { kNone, kNfc };

  Normalizer() = default;
  explicit Normalizer(Form form) : form_(form) {}

  Form form() const { return form_; }

  // The normalized text: `text` itself when it is already normalized (the common case,
  // checked without copying), otherwise written into `storage`. `text` must be valid UTF-8.
  std::string_view apply(std::string_view text, std::string& storage) const;

 private:
  Form form_ = Form::kNone;
};

// NFC of valid UTF-8 by utf8proc, without the quick check (the reference the fast path is
// tested against).
std::string nfc_reference(std::string_view text);

}  // namespace glass
