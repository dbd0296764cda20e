// The renderer the chart tests rely on: it must agree with Helm on the part of
// the template language the chart uses, and refuse what it does not know.
#include "test/k8s/helm/helm_template.h"

#include <gtest/gtest.h>

namespace tessera::deploy {
namespace {

struct RenderCase {
  const char* name;
  const char* text;
  const char* values;
  const char* expected;
};

class RendersLikeHelm : public ::testing::TestWithParam<RenderCase> {};

TEST_P(RendersLikeHelm, Case) {
  const RenderCase& c = GetParam();
  absl::StatusOr<std::string> out = RenderTemplateText(c.text, YAML::Load(c.values));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, c.expected);
}

INSTANTIATE_TEST_SUITE_P(
    Renderer, RendersLikeHelm,
    ::testing::Values(
        RenderCase{"FieldsPrintTheirValue", "port: {{ .Values.a.port }}", "{a: {port: 8888}}", "port: 8888"},
        // Helm reads numbers in values as float64 and Go prints those from 1e6 up in exponent form.
        RenderCase{"NumbersFromValuesPrintAsHelmDoes", "{{ .Values.a }} {{ .Values.b }} {{ .Values.c }} {{ int .Values.b }}",
                   "{a: 8888, b: 1000000, c: 0.25}", "8888 1e+06 0.25 1000000"},
        RenderCase{"MissingKeysPrintNothing", "x: {{ .Values.a.missing }}", "{a: {}}", "x: "},
        RenderCase{"DashTrimsWhitespaceAndNewlines", "a:\n  {{- \" b\" }}\n  {{- \"c\" -}}\n  d", "{}", "a: bcd"},
        RenderCase{"CommentsVanish", "a{{/* note */}}b{{- /* x */ -}} c", "{}", "abc"},
        RenderCase{"IfElseIfElse", "{{ if .Values.a }}A{{ else if .Values.b }}B{{ else }}C{{ end }}", "{a: false, b: 1}",
                   "B"},
        RenderCase{"EmptyStringsMapsAndZeroAreFalse",
                   "{{ if .Values.s }}s{{ end }}{{ if .Values.m }}m{{ end }}{{ if .Values.z }}z{{ end }}|"
                   "{{ if .Values.q }}q{{ end }}",
                   "{s: '', m: {}, z: 0, q: 'false'}", "|q"},
        RenderCase{"WithRebindsDotAndDollarStaysRoot", "{{ with .Values.a }}{{ .b }}-{{ $.Values.c }}{{ end }}",
                   "{a: {b: 1}, c: 2}", "1-2"},
        RenderCase{"WithElse", "{{ with .Values.a }}x{{ else }}none{{ end }}", "{a: []}", "none"},
        RenderCase{"RangeOverAList", "{{ range .Values.l }}[{{ . }}]{{ end }}", "{l: [a, b]}", "[a][b]"},
        RenderCase{"DefineAndInclude", "{{ define \"n\" }}<{{ .x }}>{{ end }}{{ include \"n\" .Values }}", "{x: 7}", "<7>"},
        RenderCase{"DefaultTakesTheFallbackForEmptyValues",
                   "{{ default \"d\" .Values.e }} {{ default \"d\" .Values.f }}", "{e: '', f: v}", "d v"},
        RenderCase{"QuoteEscapes", "{{ .Values.s | quote }}", "{s: 'say \"hi\"'}", "\"say \\\"hi\\\"\""},
        RenderCase{"NindentIndentsEveryLine", "k:{{ \"a: 1\\nb: 2\" | nindent 2 }}", "{}", "k:\n  a: 1\n  b: 2"},
        RenderCase{"ToYamlKeepsStringsStringsAndSortsKeysAsHelm", "{{ toYaml .Values.m }}",
                   "{m: {port: '80', num: 80, on: true}}", "num: 80\n\"on\": true\nport: \"80\""},
        RenderCase{"ToYamlNestsListsAndMaps", "{{ toYaml .Values.l }}", "{l: [{a: 1, b: [x]}, [], [y]]}",
                   "- a: 1\n  b:\n  - x\n- []\n- - y"},
        RenderCase{"PrintfTruncTrimSuffix", "{{ printf \"%s-%s\" \"abc\" \"de\" | trunc 4 | trimSuffix \"-\" }}", "{}",
                   "abc"},
        RenderCase{"ComparisonsAndLogic",
                   "{{ if and (gt (int .Values.n) 1) (not .Values.off) (eq .Values.s \"x\") }}yes{{ end }}",
                   "{n: 2, off: false, s: x}", "yes"},
        RenderCase{"ContainsAndReplace", "{{ contains \"ess\" \"tessera\" }} {{ replace \"+\" \"_\" \"1+2\" }}", "{}",
                   "true 1_2"},
        RenderCase{"Sha256OfText", "{{ \"abc\" | sha256sum }}", "{}",
                   "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}),
    [](const ::testing::TestParamInfo<RenderCase>& info) { return info.param.name; });

struct ErrorCase {
  const char* name;
  const char* text;
  const char* values;
  const char* error;  // a part of the message
};

class RefusesLikeHelm : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(RefusesLikeHelm, Case) {
  const ErrorCase& c = GetParam();
  absl::StatusOr<std::string> out = RenderTemplateText(c.text, YAML::Load(c.values));
  ASSERT_FALSE(out.ok()) << "rendered: " << *out;
  EXPECT_NE(out.status().message().find(c.error), std::string::npos) << out.status();
}

INSTANTIATE_TEST_SUITE_P(
    Renderer, RefusesLikeHelm,
    ::testing::Values(
        ErrorCase{"RequiredWithAnEmptyValue", "a\n{{ required \"give x\" .Values.x }}", "{x: ''}", "template:2: give x"},
        ErrorCase{"Fail", "{{ fail \"no\" }}", "{}", "no"},
        ErrorCase{"FieldOfNil", "{{ .Values.a.b.c }}", "{}", "nil pointer evaluating .Values.a.b"},
        ErrorCase{"MapPrintedAsText", "{{ .Values.m }}", "{m: {a: 1}}", "pipe it through toYaml"},
        ErrorCase{"UnknownFunction", "{{ lower \"A\" }}", "{}", "\"lower\" is not supported"},
        ErrorCase{"Variables", "{{ $x := 1 }}", "{}", "not supported"},
        ErrorCase{"UnclosedBlock", "{{ if true }}a", "{}", "without its {{ end }}"},
        ErrorCase{"StrayEnd", "a{{ end }}", "{}", "without an open block"},
        ErrorCase{"UnclosedAction", "{{ .Values", "{}", "unclosed action"},
        ErrorCase{"IncludeOfAnUnknownTemplate", "{{ include \"nope\" . }}", "{}", "no template named \"nope\""}),
    [](const ::testing::TestParamInfo<ErrorCase>& info) { return info.param.name; });

TEST(MergeValues, MapsMergeKeyByKeyAndOtherValuesReplace) {
  const YAML::Node merged = MergeValues(YAML::Load("{a: {b: 1, c: [1, 2]}, d: x}"), YAML::Load("{a: {c: [3]}, e: y}"));
  EXPECT_EQ(merged["a"]["b"].as<int>(), 1);
  ASSERT_EQ(merged["a"]["c"].size(), 1u);
  EXPECT_EQ(merged["a"]["c"][0].as<int>(), 3);
  EXPECT_EQ(merged["d"].as<std::string>(), "x");
  EXPECT_EQ(merged["e"].as<std::string>(), "y");
}

}  // namespace
}  // namespace tessera::deploy
