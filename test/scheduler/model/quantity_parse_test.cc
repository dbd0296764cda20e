#include "scheduler/model/quantity_parse.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera::k8s {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kTiB = int64_t{1} << 20;  // in MiB
constexpr int64_t kMaxMiB = int64_t{1} << 40;

struct Accepted {
  std::string name;
  std::string text;
  int64_t want;
};

struct Refused {
  std::string name;
  std::string text;
  std::string message;  // a substring of the status message
};

// --- ParseMemoryQuantity ------------------------------------------------------

TEST(ParseMemoryQuantity, AcceptsEveryKubernetesForm) {
  const std::vector<Accepted> cases = {
      {"zero is zero", "0", 0},
      {"one byte rounds up to one MiB", "1", 1},
      {"exactly one MiB in bytes", "1048576", 1},
      {"one byte over a MiB rounds up", "1048577", 2},
      {"a GiB in bytes", "1073741824", 1024},
      {"a plain Mi value", "512Mi", 512},
      {"a plain Gi value", "10Gi", 10 * 1024},
      {"one Ki rounds up", "1Ki", 1},
      {"1024 Ki are exactly one MiB", "1024Ki", 1},
      {"1025 Ki round up", "1025Ki", 2},
      {"a TiB", "1Ti", kTiB},
      {"a PiB", "1Pi", int64_t{1} << 30},
      {"an EiB is the largest accepted value", "1Ei", kMaxMiB},
      {"1024 Pi is the largest too", "1024Pi", kMaxMiB},
      {"the largest value in MiB", "1099511627776Mi", kMaxMiB},
      {"2^60 bytes is the largest value in bytes", "1152921504606846976", kMaxMiB},
      {"a decimal binary value", "1.5Gi", 1536},
      {"a leading point", ".5Gi", 512},
      {"a trailing point", "2.Gi", 2048},
      {"a tenth of a GiB rounds up", "0.1Gi", 103},
      {"half a MiB rounds up", "0.5Mi", 1},
      {"an exact byte count as a binary fraction", "0.0009765625Mi", 1},
      {"a decimal with trailing zeros", "1024.000Ki", 1},
      {"leading zeros", "000512Mi", 512},
      {"an explicit plus sign", "+1Gi", 1024},
      {"kilo bytes", "1k", 1},
      {"one mega byte is under a MiB", "1M", 1},
      {"two mega bytes round up", "2M", 2},
      {"giga bytes", "16G", 15259},
      {"tera bytes", "1T", 953675},
      {"peta bytes", "1P", 953674317},
      {"a lone E is exa", "1E", 953674316407},
      {"a decimal SI fraction", "1.5G", 1431},
      {"a lower-case exponent", "1e9", 954},
      {"an upper-case exponent", "1E9", 954},
      {"an exponent with a plus sign", "1e+9", 954},
      {"a zero exponent", "1048576e0", 1},
      {"a negative exponent that leaves a fraction of a byte", "15e-1", 1},
      {"a thousandth of a byte", "1e-3", 1},
      {"a huge negative exponent is still more than zero", "1e-99999999999", 1},
      {"zero with a huge exponent is zero", "0e99999999999", 0},
      {"many fraction digits are exact", "1.0000000000000000000000000001Mi", 2},
      {"many nines round up once", "1.99999999999999999999999Mi", 2},
      {"a tiny value with many leading zeros", "0.000000000000000000000000000001Gi", 1},
      {"an exact MiB with many trailing zeros", "1.00000000000000000000000000000Mi", 1},
  };
  for (const Accepted& c : cases) {
    SCOPED_TRACE(c.name + ": " + c.text);
    absl::StatusOr<MemoryMiB> got = ParseMemoryQuantity(c.text);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->value(), c.want);
  }
}

TEST(ParseMemoryQuantity, RefusesWhatIsNotAMemorySize) {
  const std::vector<Refused> cases = {
      {"an empty string", "", "must not be empty"},
      {"leading whitespace", " 1Gi", "whitespace"},
      {"trailing whitespace", "1Gi ", "whitespace"},
      {"whitespace before the suffix", "1 Gi", "whitespace"},
      {"a negative value", "-1Gi", "must not be negative"},
      {"negative zero", "-0", "must not be negative"},
      {"a suffix without a number", "Gi", "is not a Kubernetes quantity"},
      {"a lone point", ".", "is not a Kubernetes quantity"},
      {"a lone sign", "+", "is not a Kubernetes quantity"},
      {"a made-up suffix", "1Gb", "unknown suffix \"Gb\""},
      {"an upper-case K", "1K", "unknown suffix \"K\""},
      {"a lower-case binary suffix", "1ki", "unknown suffix \"ki\""},
      {"an exponent without digits", "1e", "unknown suffix \"e\""},
      {"an exponent with only a sign", "1e+", "unknown suffix \"e+\""},
      {"an exponent and a suffix", "1e9Gi", "unknown suffix \"e9Gi\""},
      {"two points", "1.2.3", "unknown suffix \".3\""},
      {"hexadecimal", "0x10", "unknown suffix \"x10\""},
      {"milli bytes, a likely typo for Mi", "512m", "suffix \"m\" is a fraction of a byte"},
      {"micro bytes", "1u", "fraction of a byte"},
      {"nano bytes", "1n", "fraction of a byte"},
      {"one MiB over the maximum", "1099511627777Mi", "exceeds 1Ei"},
      {"one byte over the maximum", "1152921504606846977", "exceeds 1Ei"},
      {"a fraction of a byte over the maximum", "1152921504606846976.1", "exceeds 1Ei"},
      {"two EiB", "2Ei", "exceeds 1Ei"},
      {"1025 PiB", "1025Pi", "exceeds 1Ei"},
      {"two exabytes", "2E", "exceeds 1Ei"},
      {"a large exponent", "1e19", "exceeds 1Ei"},
      {"a huge exponent", "1e99999999999", "exceeds 1Ei"},
      {"more digits than int64 holds", "123456789012345678901234567890", "exceeds 1Ei"},
      {"2^64 bytes does not wrap around to zero", "18446744073709551616", "exceeds 1Ei"},
      {"twenty nines do not wrap around", "99999999999999999999", "exceeds 1Ei"},
  };
  for (const Refused& c : cases) {
    SCOPED_TRACE(c.name + ": " + c.text);
    absl::StatusOr<MemoryMiB> got = ParseMemoryQuantity(c.text);
    ASSERT_FALSE(got.ok()) << "parsed as " << got->value();
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(got.status().message()), HasSubstr(c.message));
  }
}

// --- ParseGpuFraction ---------------------------------------------------------

TEST(ParseGpuFraction, AcceptsDecimalsAndPercentagesInWholePercentSteps) {
  const std::vector<Accepted> cases = {
      {"a quarter", "0.25", 250},
      {"a leading point", ".5", 500},
      {"one", "1", 1000},
      {"one with a decimal zero", "1.0", 1000},
      {"one with a trailing point", "1.", 1000},
      {"a trailing zero beyond the second decimal is no extra precision", "0.250", 250},
      {"the smallest share", "0.01", 10},
      {"one decimal", "0.1", 100},
      {"ninety-nine hundredths", "0.99", 990},
      {"leading zeros", "00.5", 500},
      {"a percentage", "25%", 250},
      {"the whole GPU as a percentage", "100%", 1000},
      {"the smallest percentage", "1%", 10},
      {"a percentage with a decimal zero", "25.0%", 250},
  };
  for (const Accepted& c : cases) {
    SCOPED_TRACE(c.name + ": " + c.text);
    absl::StatusOr<MilliGpu> got = ParseGpuFraction(c.text);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->value(), c.want);
  }
}

TEST(ParseGpuFraction, RefusesSharesOutsideTheRangeOrFinerThanAPercent) {
  const std::string kRange = "must be in (0, 1] or (0%, 100%]";
  const std::string kStep = "must be a whole percent";
  const std::string kSyntax = "must be a decimal such as 0.25 or a percentage such as 25%";
  const std::vector<Refused> cases = {
      {"a fraction above one is refused", "1.5", kRange},
      {"just above one is refused", "1.001", kRange},
      {"two is refused", "2", kRange},
      {"zero is refused", "0", kRange},
      {"zero with decimals is refused", "0.00", kRange},
      {"zero percent is refused", "0%", kRange},
      {"more than a hundred percent is refused", "101%", kRange},
      {"a fraction of a percent above a hundred is refused", "100.5%", kRange},
      {"a negative share is refused", "-0.5", kRange},
      {"an enormous percentage is refused", "99999999999999999999%", kRange},
      {"a third decimal is finer than a percent", "0.255", kStep},
      {"a fractional percentage is finer than a percent", "25.5%", kStep},
      {"a thousandth is finer than a percent", "0.001", kStep},
      {"an empty string", "", kSyntax},
      {"a lone point", ".", kSyntax},
      {"a lone percent sign", "%", kSyntax},
      {"words", "half", kSyntax},
      {"trailing whitespace", "0.5 ", kSyntax},
      {"leading whitespace", " 0.5", kSyntax},
      {"an exponent", "1e-1", kSyntax},
      {"two percent signs", "25%%", kSyntax},
      {"a plus sign", "+0.5", kSyntax},
      {"a decimal comma", "0,5", kSyntax},
      {"a Kubernetes milli quantity", "500m", kSyntax},
  };
  for (const Refused& c : cases) {
    SCOPED_TRACE(c.name + ": " + c.text);
    absl::StatusOr<MilliGpu> got = ParseGpuFraction(c.text);
    ASSERT_FALSE(got.ok()) << "parsed as " << got->value();
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(got.status().message()), HasSubstr(c.message));
  }
}

// --- ParseCount ---------------------------------------------------------------

TEST(ParseCount, AcceptsQuantitiesThatAreWholeNumbers) {
  const std::vector<Accepted> cases = {
      {"zero", "0", 0},
      {"a plain count", "8", 8},
      {"a plus sign", "+8", 8},
      {"kilo", "1k", 1000},
      {"a binary suffix", "2Ki", 2048},
      {"half a Ki is a whole number", "0.5Ki", 512},
      {"a decimal that is whole once scaled", "1.5k", 1500},
      {"milli units that add up to whole numbers", "2000m", 2},
      {"an exponent", "1e3", 1000},
      {"the largest int64", "9223372036854775807", INT64_MAX},
  };
  for (const Accepted& c : cases) {
    SCOPED_TRACE(c.name + ": " + c.text);
    absl::StatusOr<int64_t> got = ParseCount(c.text);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, c.want);
  }
}

TEST(ParseCount, RefusesFractionsNegativesAndOverflow) {
  const std::vector<Refused> cases = {
      {"a fraction of milli units", "1500m", "must be a whole number"},
      {"a plain fraction", "0.5", "must be a whole number"},
      {"a negative count", "-1", "must not be negative"},
      {"one above int64", "9223372036854775808", "exceeds 2^63-1"},
      {"twenty nines do not wrap around into range", "99999999999999999999", "exceeds 2^63-1"},
      {"2^64 does not wrap around to zero", "18446744073709551616", "exceeds 2^63-1"},
      {"a large exponent", "1e19", "exceeds 2^63-1"},
      {"eight exbibytes", "8Ei", "exceeds 2^63-1"},
      {"trailing whitespace", "8 ", "whitespace"},
      {"an empty string", "", "must not be empty"},
      {"words", "eight", "is not a Kubernetes quantity"},
      {"an unknown suffix", "8x", "unknown suffix \"x\""},
  };
  for (const Refused& c : cases) {
    SCOPED_TRACE(c.name + ": " + c.text);
    absl::StatusOr<int64_t> got = ParseCount(c.text);
    ASSERT_FALSE(got.ok()) << "parsed as " << *got;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(got.status().message()), HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace tessera::k8s
