#include "scheduler/common/json_text.h"

namespace tessera {

namespace {

// Whether `s` holds a character a JSON string must escape: a quote, a
// backslash or a control character. Without branches, so that the compiler
// checks many bytes at once: node names (DNS names) never hold one, and
// answers carry thousands of them.
bool NeedsEscaping(std::string_view s) {
  unsigned escape = 0;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    escape |= static_cast<unsigned>(c < 0x20) | static_cast<unsigned>(c == '"') | static_cast<unsigned>(c == '\\');
  }
  return escape != 0;
}

}  // namespace

void AppendJsonString(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  if (!NeedsEscaping(s)) {
    out.append(s);
    out.push_back('"');
    return;
  }
  // Copy runs of characters that need no escaping in one append: node names
  // and reasons rarely contain any, and answers carry thousands of them.
  size_t run = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        out += "\\u00";
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 0xf]);
    }
  }
  out.append(s.data() + run, s.size() - run);
  out.push_back('"');
}

std::string JsonErrorBody(std::string_view message) {
  std::string out = "{\"Error\":";
  AppendJsonString(out, message);
  out += "}";
  return out;
}

}  // namespace tessera
