// Text for HTML pages Tessera serves (the GPU map, /ui): escaping of what
// users wrote (pod, namespace and tenant names, annotation values quoted in
// filter's reasons) and the query string of a GET.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tessera::html {

/// Appends `text` escaped for an HTML text node or a quoted attribute value
/// (& < > " ' become entities), cut to at most `max_bytes` bytes at a UTF-8
/// character boundary ("…" marks a cut). Bytes that are not valid UTF-8 and
/// control characters other than tab and newline become U+FFFD, so the
/// page stays valid whatever a pod was named.
void AppendEscaped(std::string& out, std::string_view text, size_t max_bytes = std::string_view::npos);

/// `text` escaped as AppendEscaped does.
std::string Escape(std::string_view text, size_t max_bytes = std::string_view::npos);

/// Appends `text` percent-encoded for a query-string value: only
/// A-Z a-z 0-9 - _ . ~ stay as they are.
void AppendUrlEncoded(std::string& out, std::string_view text);

/// The value of `name` in `target`'s query string ("/ui?q=a+b&page=2"),
/// percent-decoded ('+' is a space); empty when absent. The first
/// occurrence wins; at most `max_bytes` bytes of the decoded value are kept.
std::string QueryParameter(std::string_view target, std::string_view name, size_t max_bytes = 256);

/// ASCII lower case; other bytes unchanged.
std::string AsciiLower(std::string_view text);

}  // namespace tessera::html
