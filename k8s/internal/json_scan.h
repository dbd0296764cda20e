// Finding where JSON values begin and end, without building them.
//
// A filter request with full Node objects is a NodeList of thousands of
// objects. simdjson's DOM holds a whole document at about 15 bytes per byte
// of input (an 8-byte tape entry and a 4-byte structural index per byte, 5/3
// of a byte for strings, a padded copy), so a 256 MiB body needed ~3.7 GB.
// JsonScanner walks the body once, checking that it is well-formed JSON, and
// hands out the text of each value; the decoder then parses one Node at a time
// and keeps only the fields it reads (k8s/extender_args.cc).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace tessera::k8s::internal {

/// A forward reader over JSON text. Every method first skips whitespace.
/// A method that finds something else than it expects returns false or
/// nullopt and records why in error(); the scanner is then of no further use.
class JsonScanner {
 public:
  /// Deeper nesting is refused (as simdjson's DOM refuses beyond 1024).
  static constexpr int kMaxDepth = 1024;

  explicit JsonScanner(std::string_view text) : text_(text) {}

  /// The next character (not consumed); '\0' at the end of the text.
  char Peek();
  /// Consumes `c` when it comes next; otherwise false (no error recorded).
  bool Consume(char c);
  /// Consumes `c`, or records "expected <what>" and returns false.
  bool Expect(char c, std::string_view what);
  /// A string token: the text between its quotes, escapes as written. Checks
  /// the escapes and that no control character is left unescaped.
  std::optional<std::string_view> String();
  /// The next value (object, array, string, number, true, false, null),
  /// checked to be well-formed as simdjson checks it (surrogates paired,
  /// numbers within int64, uint64 or a finite double, at most kMaxDepth
  /// levels): its text, from its first to its last byte.
  std::optional<std::string_view> Value();
  /// The next object or array, found by following only its strings and
  /// brackets, for a caller that parses it next (which checks the rest):
  /// about twice as fast as Value() on Node objects, which are mostly strings.
  /// Nesting is bounded as in Value(), `depth` levels already being open.
  std::optional<std::string_view> Container(int depth);
  /// True when only whitespace is left; otherwise records an error.
  bool ExpectEnd();

  /// Whether the last string String() returned held an escape: without one
  /// its text is its value (no UnescapeJsonString needed), and it holds no
  /// quote, backslash or control character.
  [[nodiscard]] bool last_string_escaped() const { return last_string_escaped_; }
  /// Why the last failing call failed, e.g. "expected ',' or '}' at byte 1234".
  [[nodiscard]] const std::string& error() const { return error_; }
  /// Bytes consumed so far.
  [[nodiscard]] size_t offset() const { return pos_; }

 private:
  void SkipSpace();
  bool Fail(std::string_view what);
  bool SkipString();
  bool SkipNumber();
  static bool InRange(std::string_view number);
  bool SkipLiteral(std::string_view word);
  bool SkipValue(int depth);

  std::string_view text_;
  size_t pos_ = 0;
  std::string error_;
  bool last_string_escaped_ = false;
};

/// The value of a JSON string token whose text between the quotes is `raw`
/// (as JsonScanner::String returns it), escapes decoded. `raw` itself when it
/// holds no escape; otherwise the decoded text, written to `storage`.
/// \return nullopt for an escape that is not JSON (a lone surrogate included).
std::optional<std::string_view> UnescapeJsonString(std::string_view raw, std::string& storage);

}  // namespace tessera::k8s::internal
