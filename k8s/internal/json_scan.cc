#include "k8s/internal/json_scan.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "scheduler/common/json_text.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::k8s::internal {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The four hex digits at raw[at..at+4) as a number; -1 when they are not.
int32_t Hex4(std::string_view raw, size_t at) {
  if (at + 4 > raw.size()) return -1;
  int32_t v = 0;
  for (size_t i = at; i < at + 4; ++i) {
    const int h = HexValue(raw[i]);
    if (h < 0) return -1;
    v = v * 16 + h;
  }
  return v;
}

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace

void JsonScanner::SkipSpace() {
  while (pos_ < text_.size()) {
    const char c = text_[pos_];
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
    ++pos_;
  }
}

bool JsonScanner::Fail(std::string_view what) {
  if (error_.empty()) {
    error_ = pos_ < text_.size() ? absl::StrCat(Absl(what), " at byte ", pos_)
                                 : absl::StrCat(Absl(what), " at the end of the text (byte ", pos_, ")");
  }
  return false;
}

char JsonScanner::Peek() {
  SkipSpace();
  return pos_ < text_.size() ? text_[pos_] : '\0';
}

bool JsonScanner::Consume(char c) {
  if (Peek() != c || pos_ >= text_.size()) return false;
  ++pos_;
  return true;
}

bool JsonScanner::Expect(char c, std::string_view what) { return Consume(c) || Fail(absl::StrCat("expected ", Absl(what))); }

bool JsonScanner::ExpectEnd() {
  SkipSpace();
  return pos_ == text_.size() || Fail("unexpected text after the JSON value");
}

// At the opening quote; leaves pos_ after the closing one.
bool JsonScanner::SkipString() {
  ++pos_;
  last_string_escaped_ = false;
  while (pos_ < text_.size()) {
    // Plain text in long strides: names and most of a Node are nothing else.
    pos_ += PlainJsonStringPrefix(text_.substr(pos_));
    if (pos_ >= text_.size()) break;
    const auto c = static_cast<unsigned char>(text_[pos_]);
    if (c == '"') {
      ++pos_;
      return true;
    }
    if (c < 0x20) return Fail("unescaped control character in a string");
    if (c != '\\') {
      ++pos_;
      continue;
    }
    last_string_escaped_ = true;
    if (pos_ + 1 >= text_.size()) break;
    switch (text_[pos_ + 1]) {
      case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
        pos_ += 2;
        break;
      case 'u': {
        // As simdjson: a surrogate only as a high one followed by a low one.
        const int32_t cp = Hex4(text_, pos_ + 2);
        if (cp < 0) return Fail("invalid \\u escape in a string");
        if (cp >= 0xDC00 && cp <= 0xDFFF) return Fail("a lone low surrogate in a string");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          const bool paired = text_.substr(pos_ + 6, 2) == "\\u" && Hex4(text_, pos_ + 8) >= 0xDC00 &&
                              Hex4(text_, pos_ + 8) <= 0xDFFF;
          if (!paired) return Fail("a lone high surrogate in a string");
          pos_ += 6;
        }
        pos_ += 6;
        break;
      }
      default:
        return Fail("invalid escape in a string");
    }
  }
  return Fail("unterminated string");
}

// The JSON grammar, and the range simdjson reads: an integer must fit in
// int64 (negative) or uint64, a number with a fraction or exponent in a
// finite double.
bool JsonScanner::SkipNumber() {
  const size_t start = pos_;
  if (text_[pos_] == '-') ++pos_;
  if (pos_ < text_.size() && text_[pos_] == '0') {
    ++pos_;
  } else if (pos_ < text_.size() && IsDigit(text_[pos_])) {
    while (pos_ < text_.size() && IsDigit(text_[pos_])) ++pos_;
  } else {
    pos_ = start;
    return Fail("invalid number");
  }
  if (pos_ < text_.size() && text_[pos_] == '.') {
    ++pos_;
    if (pos_ >= text_.size() || !IsDigit(text_[pos_])) return Fail("invalid number");
    while (pos_ < text_.size() && IsDigit(text_[pos_])) ++pos_;
  }
  if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
    ++pos_;
    if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
    if (pos_ >= text_.size() || !IsDigit(text_[pos_])) return Fail("invalid number");
    while (pos_ < text_.size() && IsDigit(text_[pos_])) ++pos_;
  }
  return InRange(text_.substr(start, pos_ - start)) || Fail("number out of range");
}

bool JsonScanner::InRange(std::string_view number) {
  const bool negative = number.front() == '-';
  if (number.find_first_of(".eE") != std::string_view::npos) {
    const std::string copy(number);  // strtod needs the terminating NUL
    return std::isfinite(std::strtod(copy.c_str(), nullptr));
  }
  const uint64_t limit = negative ? uint64_t{1} << 63 : ~uint64_t{0};
  uint64_t value = 0;
  for (char c : number.substr(negative ? 1 : 0)) {
    const auto digit = static_cast<uint64_t>(c - '0');
    if (value > (limit - digit) / 10) return false;
    value = value * 10 + digit;
  }
  return true;
}

bool JsonScanner::SkipLiteral(std::string_view word) {
  if (text_.substr(pos_, word.size()) != word) return Fail("invalid literal");
  pos_ += word.size();
  return true;
}

// Recursion is bounded by kMaxDepth: a few hundred bytes of stack a level.
bool JsonScanner::SkipValue(int depth) {
  switch (Peek()) {
    case '"':
      return SkipString();
    case 't':
      return SkipLiteral("true");
    case 'f':
      return SkipLiteral("false");
    case 'n':
      return SkipLiteral("null");
    case '{':
    case '[': {
      if (depth >= kMaxDepth) return Fail(absl::StrCat("nesting deeper than ", kMaxDepth, " levels"));
      const bool object = text_[pos_] == '{';
      const char close = object ? '}' : ']';
      ++pos_;
      if (Consume(close)) return true;
      do {
        if (object) {
          if (Peek() != '"') return Fail("expected a string as the member name");
          if (!SkipString() || !Expect(':', "':'")) return false;
        }
        if (!SkipValue(depth + 1)) return false;
      } while (Consume(','));
      return Expect(close, object ? "',' or '}'" : "',' or ']'");
    }
    default:
      if (pos_ < text_.size() && (text_[pos_] == '-' || IsDigit(text_[pos_]))) return SkipNumber();
      return Fail(pos_ < text_.size() ? "expected a value" : "expected a value, found the end of the text");
  }
}

std::optional<std::string_view> JsonScanner::String() {
  if (Peek() != '"') {
    Fail("expected a string");
    return std::nullopt;
  }
  const size_t start = pos_;
  if (!SkipString()) return std::nullopt;
  return text_.substr(start + 1, pos_ - start - 2);
}

std::optional<std::string_view> JsonScanner::Value() {
  SkipSpace();
  const size_t start = pos_;
  if (!SkipValue(0)) return std::nullopt;
  return text_.substr(start, pos_ - start);
}

std::optional<std::string_view> JsonScanner::Container(int depth) {
  const char first = Peek();
  if (first != '{' && first != '[') {
    Fail("expected an object or an array");
    return std::nullopt;
  }
  const size_t start = pos_;
  const char* const data = text_.data();
  const size_t size = text_.size();
  int open = 0;
  for (size_t p = pos_; p < size; ++p) {
    switch (data[p]) {
      case '{':
      case '[':
        if (depth + ++open > kMaxDepth) {
          pos_ = p;
          Fail(absl::StrCat("nesting deeper than ", kMaxDepth, " levels"));
          return std::nullopt;
        }
        break;
      case '}':
      case ']':
        if (--open == 0) {
          pos_ = p + 1;
          return text_.substr(start, pos_ - start);
        }
        break;
      case '"':
        // To the closing quote: the next one after an even run of backslashes.
        for (;;) {
          const void* quote = std::memchr(data + p + 1, '"', size - p - 1);
          if (quote == nullptr) {
            pos_ = size;
            Fail("unterminated string");
            return std::nullopt;
          }
          p = static_cast<size_t>(static_cast<const char*>(quote) - data);
          size_t backslashes = 0;
          while (data[p - 1 - backslashes] == '\\') ++backslashes;
          if (backslashes % 2 == 0) break;
        }
        break;
      default:
        break;
    }
  }
  pos_ = size;
  Fail("an unclosed object or array");
  return std::nullopt;
}

std::optional<std::string_view> UnescapeJsonString(std::string_view raw, std::string& storage) {
  if (raw.find('\\') == std::string_view::npos) return raw;
  storage.clear();
  storage.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '\\') {
      storage.push_back(raw[i]);
      continue;
    }
    if (++i >= raw.size()) return std::nullopt;
    switch (raw[i]) {
      case '"': storage.push_back('"'); break;
      case '\\': storage.push_back('\\'); break;
      case '/': storage.push_back('/'); break;
      case 'b': storage.push_back('\b'); break;
      case 'f': storage.push_back('\f'); break;
      case 'n': storage.push_back('\n'); break;
      case 'r': storage.push_back('\r'); break;
      case 't': storage.push_back('\t'); break;
      case 'u': {
        int32_t cp = Hex4(raw, i + 1);
        if (cp < 0) return std::nullopt;
        i += 4;
        if (cp >= 0xDC00 && cp <= 0xDFFF) return std::nullopt;  // a low surrogate first
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          // A high surrogate must be followed by \u and a low one.
          if (i + 2 >= raw.size() || raw[i + 1] != '\\' || raw[i + 2] != 'u') return std::nullopt;
          const int32_t low = Hex4(raw, i + 3);
          if (low < 0xDC00 || low > 0xDFFF) return std::nullopt;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          i += 6;
        }
        AppendUtf8(storage, static_cast<uint32_t>(cp));
        break;
      }
      default:
        return std::nullopt;
    }
  }
  return std::string_view(storage);
}

}  // namespace tessera::k8s::internal
