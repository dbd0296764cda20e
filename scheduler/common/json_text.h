// Writing JSON text by hand: answers with thousands of nodes on the hot path,
// and the server's own error bodies.
#pragma once

#include <string>
#include <string_view>

namespace tessera {

/// Appends `s` as a JSON string literal, quotes included, escaping what RFC
/// 8259 requires (quote, backslash, control characters).
void AppendJsonString(std::string& out, std::string_view s);

/// `{"Error":"<message>"}`: the body of every error answer.
std::string JsonErrorBody(std::string_view message);

}  // namespace tessera
