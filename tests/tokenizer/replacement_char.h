// U+FFFD as a std::string, for the tests that expect it in decoded text.
#pragma once

#include <string>

#include "tokenizer/utf8.h"

namespace glass::test {

inline const std::string R(utf8::kReplacement);

}  // namespace glass::test
