// Regressions from fuzzing the chat templates (fuzz/jinja_template_fuzz.cpp): each input
// the fuzzer found, reduced, with what Python Jinja2 3.1 renders for it.
#include <gtest/gtest.h>

#include "base/error.h"
#include "chat/jinja_template.h"
#include "render_template.h"

namespace glass::jinja {
namespace {

using test::render;

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

// round with precision -9223372036854775808 negated it (undefined behaviour), and an int
// rounded through a double could land past int64 (round(9223372036854775807, -1) cast
// 9.223372036854775808e18 back). Python rounds ints exactly, half to even; a result past
// int64 is an error here (Python's int has no range). Floats follow CPython's limits:
// past 323 digits a float is returned as is, below -308 it rounds to a signed zero.
TEST(JinjaFuzz, RoundTakesAnyPrecision) {
  EXPECT_EQ(render("{{ 9223372036854775807 | round(-18) }} {{ 15 | round(-1) }} {{ 25 | round(-1) }} {{ -25 | round(-1) }} "
                   "{{ -35 | round(-1) }} {{ -150 | round(-2) }} {{ 9007199254740993 | round(-1) }} {{ 5 | round(-400) }}"),
            "9000000000000000000 20 20 -20 -40 -200 9007199254740990 0");
  EXPECT_EQ(render("{{ 1e308 | round(-400) }} {{ -1.5 | round(-400) }} {{ 5e-324 | round(400) }} {{ 1e308 | round(-308) }} "
                   "{{ 1.5 | round(300) }} {{ 2.675 | round(2) }} {{ 0.1 | round(320) }} {{ 1.5 | round(9223372036854775807) }} "
                   "{{ 1.5 | round(-9223372036854775807 - 1) }} {{ 7 | round(-9223372036854775807 - 1) }}"),
            "0.0 -0.0 5e-324 1e+308 1.5 2.67 0.1 1.5 0.0 0");
  EXPECT_THROW(render("{{ 9223372036854775807 | round(-1) }}"), Error);
  EXPECT_THROW(render("{{ -9223372036854775807 | round(-19) }}"), Error);
}

}  // namespace
}  // namespace glass::jinja
