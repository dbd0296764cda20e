#include "test/testing/promql_names.h"

#include <array>
#include <algorithm>
#include <cctype>


namespace tessera::testing {
namespace {

// Standard-library helpers: Debian's abseil takes its own string_view.
bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

std::string_view StripWhitespace(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool IdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
bool IdentChar(char c) { return IdentStart(c) || std::isdigit(static_cast<unsigned char>(c)); }

// Binary operators and modifiers written as words; `inf`, `nan` are numbers.
bool IsKeyword(std::string_view w) {
  static constexpr std::array<std::string_view, 14> kWords = {
      "and", "or", "unless", "atan2", "by", "without", "on", "ignoring", "group_left", "group_right", "offset",
      "bool", "inf", "nan"};
  for (std::string_view k : kWords) {
    if (EqualsIgnoreCase(w, k)) return true;
  }
  return false;
}

// Keywords followed by a parenthesised list of label names, not an expression.
bool TakesLabelList(std::string_view w) {
  return w == "by" || w == "without" || w == "on" || w == "ignoring" || w == "group_left" || w == "group_right";
}

// The index past the string literal that starts at s[i] (", ' or `).
size_t SkipString(std::string_view s, size_t i) {
  const char quote = s[i];
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\' && quote != '`') {
      ++i;
    } else if (s[i] == quote) {
      return i + 1;
    }
  }
  return s.size();
}

// The index past the group that opens at s[i] with `open`, strings skipped.
size_t SkipGroup(std::string_view s, size_t i, char open, char close) {
  int depth = 0;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '"' || c == '\'' || c == '`') {
      i = SkipString(s, i) - 1;
    } else if (c == open) {
      ++depth;
    } else if (c == close && --depth == 0) {
      return i + 1;
    }
  }
  return s.size();
}

size_t SkipSpace(std::string_view s, size_t i) {
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return i;
}

// Does the word at s[i] open an aggregation's clause (`sum by (x) (...)`)?
bool ClauseFollows(std::string_view s, size_t i) {
  size_t end = i;
  while (end < s.size() && IdentChar(s[end])) ++end;
  const std::string_view word = s.substr(i, end - i);
  return word == "by" || word == "without";
}

// {__name__="x"} inside a matcher names metric x.
void NameMatcher(std::string_view matchers, std::set<std::string>& out) {
  const size_t at = matchers.find("__name__");
  if (at == std::string_view::npos) return;
  size_t i = SkipSpace(matchers, at + 8);
  if (i >= matchers.size() || matchers[i] != '=') return;  // =~, != name no single metric
  i = SkipSpace(matchers, i + 1);
  if (i >= matchers.size() || (matchers[i] != '"' && matchers[i] != '\'')) return;
  const size_t end = SkipString(matchers, i);
  out.emplace(matchers.substr(i + 1, end - i - 2));
}

// Grafana's variable query functions: label_values(SELECTOR, label) reads SELECTOR.
std::string_view GrafanaQueryExpression(std::string_view expr) {
  const std::string_view whole = StripWhitespace(expr);
  for (std::string_view fn : {"label_values(", "query_result("}) {
    if (whole.starts_with(fn) && whole.ends_with(")")) {
      const std::string_view e = whole.substr(fn.size(), whole.size() - fn.size() - 1);
      if (fn == "label_values(") {
        // The selector ends at the last top-level comma; a lone label is label_values(label).
        int depth = 0;
        size_t comma = std::string_view::npos;
        for (size_t i = 0; i < e.size(); ++i) {
          if (e[i] == '"' || e[i] == '\'' || e[i] == '`') {
            i = SkipString(e, i) - 1;
          } else if (e[i] == '(' || e[i] == '{' || e[i] == '[') {
            ++depth;
          } else if (e[i] == ')' || e[i] == '}' || e[i] == ']') {
            --depth;
          } else if (e[i] == ',' && depth == 0) {
            comma = i;
          }
        }
        return comma == std::string_view::npos ? std::string_view() : e.substr(0, comma);
      }
      return e;
    }
  }
  return expr;
}

}  // namespace

std::set<std::string> MetricNamesInPromQl(std::string_view expr) {
  const std::string_view s = GrafanaQueryExpression(expr);
  std::set<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '"' || c == '\'' || c == '`') {
      i = SkipString(s, i);
    } else if (c == '{') {
      const size_t end = SkipGroup(s, i, '{', '}');
      NameMatcher(s.substr(i, end - i), out);
      i = end;
    } else if (c == '[') {
      i = SkipGroup(s, i, '[', ']');
    } else if (c == '#') {  // a comment, to the end of the line
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (c == '$') {  // Grafana: $name, ${name}, ${name:format}
      ++i;
      if (i < s.size() && s[i] == '{') {
        i = SkipGroup(s, i, '{', '}');
      } else {
        while (i < s.size() && IdentChar(s[i])) ++i;
      }
    } else if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      // 0.99, 1e3, 0x1f, 5m, 1h30m: a number or a duration, letters and all.
      while (i < s.size() && (IdentChar(s[i]) || s[i] == '.' ||
                              ((s[i] == '+' || s[i] == '-') && (s[i - 1] == 'e' || s[i - 1] == 'E')))) {
        ++i;
      }
    } else if (IdentStart(c)) {
      const size_t start = i;
      while (i < s.size() && IdentChar(s[i])) ++i;
      const std::string_view word = s.substr(start, i - start);
      const size_t next = SkipSpace(s, i);
      if (TakesLabelList(word)) {
        if (next < s.size() && s[next] == '(') i = SkipGroup(s, next, '(', ')');
      } else if (IsKeyword(word) || (next < s.size() && s[next] == '(') || ClauseFollows(s, next)) {
        // an operator; a function or aggregation; `sum by (x) (...)`: not a metric
      } else {
        out.emplace(word);
      }
    } else {
      ++i;
    }
  }
  return out;
}

std::set<std::string> SampleNamesInExposition(std::string_view text) {
  std::set<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t nl = std::min(text.find('\n', start), text.size());
    const std::string_view line = StripWhitespace(text.substr(start, nl - start));
    start = nl + 1;
    if (line.empty() || line.front() == '#') continue;
    size_t end = 0;
    while (end < line.size() && IdentChar(line[end])) ++end;
    if (end > 0) out.emplace(line.substr(0, end));
  }
  return out;
}

}  // namespace tessera::testing
