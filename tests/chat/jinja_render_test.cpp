// Rendering against Python Jinja2: each expected output below is what Jinja2 3.1 renders
// for the template in transformers' configuration (trim_blocks, lstrip_blocks, loop
// controls, tojson as json.dumps with ensure_ascii=False) with the variables of kVars and
// strftime_now fixed at 2026-01-15.
#include <gtest/gtest.h>

#include "chat/jinja_json.h"
#include "chat/jinja_template.h"

namespace glass::jinja {
namespace {

constexpr const char* kVars = R"J({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi ☃"},
              {"role": "assistant", "content": "<think>\nhmm\n</think>\n\nHello!", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 3, "units": null, "flags": [true, 1.5]}}}]},
              {"role": "tool", "content": "{\"t\": 1}", "tool_call_id": "call_1"}],
 "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather \"now\"", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
 "xs": [3, 1, 2], "s": "Hello, World", "d": {"b": 2, "a": 1, "c": null}, "n": null, "f": 2.5, "i": 7, "t": true,
 "u": "ÉcoLe ß naïve", "nested": {"a": {"b": [1, {"c": "deep"}]}}})J";

struct RenderCase {
  const char* source;
  const char* expected;
};

RenderOptions fixed_clock() {
  RenderOptions o;
  o.now = [] {
    std::tm t{};
    t.tm_year = 2026 - 1900;
    t.tm_mday = 15;
    t.tm_wday = 4;
    t.tm_yday = 14;
    return t;
  };
  return o;
}

template <size_t N>
void expect_renders(const RenderCase (&cases)[N]) {
  const OrderedJson json = OrderedJson::parse(kVars);
  Variables vars;
  for (const auto& [name, value] : json.items()) vars.emplace_back(name, value_from_json(value));
  const RenderOptions options = fixed_clock();
  for (const RenderCase& c : cases) {
    SCOPED_TRACE(c.source);
    try {
      EXPECT_EQ(Template::parse(c.source).render(vars, options), c.expected);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "threw: " << e.what();
    }
  }
}


// literals and printing
const RenderCase kLiteralsAndPrinting[] = {
    {R"J({{ 42 }} {{ -7 }} {{ 1_000 }} {{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 2.5 }} {{ 1e3 }} {{ 1.5e-7 }} {{ 1e16 }} {{ 1e15 }} {{ 0.0001 }} {{ 0.00001 }} {{ 0.1 + 0.2 }} {{ 1/3 }} {{ -0.0 }})J",
     R"J(42 -7 1000 31 15 5 2.5 1000.0 1.5e-07 1e+16 1000000000000000.0 0.0001 1e-05 0.30000000000000004 0.3333333333333333 -0.0)J"},
    {R"J({{ true }} {{ false }} {{ True }} {{ none }} {{ None }} {{ 'single' }} {{ "double" }} {{ 'a' 'b' }})J",
     R"J(True False True None None single double ab)J"},
    {R"J({{ [1, 'a', none, true, 1.0, {'k': "it's"}] }} {{ (1,) }} {{ ('a', 'b') }} {{ () }} {{ {} }} {{ [] }})J",
     R"J([1, 'a', None, True, 1.0, {'k': "it's"}] (1,) ('a', 'b') () {} [])J"},
    {R"J({{ ['a\nb', "q'", 'q"', "b'\"", '\\', '\t', 'é', '\x01', '\u200b', '\x7f'] }})J",
     R"J(['a\nb', "q'", 'q"', 'b\'"', '\\', '\t', 'é', '\x01', '\u200b', '\x7f'])J"},
    {R"J({{ "tab\tnewline\\n quote\" \u00e9 \x41 \101 \q" }})J",
     R"J(tab	newline\n quote" é A A \q)J"},
    {R"J({{ d }} {{ nested }} {{ xs }} {{ n }} {{ undefined_name }}|)J",
     R"J({'b': 2, 'a': 1, 'c': None} {'a': {'b': [1, {'c': 'deep'}]}} [3, 1, 2] None |)J"},
};

// arithmetic
const RenderCase kArithmetic[] = {
    {R"J({{ 1 + 2 }} {{ 7 - 10 }} {{ 3 * 4 }} {{ 7 / 2 }} {{ 4 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 2 ** 0.5 }})J",
     R"J(3 -3 12 3.5 2.0 3 -4 1 2 -2 1024 0.5 1.4142135623730951)J"},
    {R"J({{ 3.0 // 2 }} {{ -3.5 % 2 }} {{ -7.5 // 2 }} {{ 1.5 * 2 }} {{ true + true }} {{ f * i }} {{ i / f }})J",
     R"J(1.0 0.5 -4.0 3.0 2 17.5 2.8)J"},
    {R"J({{ -2 ** 2 }} {{ 2 ** 3 ** 2 }} {{ 10 - 2 - 3 }} {{ 2 * 3 % 4 }} {{ 2 + 3 * 4 }} {{ (2 + 3) * 4 }} {{ -i }} {{ +i }} {{ - -i }})J",
     R"J(4 64 5 2 14 20 -7 7 7)J"},
    {R"J({{ 'a' + 'b' }} {{ 'ab' * 3 }} {{ 3 * 'ab' }} {{ 'x' * 0 }} {{ [1] + [2, 3] }} {{ [0] * 3 }} {{ (1, 2) + (3,) }})J",
     R"J(ab ababab ababab  [1, 2, 3] [0, 0, 0] (1, 2, 3))J"},
    {R"J({{ 'a' ~ 1 ~ none ~ true ~ undefined_name ~ [1] }} {{ (1 + 2) ~ 3 * 2 }})J",
     R"J(a1NoneTrue[1] 36)J"},
};

// comparisons and logic
const RenderCase kComparisonsAndLogic[] = {
    {R"J({{ 1 < 2 }} {{ 2 <= 2 }} {{ 3 > 4 }} {{ 4 >= 4 }} {{ 1 == 1.0 }} {{ 1 == true }} {{ 1 != 2 }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }})J",
     R"J(True True False True True True True True False)J"},
    {R"J({{ 'abc' < 'abd' }} {{ [1, 'a'] < [1, 'b'] }} {{ (1, 2) <= (1, 2) }} {{ [2] > [1, 5] }} {{ [1, 2] == [1, 2] }} {{ [1] == (1,) }} {{ {'a': 1} == {'a': 1} }} {{ none == none }} {{ undefined_name == undefined_other }} {{ undefined_name == none }})J",
     R"J(True True True True True False True True True False)J"},
    {R"J({{ 'a' in 'cat' }} {{ 'x' not in xs }} {{ 1 in xs }} {{ 'a' in d }} {{ 'z' in d }} {{ 1 in [1.0] }})J",
     R"J(True True True True False True)J"},
    {R"J({{ not t }} {{ not n }} {{ t and 'yes' }} {{ n or 'fallback' }} {{ 0 or '' }} {{ 1 and 2 }} {{ n and undefined_name.boom }} {{ not 1 == 2 }} {{ not t and n }})J",
     R"J(False True yes fallback  2 None True False)J"},
    {R"J({{ 'y' if t else 'n' }} {{ 'a' if n else 'b' if t else 'c' }} [{{ 1 if false }}] {{ (1 if false) is defined }})J",
     R"J(y b [] False)J"},
};

// variables and access
const RenderCase kVariablesAndAccess[] = {
    {R"J({{ messages[1].content }} {{ messages[1]['role'] }} {{ messages.1.role }} {{ messages[-1].tool_call_id }} {{ nested.a.b[1].c }} {{ nested['a']['b'][0] }})J",
     R"J(Hi ☃ user user call_1 deep 1)J"},
    {R"J([{{ messages[10] }}] [{{ messages[0].missing }}] [{{ n['x'] }}] [{{ s.nothing }}] [{{ s[100] }}] [{{ xs['a'] }}])J",
     R"J([] [] [] [] [] [])J"},
    {R"J({{ xs[0] }} {{ xs[-1] }} {{ xs[1:] }} {{ xs[:2] }} {{ xs[::-1] }} {{ xs[::2] }} {{ xs[5:] }} {{ xs[-100:1] }} {{ xs[2:0:-1] }} {{ xs[:] }})J",
     R"J(3 2 [1, 2] [3, 1] [2, 1, 3] [3, 2] [] [3] [2, 1] [3, 1, 2])J"},
    {R"J({{ s[0] }} {{ s[-1] }} {{ s[2:5] }} {{ s[-5:] }} {{ s[::3] }} {{ s[::-1] }} {{ u[::-1] }} {{ u[1:4] }} {{ u|length }})J",
     R"J(H d llo World Hl r dlroW ,olleH evïan ß eLocÉ coL 13)J"},
    {R"J({% set d2 = {'update': 1, 'items': 2} %}[{{ d2.update }}] {{ d2['update'] }} {{ d2['items'] }} {{ d2.items()|list }})J",
     R"J([] 1 2 [('update', 1), ('items', 2)])J"},
};

// statements
const RenderCase kStatements[] = {
    {R"J({% set x = 0 %}{% for i in [1, 2, 3] %}{{ x }}{% set x = i %}{% endfor %}{{ x }})J",
     R"J(0000)J"},
    {R"J({% set x = 5 %}{% if true %}{% set x = 6 %}{% endif %}{{ x }})J",
     R"J(6)J"},
    {R"J({% set a, b = 1, 2 %}{{ a }}{{ b }}{% set c = (3, 4) %}{{ c }}{% set p, q = [5, 6] %}{{ p + q }})J",
     R"J(12(3, 4)11)J"},
    {R"J({% set x %}  block {{ 1 }}{% endset %}[{{ x }}]{% set y | upper | trim %} abc {% endset %}[{{ y }}])J",
     R"J([  block 1][ABC])J"},
    {R"J({% set ns = namespace(total=0, seen=[]) %}{% for x in xs %}{% set ns.total = ns.total + x %}{% set ns.seen = ns.seen + [x] %}{% endfor %}{{ ns.total }} {{ ns.seen }} {{ ns }})J",
     R"J(6 [3, 1, 2] <Namespace {'total': 6, 'seen': [3, 1, 2]}>)J"},
    {R"J({% set ns = namespace() %}{% set ns.index = 0 %}{% for m in messages %}{% set ns.index = ns.index + 1 %}{% endfor %}{{ ns.index }} {{ ns['index'] }})J",
     R"J(4 4)J"},
    {R"J({% if i > 10 %}big{% elif i > 5 %}medium{% else %}small{% endif %} {% if n %}x{% elif undefined_name %}y{% endif %})J",
     R"J(medium )J"},
    {R"J({% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}])J",
     R"J(3[])J"},
    {R"J({% filter upper %}abc{{ 'd' }}{% endfilter %} {% filter replace('a', 'b') | upper %}aaa{% endfilter %})J",
     R"J(ABCD BBB)J"},
    {R"J({% raw %}{{ not evaluated }} {% if %}{% endraw %})J",
     R"J({{ not evaluated }} {% if %})J"},
    {R"J({# a comment #}visible{# another
multi-line comment #})J",
     R"J(visible)J"},
};

// loops
const RenderCase kLoops[] = {
    {R"J({% for m in messages %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.depth }}|{% endfor %})J",
     R"J(1043TrueFalse41|2132FalseFalse41|3221FalseFalse41|4310FalseTrue41|)J"},
    {R"J({% for m in messages if m.role != 'system' %}{{ loop.index }}/{{ loop.length }}:{{ m.role }} {% endfor %})J",
     R"J(1/3:user 2/3:assistant 3/3:tool )J"},
    {R"J({% for x in xs %}{{ loop.cycle('odd', 'even') }}:{{ loop.previtem }}:{{ loop.nextitem }}:{{ loop.changed(x > 1) }} {% endfor %})J",
     R"J(odd::1:True even:3:2:True odd:1::True )J"},
    {R"J({% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %} {% for k in d %}{{ k }}{% endfor %} {% for c in 'héllo' %}{{ c }}.{% endfor %})J",
     R"J(b=2;a=1;c=None; bac h.é.l.l.o.)J"},
    {R"J({% for x in [] %}never{% else %}empty{% endfor %} {% for x in xs if x > 10 %}never{% else %}filtered{% endfor %})J",
     R"J(empty filtered)J"},
    {R"J({% for x in xs %}{% if x == 1 %}{% continue %}{% endif %}{{ x }}{% endfor %} {% for x in xs %}{% if x == 1 %}{% break %}{% endif %}{{ x }}{% endfor %})J",
     R"J(32 3)J"},
    {R"J({% for a in xs %}{% for b in xs %}{% if b == 1 %}{% break %}{% endif %}{{ a }}{{ b }} {% endfor %}{% endfor %})J",
     R"J(33 13 23 )J"},
    {R"J({% for message in messages[::-1] %}{{ message.role }} {% endfor %}{% for i in range(3) %}{{ i }}{% endfor %})J",
     R"J(tool assistant user system 012)J"},
    {R"J({% for x in [[1, [2]], [3]] recursive %}<{{ x if x is number else loop(x) }}>{% endfor %})J",
     R"J(<<1><<2>>><<3>>)J"},
};

// macros
const RenderCase kMacros[] = {
    {R"J({% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}{{ greet('Ann') }} {{ greet('Bo', 'Hi') }} {{ greet(greeting='Yo', name='Cy') }} {{ greet() }})J",
     R"J(Hello, Ann! Hi, Bo! Yo, Cy! Hello, !)J"},
    {R"J({% macro f(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ f(1, 2, 3, k=4) }})J",
     R"J(1(2, 3){'k': 4})J"},
    {R"J({% macro f(a, b) %}{{ a }}|{{ b }}|{{ x }}{% endmacro %}{% set x = 1 %}{{ f(1) }} {% set x = 2 %}{{ f(1, 2) }})J",
     R"J(1||1 1|2|2)J"},
    {R"J({% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}{{ fact(5) }})J",
     R"J(120)J"},
    {R"J({% macro m(a, b=2) %}{{ a }}{{ b }}[{{ caller() if caller }}]{% endmacro %}{% call m(1) %}inner{% endcall %} {{ m(3) }})J",
     R"J(12[inner] 32[])J"},
    {R"J({% macro each(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(item) each(xs) %}<{{ item }}>{% endcall %})J",
     R"J(<3><1><2>)J"},
    {R"J({% macro render_content(c) %}{% if c is string %}{{ c }}{% else %}{% for p in c %}{{ p.text }}{% endfor %}{% endif %}{% endmacro %}{{ render_content('plain') }} {{ render_content([{'text': 'a'}, {'text': 'b'}]) }})J",
     R"J(plain ab)J"},
};

// filters
const RenderCase kFilters[] = {
    {R"J({{ s|upper }} {{ s|lower }} {{ 'hello world'|title }} {{ 'a-b(c d'|title }} {{ 'hELLO'|capitalize }} {{ u|upper }} {{ u|lower }} {{ 'ß'|upper }})J",
     R"J(HELLO, WORLD hello, world Hello World A-B(C D Hello ÉCOLE SS NAÏVE école ß naïve SS)J"},
    {R"J([{{ '  a  '|trim }}] [{{ 'xxaxx'|trim('x') }}] [{{ ' \u3000 a \xa0'|trim }}] {{ s|replace('o', '0') }} {{ s|replace('l', 'L', 2) }})J",
     R"J([a] [a] [a] Hell0, W0rld HeLLo, World)J"},
    {R"J({{ xs|length }} {{ s|length }} {{ d|length }} {{ xs|count }} {{ undefined_name|length }})J",
     R"J(3 12 3 3 0)J"},
    {R"J({{ xs|first }} {{ xs|last }} {{ 'abc'|first }} {{ d|first }} {{ d|last }} [{{ []|first }}])J",
     R"J(3 2 a b c [])J"},
    {R"J({{ xs|join }} {{ xs|join(', ') }} {{ [none, 1]|join('-') }} {{ messages|join(',', attribute='role') }})J",
     R"J(312 3, 1, 2 None-1 system,user,assistant,tool)J"},
    {R"J({{ n|default('dflt') }} {{ undefined_name|default('dflt') }} [{{ ''|default('e') }}] {{ ''|default('e', true) }} {{ n|d('x', boolean=true) }})J",
     R"J(None dflt [] e x)J"},
    {R"J({{ xs|sort }} {{ xs|sort(reverse=true) }} {{ ['b', 'A', 'c']|sort }} {{ ['b', 'A', 'c']|sort(case_sensitive=true) }} {{ [{'n': 2}, {'n': 1}]|sort(attribute='n') }})J",
     R"J([1, 2, 3] [3, 2, 1] ['A', 'b', 'c'] ['A', 'b', 'c'] [{'n': 1}, {'n': 2}])J"},
    {R"J({{ [{'a': 2, 'b': 1}, {'a': 1, 'b': 'y'}, {'a': 1, 'b': 'X'}]|sort(attribute='a,b') }} {{ xs|sort(attribute=0) }} {{ messages|sort(attribute='role', reverse=true)|map(attribute='role')|list }})J",
     R"J([{'a': 1, 'b': 'X'}, {'a': 1, 'b': 'y'}, {'a': 2, 'b': 1}] [3, 1, 2] ['user', 'tool', 'system', 'assistant'])J"},
    {R"J({{ xs|min }} {{ xs|max }} {{ ['aa', 'B']|max }} {{ xs|sum }} {{ xs|sum(start=10) }} {{ [{'v': 1}, {'v': 2}]|sum(attribute='v') }})J",
     R"J(1 3 B 6 16 3)J"},
    {R"J({{ xs|reverse|list }} {{ 'abc'|reverse }} {{ xs|list }} {{ 'ab'|list }} {{ d|list }} {{ (1, 2)|list }})J",
     R"J([2, 1, 3] cba [3, 1, 2] ['a', 'b'] ['b', 'a', 'c'] [1, 2])J"},
    {R"J({{ ['b', 'A', 'a', 'b']|unique|list }} {{ [1, 1.0, true, 2]|unique|list }} {{ ['a', 'A']|unique(case_sensitive=true)|list }})J",
     R"J(['b', 'A'] [1, 2] ['a', 'A'])J"},
    {R"J({{ messages|selectattr('role', 'equalto', 'user')|list|length }} {{ messages|rejectattr('role', 'eq', 'user')|map(attribute='role')|list }} {{ messages|selectattr('tool_calls', 'defined')|list|length }})J",
     R"J(1 ['system', 'assistant', 'tool'] 1)J"},
    {R"J({{ xs|select('gt', 1)|list }} {{ xs|reject('odd')|list }} {{ [0, 1, '', 'a']|select|list }} {{ xs|map('string')|join('+') }} {{ [{'a': 1}, {'b': 2}]|map(attribute='a', default=9)|list }})J",
     R"J([3, 2] [2] [1, 'a'] 3+1+2 [1, 9])J"},
    {R"J({{ d|dictsort }} {{ {'b': 1, 'a': 2}|dictsort(by='value') }} {{ d|items|list }} {{ undefined_name|items|list }})J",
     R"J([('a', 1), ('b', 2), ('c', None)] [('b', 1), ('a', 2)] [('b', 2), ('a', 1), ('c', None)] [])J"},
    {R"J({{ xs|batch(2)|list }} {{ xs|batch(2, 0)|list }} {{ xs|slice(2)|list }} {% for role, items in messages|groupby('role') %}{{ role }}:{{ items|length }} {% endfor %})J",
     R"J([[3, 1], [2]] [[3, 1], [2, 0]] [[3, 1], [2]] assistant:1 system:1 tool:1 user:1 )J"},
    {R"J({{ 10|float }} {{ '3.7'|float }} {{ 'x'|float }} {{ '3.7'|int }} {{ 'x'|int }} {{ 3.9|int }} {{ '0x1A'|int(base=16) }} {{ ' 42 '|int }} {{ '1_000'|int }} {{ true|int }})J",
     R"J(10.0 3.7 0.0 3 0 3 26 42 1000 1)J"},
    {R"J({{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ 3.14159|round(2, 'floor') }} {{ 3.14159|round(1, 'ceil') }} {{ 5|round }} {{ -2.5|abs }} {{ -5|abs }})J",
     R"J(2.0 4.0 2.67 3.14 3.2 5 2.5 5)J"},
    {R"J({{ 'a b c'|wordcount }} [{{ 'abc'|center(9) }}] {{ 'hello world foo'|truncate(9) }} {{ 'hello world foo bar baz'|truncate(12, true) }} {{ 'short'|truncate(10) }})J",
     R"J(3 [   abc   ] hello... hello wor... short)J"},
    {R"J({{ 'a\nb\n\nc'|indent(2) }}|{{ 'a\nb'|indent(2, true) }}|{{ 'a\n\nb'|indent(3, blank=true) }}|{{ 'a\nb'|indent('> ') }})J",
     R"J(a
  b

  c|  a
  b|a
   
   b|a
> b)J"},
    {R"J({{ '<a href="x">&\'</a>'|e }} {{ '<b>'|escape }} {{ '<i>'|safe }} {{ 42|string ~ '!' }} {{ [1]|string }})J",
     R"J(&lt;a href=&#34;x&#34;&gt;&amp;&#39;&lt;/a&gt; &lt;b&gt; <i> 42! [1])J"},
    {R"J({{ '%s and %d' % ('a', 3) }} {{ '%05.2f' % 3.14159 }} {{ '%-5s|' % 'ab' }} {{ '%+d %x %X %o %e %g %c %%' % (5, 255, 255, 8, 12345.678, 0.00001234, 65) }} {{ '%(a)s-%(b)03d' % {'a': 'x', 'b': 3} }} {{ '%s-%s'|format(1, 2) }} {{ '%(x)s'|format(x='y') }})J",
     R"J(a and 3 03.14 ab   | +5 ff FF 10 1.234568e+04 1.234e-05 A % x-003 1-2 y)J"},
    {R"J({{ s|attr('upper')() }} [{{ d|attr('a') }}] {{ messages|map(attribute='role')|unique|list }})J",
     R"J(HELLO, WORLD [] ['system', 'user', 'assistant', 'tool'])J"},
};

// tojson
const RenderCase kTojson[] = {
    {R"J({{ tools|tojson }})J",
     R"J([{"type": "function", "function": {"name": "get_weather", "description": "Weather \"now\"", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])J"},
    {R"J({{ tools[0]|tojson(indent=2) }})J",
     R"J({
  "type": "function",
  "function": {
    "name": "get_weather",
    "description": "Weather \"now\"",
    "parameters": {
      "type": "object",
      "properties": {
        "city": {
          "type": "string"
        }
      },
      "required": [
        "city"
      ]
    }
  }
})J"},
    {R"J({{ messages[2].tool_calls[0].function.arguments|tojson }} {{ messages[2].tool_calls[0].function.arguments|tojson(sort_keys=true) }} {{ messages[2].tool_calls[0].function.arguments|tojson(separators=(',', ':')) }})J",
     R"J({"city": "Paris", "days": 3, "units": null, "flags": [true, 1.5]} {"city": "Paris", "days": 3, "flags": [true, 1.5], "units": null} {"city":"Paris","days":3,"units":null,"flags":[true,1.5]})J"},
    {R"J({{ xs|tojson(indent=4) }} {{ {'a': [], 'b': {}}|tojson(indent=2) }} {{ {'a': 1.0, 'b': "é\n<&>'"}|tojson }} {{ 'é😀'|tojson(ensure_ascii=true) }} {{ '\x7f\x1f'|tojson }} {{ 1e400|tojson }} {{ (1, 2)|tojson }} {{ none|tojson }} {{ {1: 'int key', true: 'x'}|tojson }})J",
     R"J([
    3,
    1,
    2
] {
  "a": [],
  "b": {}
} {"a": 1.0, "b": "é\n<&>'"} "\u00e9\ud83d\ude00" "\u001f" Infinity [1, 2] null {"1": "x"})J"},
    {R"J({{ {'b': 1, 'a': [1, {'c': 2}]}|tojson(sort_keys=true, indent='\t') }})J",
     R"J({
	"a": [
		1,
		{
			"c": 2
		}
	],
	"b": 1
})J"},
};

// tests
const RenderCase kTests[] = {
    {R"J({{ i is divisibleby 7 }} {{ i is odd }} {{ i is even }} {{ f is float }} {{ i is integer }} {{ t is integer }} {{ t is number }} {{ n is none }} {{ t is true }} {{ t is false }} {{ t is boolean }})J",
     R"J(True True False True True False True True True False True)J"},
    {R"J({{ d is mapping }} {{ s is string }} {{ xs is sequence }} {{ d is sequence }} {{ s is iterable }} {{ undefined_name is iterable }} {{ undefined_name is defined }} {{ undefined_name is undefined }} {{ n is defined }})J",
     R"J(True True True True True True False True True)J"},
    {R"J({{ 'upper' is filter }} {{ 'nope' is filter }} {{ 'odd' is test }} {{ s is lower }} {{ 'ABC' is upper }} {{ i is gt 5 }} {{ i is lt 5 }} {{ i is ge 7 }} {{ i is le 6 }} {{ i is ne 7 }} {{ i is in [7] }} {{ i is eq 7 }} {{ i is equalto 7 }})J",
     R"J(True False True False True True False True False False True True True)J"},
    {R"J({{ n is sameas none }} {{ t is sameas true }} {{ xs is sameas xs }} {{ i is not none }} {{ not i is none }} {{ range is callable }} {{ s is callable }})J",
     R"J(True True True True True True False)J"},
};

// string methods
const RenderCase kStringMethods[] = {
    {R"J({{ s.upper() }} {{ s.lower() }} {{ s.title() }} {{ s.capitalize() }} {{ s.swapcase() }} {{ u.upper() }} {{ u.lower() }} {{ u.title() }})J",
     R"J(HELLO, WORLD hello, world Hello, World Hello, world hELLO, wORLD ÉCOLE SS NAÏVE école ß naïve École Ss Naïve)J"},
    {R"J({{ s.startswith('He') }} {{ s.startswith(('x', 'He')) }} {{ s.endswith('ld') }} {{ s.startswith('World', 7) }} {{ s.find('o') }} {{ s.rfind('o') }} {{ s.find('z') }} {{ s.count('l') }} {{ s.index('W') }} {{ u.find('ß') }})J",
     R"J(True True True True 4 8 -1 3 7 6)J"},
    {R"J([{{ '  a b  '.strip() }}] [{{ '  a b  '.lstrip() }}] [{{ '  a b  '.rstrip() }}] [{{ 'xxaxx'.strip('x') }}] [{{ '\n\nx\n'.strip('\n') }}])J",
     R"J([a b] [a b  ] [  a b] [a] [x])J"},
    {R"J({{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a b c'.rsplit(' ', 1) }} {{ 'a\nb\r\nc'.splitlines() }} {{ 'x</think>y</think>z'.split('</think>')[-1] }})J",
     R"J(['a', 'b', '', 'c'] ['a', 'b'] ['a', 'b c'] ['a b', 'c'] ['a', 'b', 'c'] z)J"},
    {R"J({{ s.replace('l', 'L') }} {{ s.replace('l', 'L', 1) }} {{ 'ab'.replace('', '-') }} {{ ', '.join(['a', 'b']) }} {{ '-'.join('xyz') }})J",
     R"J(HeLLo, WorLd HeLlo, World -a-b- a, b x-y-z)J"},
    {R"J([{{ s.center(20, '*') }}] [{{ s.ljust(15) }}] [{{ s.rjust(15, '.') }}] {{ '42'.zfill(5) }} {{ '-42'.zfill(5) }} {{ s.partition(', ') }} {{ s.rpartition('o') }} {{ s.removeprefix('Hel') }} {{ s.removesuffix('ld') }})J",
     R"J([****Hello, World****] [Hello, World   ] [...Hello, World] 00042 -0042 ('Hello', ', ', 'World') ('Hello, W', 'o', 'rld') lo, World Hello, Wor)J"},
    {R"J({{ '12'.isdigit() }} {{ 'ab'.isalpha() }} {{ 'a1'.isalnum() }} {{ ' \t'.isspace() }} {{ 'AB'.isupper() }} {{ 'ab'.islower() }} {{ ''.isdigit() }} {{ 'A1'.isupper() }})J",
     R"J(True True True True True True False True)J"},
    {R"J({{ '{} {}'.format(1, 'a') }} {{ '{0:>5}|{name}'.format('x', name='n') }} {{ '{:.2f}'.format(3.14159) }} {{ '{:,}'.format(1234567) }} {{ '{!r}'.format('x') }} {{ '{:08.3f}'.format(-3.5) }} {{ '{:^7}|'.format('mid') }} {{ '{:x}'.format(255) }})J",
     R"J(1 a     x|n 3.14 1,234,567 'x' -003.500   mid  | ff)J"},
};

// dict and list methods
const RenderCase kDictAndListMethods[] = {
    {R"J({{ d.get('a') }} {{ d.get('zz', 'dflt') }} {{ d.get('zz') }} {{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }} {{ d.items() }} {{ d.keys() }} {{ d.items()|length }})J",
     R"J(1 dflt None ['b', 'a', 'c'] [2, 1, None] [('b', 2), ('a', 1), ('c', None)] dict_items([('b', 2), ('a', 1), ('c', None)]) dict_keys(['b', 'a', 'c']) 3)J"},
    {R"J({{ xs.index(1) }} {{ xs.count(3) }} {{ (1, 1).count(1) }} {% if {}.items() %}T{% else %}F{% endif %} {% if xs|select('gt', 100) %}generator is true{% endif %})J",
     R"J(1 1 2 F generator is true)J"},
};

// globals
const RenderCase kGlobals[] = {
    {R"J({{ range(5)|list }} {{ range(1, 10, 3)|list }} {{ range(5, 0, -2)|list }} {{ dict(a=1, b=[2]) }} {{ dict([('x', 1)]) }} {{ namespace(a=1).a }})J",
     R"J([0, 1, 2, 3, 4] [1, 4, 7] [5, 3, 1] {'a': 1, 'b': [2]} {'x': 1} 1)J"},
    {R"J({% set j = joiner(' | ') %}{% for x in xs %}{{ j() }}{{ x }}{% endfor %})J",
     R"J(3 | 1 | 2)J"},
    {R"J({{ strftime_now('%Y-%m-%d') }} {{ strftime_now('%d %b %Y') }} {{ strftime_now('%B %d, %Y %A') }})J",
     R"J(2026-01-15 15 Jan 2026 January 15, 2026 Thursday)J"},
};

// whitespace control
const RenderCase kWhitespaceControl[] = {
    {R"J(  {% if true %}
  a
  {% endif %}
  b {% if true %}c{% endif %})J",
     R"J(  a
  b c)J"},
    {R"J({{ 'x' }}
  {%+ if true %}y{% endif +%}
z)J",
     R"J(x
  y
z)J"},
    {R"J({# c #}
  {#- c2 -#}
  q)J",
     R"J(q)J"},
    {R"J({%- for x in xs -%}
  {{ x }}
{%- endfor %})J",
     R"J(312)J"},
    {R"J(  {{- 'a' -}}  
  b)J",
     R"J(ab)J"},
    {R"J({% for x in xs %}
  <{{ x }}>
{% endfor %}
end)J",
     R"J(  <3>
  <1>
  <2>
end)J"},
    {R"J({% raw %}
  {{ x }}
{% endraw %}
after)J",
     R"J(
  {{ x }}
after)J"},
    {R"J({% if true %}
x{% endif %})J",
     R"J(x)J"},
};

TEST(JinjaRender, LiteralsAndPrinting) { expect_renders(kLiteralsAndPrinting); }
TEST(JinjaRender, Arithmetic) { expect_renders(kArithmetic); }
TEST(JinjaRender, ComparisonsAndLogic) { expect_renders(kComparisonsAndLogic); }
TEST(JinjaRender, VariablesAndAccess) { expect_renders(kVariablesAndAccess); }
TEST(JinjaRender, Statements) { expect_renders(kStatements); }
TEST(JinjaRender, Loops) { expect_renders(kLoops); }
TEST(JinjaRender, Macros) { expect_renders(kMacros); }
TEST(JinjaRender, Filters) { expect_renders(kFilters); }
TEST(JinjaRender, Tojson) { expect_renders(kTojson); }
TEST(JinjaRender, Tests) { expect_renders(kTests); }
TEST(JinjaRender, StringMethods) { expect_renders(kStringMethods); }
TEST(JinjaRender, DictAndListMethods) { expect_renders(kDictAndListMethods); }
TEST(JinjaRender, Globals) { expect_renders(kGlobals); }
TEST(JinjaRender, WhitespaceControl) { expect_renders(kWhitespaceControl); }

}  // namespace
}  // namespace glass::jinja
