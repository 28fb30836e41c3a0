// Regressions from fuzzing the chat templates (fuzz/jinja_template_fuzz.cpp): each input
// the fuzzer found, reduced, with what Python Jinja2 3.1 renders for it.
#include <gtest/gtest.h>

#include "chat/jinja_template.h"

namespace glass::jinja {
namespace {

std::string render(const std::string& source) { return Template::parse(source).render({}); }

// '%d' % 1e300 cast the float to int64 (undefined behaviour past its range; UBSan:
// "1e+300 is outside the range of representable values of type 'long'"). Python's int
// has no range: a float that large is an integer, printed digit for digit.
TEST(JinjaFuzz, PercentFormatOfAFloatPastInt64PrintsItsExactInteger) {
  EXPECT_EQ(render("{{ '%d' % 1e300 }}"),
            "1000000000000000052504760255204420248704468581108159154915854115511802457988908195786371375080447864043704443"
            "8328838781769425232353604305756447921847867069828483872009265758037378302337947880900593689532349707999450811"
            "19038967640880074652742780142494579258788820056842838115669472196386865459400540160");
  EXPECT_EQ(render("{{ '%d' % -1e19 }} {{ '%+25d|' % 9223372036854775808.0 }} {{ '%i' % -9223372036854775808.0 }}"),
            "-10000000000000000000      +9223372036854775808| -9223372036854775808");
  EXPECT_EQ(render("{{ '%030d' % -1.5e19 }} {{ '%-22d|' % 1e20 }} {{ '%d' % 2.5 }}"),
            "-00000000015000000000000000000 100000000000000000000 | 2");
}

}  // namespace
}  // namespace glass::jinja
