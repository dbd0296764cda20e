#include "scheduler/common/json_text.h"

#include <bit>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tessera {

namespace {

// Finding the bytes a JSON string cannot hold as they are (a control
// character, a quote, a backslash) and, for a caller that also refuses it,
// one more byte. Node names (DNS names) and reasons hold none, and answers
// carry thousands of them, so the scans read 16 bytes at a time with SSE2
// (every x86-64) and 8 at a time elsewhere: the build does not vectorise a
// loop at -O2, and a byte at a time the check was the filter answer's largest
// cost. `also` '\0' adds nothing: it is a control character already.

bool IsSpecialByte(unsigned char c, unsigned char also) { return c < 0x20 || c == '"' || c == '\\' || c == also; }

constexpr uint64_t kEveryByte = 0x0101010101010101ULL;  // 0x01 in each of 8 bytes
constexpr uint64_t kHighBits = 0x8080808080808080ULL;

// Non-zero when a byte of `word` is below `n` (n <= 0x80); exact as a yes/no.
constexpr uint64_t AnyByteBelow(uint64_t word, uint64_t n) { return (word - kEveryByte * n) & ~word & kHighBits; }

// Non-zero when a byte of `word` is `c`.
constexpr uint64_t AnyByteIs(uint64_t word, unsigned char c) { return AnyByteBelow(word ^ (kEveryByte * c), 1); }

// Non-zero when a byte of `word` is special (IsSpecialByte).
constexpr uint64_t AnySpecial(uint64_t word, unsigned char also) {
  return AnyByteBelow(word, 0x20) | AnyByteIs(word, '"') | AnyByteIs(word, '\\') | AnyByteIs(word, also);
}

static_assert(AnySpecial(0x6162636465666768ULL, 0) == 0 && AnySpecial(0xff80fe7f61626364ULL, 0) == 0);
static_assert(AnySpecial(0x616263646566671fULL, 0) != 0 && AnySpecial(0x22ffffffffffffffULL, 0) != 0 &&
              AnySpecial(0x61625c6465666768ULL, 0) != 0 && AnySpecial(0x6162636400666768ULL, 0) != 0 &&
              AnySpecial(0x6162632564656667ULL, '%') != 0 && AnySpecial(0x6162632564656667ULL, 0) == 0);

uint64_t Word(const char* p) {
  uint64_t word;
  std::memcpy(&word, p, sizeof word);
  return word;
}

#if defined(__SSE2__)
// 0xff in each byte of the 16 at `p` that is special.
__m128i SpecialBytes16(const char* p, __m128i also) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i last_control = _mm_set1_epi8(0x1f);
  const __m128i control = _mm_cmpeq_epi8(_mm_max_epu8(v, last_control), last_control);  // v <= 0x1f
  const __m128i quote = _mm_cmpeq_epi8(v, _mm_set1_epi8('"'));
  const __m128i backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'));
  return _mm_or_si128(_mm_or_si128(control, quote), _mm_or_si128(backslash, _mm_cmpeq_epi8(v, also)));
}
#endif

// Whether a byte of `s` is special. Blocks that overlap at the end are read
// again: a yes/no does not mind.
bool AnySpecial(std::string_view s, unsigned char also) {
  const char* p = s.data();
  const size_t n = s.size();
#if defined(__SSE2__)
  if (n >= 16) {
    const __m128i extra = _mm_set1_epi8(static_cast<char>(also));
    __m128i found = _mm_setzero_si128();
    size_t i = 0;
    for (; i + 16 <= n; i += 16) found = _mm_or_si128(found, SpecialBytes16(p + i, extra));
    if (i < n) found = _mm_or_si128(found, SpecialBytes16(p + n - 16, extra));
    return _mm_movemask_epi8(found) != 0;
  }
#endif
  if (n >= 8) {
    uint64_t found = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) found |= AnySpecial(Word(p + i), also);
    if (i < n) found |= AnySpecial(Word(p + n - 8), also);
    return found != 0;
  }
  bool found = false;
  for (size_t i = 0; i < n; ++i) found |= IsSpecialByte(static_cast<unsigned char>(p[i]), also);
  return found;
}

}  // namespace

size_t PlainJsonStringPrefix(std::string_view s) {
  const char* p = s.data();
  const size_t n = s.size();
  size_t i = 0;
#if defined(__SSE2__)
  for (; i + 16 <= n; i += 16) {
    const auto special = static_cast<uint32_t>(_mm_movemask_epi8(SpecialBytes16(p + i, _mm_setzero_si128())));
    if (special != 0) return i + static_cast<size_t>(std::countr_zero(special));
  }
#endif
  for (; i + 8 <= n && AnySpecial(Word(p + i), 0) == 0; i += 8) {
  }
  while (i < n && !IsSpecialByte(static_cast<unsigned char>(p[i]), 0)) ++i;
  return i;
}

bool IsPlainJsonString(std::string_view s, char also) { return !AnySpecial(s, static_cast<unsigned char>(also)); }

void AppendJsonString(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  if (IsPlainJsonString(s)) {
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
