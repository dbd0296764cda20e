#include "scheduler/model/quantity_parse.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace tessera::k8s {

namespace {

// Exact decimal evaluation. A quantity is read as a digit string with a
// decimal point and a power of two, value = digits × 10^exp10 × 2^exp2, and
// evaluated to an integer floor plus an "inexact" bit. Working on the digits
// keeps "0.1Gi", "1.5G" and "1e-3" exact where a double would round them.

constexpr int64_t kExponentCap = 1'000'000;  // saturate e99999999999 early
constexpr uint64_t kMaxMemoryBytes = uint64_t{1} << 60;  // 2^40 MiB
constexpr uint64_t kMaxMilliCpu = uint64_t{1} << 40;
constexpr int kMiBShift = 20;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// A syntactically valid Kubernetes quantity, before any unit is applied.
struct Decomposed {
  std::string_view int_digits;
  std::string_view frac_digits;
  int64_t exp10 = 0;      // decimal SI suffix or exponent, e.g. G = 9
  int exp2 = 0;           // binary SI suffix, e.g. Gi = 30
  std::string_view suffix;
};

// A suffix's power of ten or of two into `d`: binary SI (Ki..Ei), decimal SI
// (n..E) or an exponent (e9, E-3).
absl::Status ApplySuffix(Decomposed& d) {
  const std::string_view s = d.suffix;
  if (s.empty()) return absl::OkStatus();
  if (s.size() == 2 && s[1] == 'i') {
    static constexpr std::string_view kBinary = "KMGTPE";
    const size_t k = kBinary.find(s[0]);
    if (k != std::string_view::npos) {
      d.exp2 = 10 * static_cast<int>(k + 1);
      return absl::OkStatus();
    }
  }
  if (s.size() == 1) {
    static constexpr std::string_view kDecimal = "numkMGTPE";  // a lone "E" is exa, "E9" an exponent
    static constexpr int kExp10[] = {-9, -6, -3, 3, 6, 9, 12, 15, 18};
    const size_t k = kDecimal.find(s[0]);
    if (k != std::string_view::npos) {
      d.exp10 = kExp10[k];
      return absl::OkStatus();
    }
  }
  if (s[0] == 'e' || s[0] == 'E') {
    size_t i = 1;
    bool negative = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
    const size_t digits_start = i;
    int64_t exponent = 0;
    while (i < s.size() && IsDigit(s[i])) {
      exponent = std::min<int64_t>(exponent * 10 + (s[i] - '0'), kExponentCap);
      ++i;
    }
    if (i > digits_start && i == s.size()) {
      d.exp10 = negative ? -exponent : exponent;
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "unknown suffix \"%s\" (expected Ki, Mi, Gi, Ti, Pi, Ei, k, M, G, T, P, E or an exponent such as e9)", s));
}

// The Kubernetes grammar (apimachinery resource.Quantity):
//   <quantity> ::= <sign>? <digits> ( "." <digits>? )? <suffix> | <sign>? "." <digits> <suffix>
//   <suffix>   ::= "" | Ki | Mi | Gi | Ti | Pi | Ei | n | u | m | k | M | G | T | P | E
//                | ( "e" | "E" ) <sign>? <digits>
absl::StatusOr<Decomposed> Decompose(std::string_view text) {
  if (text.empty()) return absl::InvalidArgumentError("must not be empty");
  for (char c : text) {
    if (IsSpace(c)) return absl::InvalidArgumentError("must not contain whitespace");
  }
  size_t pos = 0;
  if (text[pos] == '-') return absl::InvalidArgumentError("must not be negative");
  if (text[pos] == '+') ++pos;

  Decomposed d;
  size_t start = pos;
  while (pos < text.size() && IsDigit(text[pos])) ++pos;
  d.int_digits = text.substr(start, pos - start);
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    start = pos;
    while (pos < text.size() && IsDigit(text[pos])) ++pos;
    d.frac_digits = text.substr(start, pos - start);
  }
  if (d.int_digits.empty() && d.frac_digits.empty()) {
    return absl::InvalidArgumentError(
        "is not a Kubernetes quantity (expected a number with an optional suffix, e.g. 512Mi, 16Gi or 10G)");
  }

  d.suffix = text.substr(pos);
  if (absl::Status st = ApplySuffix(d); !st.ok()) return st;
  return d;
}

struct Evaluated {
  uint64_t floor = 0;
  bool inexact = false;  // the exact value lies strictly between floor and floor + 1
};

// Evaluates `d` exactly. nullopt when the value exceeds `limit` (≤ 2^63).
std::optional<Evaluated> Evaluate(const Decomposed& d, uint64_t limit) {
  // View int_digits ++ frac_digits as one digit string with the decimal point
  // after `point` digits.
  const size_t n_int = d.int_digits.size();
  const size_t n = n_int + d.frac_digits.size();
  auto digit = [&](size_t i) -> uint64_t {
    return static_cast<uint64_t>((i < n_int ? d.int_digits[i] : d.frac_digits[i - n_int]) - '0');
  };
  size_t first = 0;
  while (first < n && digit(first) == 0) ++first;
  if (first == n) return Evaluated{};  // zero, in any unit
  size_t last = n;
  while (digit(last - 1) == 0) --last;

  // Significant digits s[0..m) with the point after `point` of them:
  // value = 0.s × 10^point × 2^exp2, so 10^(point-1) ≤ value / 2^exp2 < 10^point.
  const int64_t m = static_cast<int64_t>(last - first);
  const int64_t point = static_cast<int64_t>(n_int) - static_cast<int64_t>(first) + d.exp10;
  auto sig = [&](int64_t i) -> uint64_t {  // 0 outside [0, m)
    return (i < 0 || i >= m) ? 0 : digit(first + static_cast<size_t>(i));
  };
  // value ≥ 10^19 > 2^63 ≥ limit: refuse before any arithmetic can overflow.
  if (point > 19) return std::nullopt;

  uint64_t integer = 0;  // < 10^19 < 2^64
  for (int64_t i = 0; i < point; ++i) integer = integer * 10 + sig(i);

  // Multiply the fractional digits by 2^exp2, least significant first; the
  // carry out of the first fractional digit is the integer part of the product.
  // Each step stays below 10 × 2^60 < 2^64.
  uint64_t carry = 0;
  bool inexact = false;
  if (m > point) {
    if (d.exp2 == 0 || point <= -19) {
      // 0 < fraction × 2^exp2 < 10^-19 × 2^60 < 1 in the second case.
      inexact = true;
    } else {
      const uint64_t factor = uint64_t{1} << d.exp2;
      for (int64_t i = m - 1; i >= point; --i) {
        const uint64_t v = sig(i) * factor + carry;
        if (v % 10 != 0) inexact = true;
        carry = v / 10;
      }
    }
  }
  if (integer > (limit >> d.exp2)) return std::nullopt;
  const uint64_t value = (integer << d.exp2) + carry;  // < 2^63 + 2^60, no wrap
  if (value > limit) return std::nullopt;
  return Evaluated{value, inexact};
}

}  // namespace

absl::StatusOr<MemoryMiB> ParseMemoryQuantity(std::string_view text) {
  absl::StatusOr<Decomposed> d = Decompose(text);
  if (!d.ok()) return d.status();
  if (d->exp10 < 0 && d->suffix.size() == 1) {
    // Valid for Kubernetes, but "512m" is half a byte; almost always a typo for Mi.
    return absl::InvalidArgumentError(absl::StrFormat(
        "suffix \"%s\" is a fraction of a byte (did you mean \"Mi\"?)", d->suffix));
  }
  const std::optional<Evaluated> v = Evaluate(*d, kMaxMemoryBytes);
  // Rounding up to a whole byte first does not change the MiB result:
  // ceil(ceil(x) / 2^20) == ceil(x / 2^20).
  if (!v || v->floor + (v->inexact ? 1 : 0) > kMaxMemoryBytes) {
    return absl::InvalidArgumentError("exceeds 1Ei (2^40 MiB)");
  }
  const uint64_t bytes = v->floor + (v->inexact ? 1 : 0);
  const uint64_t mib = (bytes + (uint64_t{1} << kMiBShift) - 1) >> kMiBShift;
  return MemoryMiB(static_cast<int64_t>(mib));
}

absl::StatusOr<MilliCpu> ParseCpuQuantity(std::string_view text) {
  absl::StatusOr<Decomposed> d = Decompose(text);
  if (!d.ok()) return d.status();
  d->exp10 += 3;  // cores -> milli-CPU
  const std::optional<Evaluated> v = Evaluate(*d, kMaxMilliCpu);
  if (!v || v->floor + (v->inexact ? 1 : 0) > kMaxMilliCpu) {
    return absl::InvalidArgumentError("exceeds 2^40 milli-CPU");
  }
  return MilliCpu(static_cast<int64_t>(v->floor + (v->inexact ? 1 : 0)));
}

absl::StatusOr<MilliGpu> ParseGpuFraction(std::string_view text) {
  static constexpr std::string_view kSyntax =
      "must be a decimal such as 0.25 or a percentage such as 25%";
  static constexpr std::string_view kRange = "must be in (0, 1] or (0%, 100%]";
  static constexpr std::string_view kStep =
      "must be a whole percent (at most two decimal places, or a whole number before %)";

  // A negative share is a range error rather than a syntax error: the user's
  // intent is clear, the value is not.
  if (!text.empty() && text.front() == '-') return absl::InvalidArgumentError(std::string(kRange));
  std::string_view body = text;
  const bool percent = !body.empty() && body.back() == '%';
  if (percent) body.remove_suffix(1);
  size_t pos = 0;
  while (pos < body.size() && IsDigit(body[pos])) ++pos;
  std::string_view int_digits = body.substr(0, pos);
  std::string_view frac_digits;
  if (pos < body.size() && body[pos] == '.') {
    frac_digits = body.substr(pos + 1);
    for (char c : frac_digits) {
      if (!IsDigit(c)) return absl::InvalidArgumentError(std::string(kSyntax));
    }
  } else if (pos != body.size()) {
    return absl::InvalidArgumentError(std::string(kSyntax));
  }
  if (int_digits.empty() && frac_digits.empty()) return absl::InvalidArgumentError(std::string(kSyntax));

  // Trailing zeros carry no precision ("0.250" is 0.25); leading zeros no magnitude.
  while (!frac_digits.empty() && frac_digits.back() == '0') frac_digits.remove_suffix(1);
  while (!int_digits.empty() && int_digits.front() == '0') int_digits.remove_prefix(1);

  // The whole part, saturated: anything above the maximum is simply too big.
  const int64_t max_whole = percent ? 100 : 1;
  int64_t whole = 0;
  for (char c : int_digits) {
    whole = whole * 10 + (c - '0');
    if (whole > max_whole) break;
  }
  const bool zero = whole == 0 && frac_digits.empty();
  const bool above = whole > max_whole || (whole == max_whole && !frac_digits.empty());
  if (zero || above) return absl::InvalidArgumentError(std::string(kRange));

  // One percent is 10 milli: a percentage has no fractional digits, a decimal at most two.
  if (frac_digits.size() > (percent ? 0u : 2u)) return absl::InvalidArgumentError(std::string(kStep));
  if (percent) return MilliGpu(whole * 10);
  int64_t milli = whole * 1000;
  if (!frac_digits.empty()) milli += (frac_digits[0] - '0') * 100;
  if (frac_digits.size() > 1) milli += (frac_digits[1] - '0') * 10;
  return MilliGpu(milli);
}

absl::StatusOr<int64_t> ParseCount(std::string_view text) {
  absl::StatusOr<Decomposed> d = Decompose(text);
  if (!d.ok()) return d.status();
  const std::optional<Evaluated> v =
      Evaluate(*d, static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
  if (!v) return absl::InvalidArgumentError("exceeds 2^63-1");
  if (v->inexact) return absl::InvalidArgumentError("must be a whole number");
  return static_cast<int64_t>(v->floor);
}

}  // namespace tessera::k8s
