// Text made safe for one cell of a markdown table (the generated reference
// pages): a `|` would end the cell, a newline the row.
#pragma once

#include <string>
#include <string_view>

namespace tessera {

inline std::string MarkdownCell(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace tessera
