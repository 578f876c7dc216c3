// The Jinja engine, construct by construct. The expected texts are what
// @huggingface/jinja (tests/chat/oracle) renders for the same template and
// context; tests/chat/corpus_test.cpp checks whole real templates against it.
#include <gtest/gtest.h>

#include "jinja/template.h"

namespace pagoda::jinja {
namespace {

const nlohmann::ordered_json& context() {
  static const auto ctx = nlohmann::ordered_json::parse(
      R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "Hi \u00e9"}], "x": 3, "f": 2.5, "s": "  a b  ", "l": [1, 2, 3], "d": {"b": 1, "a": [1, {"k": "v"}]}, "t": true, "n": null})");
  return ctx;
}

std::string render(const std::string& text, const nlohmann::ordered_json& ctx = context()) {
  return Template(text).render(ctx);
}

struct Case {
  const char* name;
  const char* text;
  const char* want;
};

const Case kCases[] = {
    {"Arithmetic",
     "{{ x }}|{{ f }}|{{ 2.0 }}|{{ 1/2 }}|{{ 7//2 }}|{{ -7//2 }}|{{ 7%3 }}|{{ -7%3 }}|{{ 2**10 }}|{{ 2**-1 }}",
     "3|2.5|2.0|0.5|3|-4|1|-1|1024|0.5"},
    {"PrintingAndJson",
     "{{ t }}{{ n }}{{ undefinedvar }}|{{ l }}|{{ d }}|{{ d|tojson }}|{{ d|tojson(indent=2) }}|{{ 'é'|tojson }}|{{ "
     "'é\\n'|tojson(ensure_ascii=true) }}",
     "true|[1, 2, 3]|{\"b\": 1, \"a\": [1, {\"k\": \"v\"}]}|{\"b\": 1, \"a\": [1, {\"k\": \"v\"}]}|{\n  \"b\": 1,\n  "
     "\"a\": [\n    1,\n    {\n      \"k\": \"v\"\n    }\n  ]\n}|\"é\"|\"\\u00e9\\n\""},
    {"StringMethodsAndSlices",
     "{{ s|trim }}|{{ s.strip() }}|{{ s.split() }}|{{ 'a,b,c'.split(',', 1) }}|{{ 'abc'[1:] }}|{{ l[::-1] }}|{{ l[-1] "
     "}}|{{ 'Hello World'|upper }}|{{ 'hello world'|title }}",
     "a b|a b|[\"a\", \"b\"]|[\"a\", \"b,c\"]|bc|[3, 2, 1]|3|HELLO WORLD|Hello World"},
    {"ForLoopIndex",
     "{% for m in messages %}{{ loop.index }}{{ m.role }}:{{ m['content'] }}{% if not loop.last %}\n{% endif %}{% "
     "endfor %}",
     "1system:S2user:Hi é"},
    {"NamespaceInFilteredLoop",
     "{%- set ns = namespace(found=false) -%}\n{%- for m in messages if m.role == 'user' %}\n  {%- set ns.found = true "
     "%}\n{%- endfor %}\n{{ ns.found }}",
     "true"},
    {"MacroDefaults", "{% macro f(a, b='B') %}[{{ a }}{{ b }}]{% endmacro %}{{ f(1) }}{{ f(1, 2) }}{{ f(a=3, b=4) }}",
     "[1B][12][34]"},
    {"CallBlock", "{% macro w() %}<{{ caller() }}>{% endmacro %}{% call w() %}inner{% endcall %}", "<inner>"},
    {"TernaryTestsFilters",
     "{{ x if x > 2 else 'no' }} {{ 'yes' if n is none }} {{ x is defined }} {{ y is defined }} {{ l|length }} {{ "
     "l|join(', ') }} {{ d|items|list }}",
     "3 yes true false 3 1, 2, 3 [[\"b\", 1], [\"a\", [1, {\"k\": \"v\"}]]]"},
    {"TrimAndLstripBlocks", "  {% if true %}\n    yes\n  {% endif %}\n  after\n", "    yes\n  after"},
    {"DictMethods",
     "{{ d.get('a') }} {{ d.get('zz', 'def') }} {% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %} {{ "
     "d.keys()|list }}",
     "[1, {\"k\": \"v\"}] def b=1;a=[1, {\"k\": \"v\"}]; [\"b\", \"a\"]"},
    {"SelectattrMap",
     "{{ messages|selectattr('role','equalto','user')|map(attribute='content')|list }} {{ "
     "messages|rejectattr('role','equalto','user')|list|length }}",
     "[\"Hi é\"] 1"},
    {"ConcatAndMembership",
     "{{ 'a' ~ 1 ~ 2.5 ~ 2.0 ~ true }} {{ 'x' + 'y' }} {{ [1] + [2] }} {{ 'b' in 'abc' }} {{ 2 in l }} {{ 'a' in d }} "
     "{{ 'q' not in d }}",
     "a12.52true xy [1, 2] true true true true"},
    {"DashTrimming", "{#- comment -#}   A  {{- ' B ' -}}  C {%- if true -%}   D   {%- endif %}", "A B CD"},
    {"BlockSet", "{% set x %}block {{ 1 }}{% endset %}[{{ x }}]", "[block 1]"},
    {"ListFilters",
     "{{ l|first }} {{ l|last }} {{ [3,1,2]|sort }} {{ [1,1,2]|unique|list }} {{ -3|abs }} {{ '42'|int + 1 }} {{ "
     "'4.5'|float }} {{ 3|string }} {{ ''|default('dd') }} {{ nope|default('dd') }}",
     "1 3 [1, 2, 3] [1, 2] 3 43 4.5 3  dd"},
    {"IndentFilter", "{{ 'Hello\nworld'|indent(2) }}|{{ 'Hello\nworld'|indent(2, true) }}",
     "Hello\n  world|  Hello\n  world"},
    {"ForElseBreak",
     "{% for i in range(3) %}{{ i }}{% else %}none{% endfor %}{% for i in [] %}x{% else %}empty{% endfor %}{% for i in "
     "range(5) %}{% if i == 3 %}{% break %}{% endif %}{{ i }}{% endfor %}",
     "012empty012"},
    {"StartswithReplace",
     "{{ 'abc'.startswith('a') }} {{ 'abc'.endswith(('x','c')) }} {{ 'aXa'.replace('a','b') }} {{ "
     "'abc'|replace('b','') }} {{ 'x'|capitalize }}",
     "true true bXb ac X"},
    {"LooseEquality", "{{ none == undefinedthing }} {{ 1 == 1.0 }} {{ 1 == true }} {{ '1' == 1 }} {{ [1] == [1] }}",
     "true true true true false"},
    {"UndefinedAttributes", "{{ messages[0].content.foo }}|{{ n.foo }}|{{ loop }}", "||"},
    {"TojsonOptions",
     "{{ {'a': 1, 'b': [1,2]}|tojson(separators=(',', ':')) }} {{ {'b':1,'a':2}|tojson(sort_keys=true) }} {{ "
     "{'a':{'b':{}}, 'c':[]}|tojson(indent=4) }}",
     "{\"a\":1,\"b\":[1,2]} {\"a\": 2, \"b\": 1} {\n    \"a\": {\n        \"b\": {}\n    },\n    \"c\": []\n}"},
    {"LogicalOperators", "{{ x > 2 and f < 3 }} {{ not x }} {{ x or 5 }} {{ n or 'dflt' }} {{ [] or 'e' }}",
     "true false 3 dflt e"},
    {"ChatmlLoop",
     "{%- for m in messages -%}\n{{- '<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>' + '\n' -}}\n{%- endfor "
     "-%}\n{%- if add_generation_prompt -%}\n{{- '<|im_start|>assistant\n' -}}\n{%- endif -%}\n",
     "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nHi é<|im_end|>\n"},
    {"SubscriptsAndDots", "{{ d['a'][1]['k'] }} {{ d.a.1.k }} {{ l.0 }}", "v v 1"},
    {"TupleSet", "{% set a, b = [1, 2] %}{{ a }}{{ b }} {% set l2 = l + [4] %}{{ l2|length }}", "12 4"},
    {"StringEscapes", "{{ \"double \\\"q\\\"\" }} {{ 'sq\\'s' }} {{ 'a' 'b' }}", "double \"q\" sq's ab"},
    {"Tests",
     "{% if x is odd %}odd{% endif %}{% if 4 is even %}even{% endif %}{% if x is number %}num{% endif %}{% if s is "
     "string %}str{% endif %}{% if d is mapping %}map{% endif %}{% if l is iterable %}it{% endif %}{% if l is sequence "
     "%}seq{% endif %}",
     "oddevennumstrmapitseq"},
    {"FilterBlock", "{% filter upper %}hello {{ x }}{% endfilter %}", "HELLO 3"},
    {"CommentsAndWhitespace", "a\n  {%- if true %}\n b\n{% endif %}\nc {# x #}\n  {# y #}\nd", "a b\nc d"},
    {"NestedLoops",
     "{{ loop.index }}{% for a in [1,2] %}{% for b in [3] %}{{ loop.index }}{{ a }}{{ b }}{% endfor %}{{ loop.first "
     "}}{% endfor %}",
     "113true123false"},
};

class ConstructTest : public ::testing::TestWithParam<Case> {};

TEST_P(ConstructTest, RendersAsTheOracle) { EXPECT_EQ(render(GetParam().text), GetParam().want); }

INSTANTIATE_TEST_SUITE_P(Jinja, ConstructTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Jinja, RaiseExceptionIsARenderErrorWithTheMessage) {
  try {
    render("{{ raise_exception('Only user and assistant roles are supported!') }}");
    FAIL() << "did not raise";
  } catch (const RenderError& e) {
    EXPECT_STREQ(e.what(), "Only user and assistant roles are supported!");
  }
  // A RenderError is an InvalidArgument: the HTTP layer answers 400.
  EXPECT_THROW(render("{{ raise_exception('x') }}"), InvalidArgument);
}

TEST(Jinja, SyntaxErrorsNameTheLine) {
  for (const char* bad : {"{% if x %}", "{{ x ", "{% for %}{% endfor %}", "{{ 'unterminated }}", "{% endif %}",
                          "{{ a[ }}", "{% macro m(a=1, b) %}{% endmacro %}", "{{ 1 + }}", "{% bogus %}", "{#"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(Template{bad}, SyntaxError);
  }
  try {
    Template("line one\n{{ ok }}\n{% if %}");
    FAIL();
  } catch (const SyntaxError& e) {
    EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
  }
}

TEST(Jinja, RuntimeErrorsAreRenderErrors) {
  for (const char* bad : {"{{ 1 + none }}", "{{ x.y[0] }}", "{{ 'a' - 1 }}", "{{ 1 // 0 }}", "{{ [1]|upper }}",
                          "{{ foo() }}", "{% for a, b in [1] %}{% endfor %}", "{% set x.y = 1 %}"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(render(bad), RenderError);
  }
}

TEST(Jinja, PythonOnlyExtras) {
  // Not in @huggingface/jinja, used by templates written for transformers.
  EXPECT_EQ(render("{{ '\n\nx\n'.strip('\n') }}|{{ 'xxaxx'.rstrip('x') }}"), "x|xxa");
  EXPECT_EQ(render("{% set l = [] %}{% set _ = l.append(1) %}{{ l }}"), "[1]");
  EXPECT_EQ(render("{{ 6 is divisibleby(3) }} {{ 2 is in([1, 2]) }} {{ [1, 0, 2]|select|list }}"), "true true [1, 2]");
  EXPECT_EQ(render("{{ ['a', 'b']|map('upper')|join }} {{ 'a b  c'|wordcount }} {{ x|d(1) }}"), "AB 3 3");
  EXPECT_EQ(render("{% for c in 'ab' %}{{ c }};{% endfor %}{{ dict(a=1) }}"), "a;b;{\"a\": 1}");
}

TEST(Jinja, ContextValuesKeepTheirTypesAndOrder) {
  const auto ctx = nlohmann::ordered_json::parse(R"({"o": {"z": 1, "a": 2.0, "m": 2.5}, "b": false})");
  EXPECT_EQ(render("{{ o|tojson }} {{ o.a is integer }} {{ b }}", ctx), "{\"z\": 1, \"a\": 2, \"m\": 2.5} true false");
}

TEST(Jinja, TemplatesAreReusableAndIndependentPerRender) {
  const Template t(
      "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}");
  EXPECT_EQ(t.render(context()), "2");
  EXPECT_EQ(t.render(context()), "2");
}

// Hostile templates end with LimitExceeded, never a hang or a stack overflow.
TEST(JinjaLimits, LoopsAreBounded) {
  Limits l;
  l.max_steps = 100000;
  const Template t("{% for a in range(1000) %}{% for b in range(1000) %}{% endfor %}{% endfor %}", l);
  EXPECT_THROW(t.render({}), LimitExceeded);
}

TEST(JinjaLimits, OutputIsBounded) {
  Limits l;
  l.max_output_bytes = 1000;
  const Template t("{% for a in range(100) %}0123456789abcdef{% endfor %}", l);
  EXPECT_THROW(t.render({}), LimitExceeded);
  const Template grow("{% set ns = namespace(s='x') %}{% for a in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
                      l);
  EXPECT_THROW(grow.render({}), LimitExceeded);
}

TEST(JinjaLimits, RecursionIsBounded) {
  EXPECT_THROW(render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"), LimitExceeded);
  const std::string deep = std::string(5000, '(') + "1" + std::string(5000, ')');
  EXPECT_THROW(Template("{{ " + deep + " }}"), SyntaxError);
  std::string nested;
  for (int i = 0; i < 3000; ++i) nested += "{% if true %}";
  EXPECT_THROW(Template{nested}, SyntaxError);
}

TEST(JinjaLimits, TemplateSizeIsBounded) {
  Limits l;
  l.max_template_bytes = 100;
  EXPECT_THROW(Template(std::string(101, 'x'), l), LimitExceeded);
  EXPECT_EQ(Template(std::string(100, 'x'), l).render({}), std::string(100, 'x'));
}

}  // namespace
}  // namespace pagoda::jinja
