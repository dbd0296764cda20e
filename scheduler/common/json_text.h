// Writing JSON text by hand: answers with thousands of nodes on the hot path,
// and the server's own error bodies.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tessera {

/// Appends `s` as a JSON string literal, quotes included, escaping what RFC
/// 8259 requires (quote, backslash, control characters).
void AppendJsonString(std::string& out, std::string_view s);

/// Whether AppendJsonString copies `s` as it is (no quote, backslash or
/// control character) and no byte of it is `also` ('\0': no other byte).
bool IsPlainJsonString(std::string_view s, char also = '\0');

/// How many bytes at the start of `s` stand in a JSON string as they are:
/// the run before the first quote, backslash or control character (all of
/// `s` when there is none). Reads 16 bytes at a time, for scanners of long
/// texts.
size_t PlainJsonStringPrefix(std::string_view s);

/// `{"Error":"<message>"}`: the body of every error answer.
std::string JsonErrorBody(std::string_view message);

}  // namespace tessera
