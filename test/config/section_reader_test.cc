// SectionReader's declarations (what the policy file reference prints for a
// section): each getter's key, type, range, default and doc, nested maps'
// fields under dotted keys, and a description reader that reads absent maps.
#include "config/section_reader.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "yaml-cpp/yaml.h"

namespace tessera::config_internal {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;

std::vector<std::string> KeysOf(const std::vector<ArgDescription>& described) {
  std::vector<std::string> keys;
  for (const ArgDescription& d : described) keys.push_back(d.key);
  return keys;
}

// A reader over `yaml`'s map, as the loader opens a section.
struct Opened {
  explicit Opened(const std::string& yaml) : node(YAML::Load(yaml)), field{"s", node, node, true} {}
  YAML::Node node;
  YamlMap::Field field;
  ConfigErrors errors{"policy.yaml"};
};

TEST(SectionReaderTest, AGetterDeclaresItsKeyTypeRangeDefaultAndDocOnceAndStillReads) {
  Opened in("{n: 7}");
  std::optional<SectionReader> s = SectionReader::Open(in.field, in.node, "s", in.errors);
  ASSERT_TRUE(s.has_value());
  int64_t n = 3;
  s->Integer("n", 1, 10, n, "How many.");
  EXPECT_EQ(n, 7);
  int64_t again = 3;
  s->Integer("n", 1, 10, again, "Asked twice, declared once.");
  ASSERT_EQ(s->described().size(), 1u);
  const ArgDescription& d = s->described()[0];
  EXPECT_EQ(d.key, "n");
  EXPECT_EQ(d.type, "integer");
  EXPECT_EQ(d.allowed, "1..10");
  EXPECT_EQ(d.default_value, "3");  // what `out` held, not what was read
  EXPECT_EQ(d.doc, "How many.");
  EXPECT_TRUE(in.errors.empty());
}

TEST(SectionReaderTest, DefaultsAreWrittenAsAFileWouldWriteThem) {
  SectionReader s = SectionReader::ForDescription();
  absl::Duration interval = absl::Seconds(15);
  bool on = true;
  std::string query = "up";
  std::string off;
  std::string required;
  MemoryMiB memory(512);
  s.Duration("interval", absl::Seconds(1), absl::Hours(1), interval, "d");
  s.Bool("on", on, "b");
  s.String("query", /*allow_empty=*/true, query, "q");
  s.String("off", /*allow_empty=*/true, off, "o");
  s.String("name", /*allow_empty=*/false, required, "r");
  s.Memory("memory", memory, "m");
  EXPECT_THAT(s.described(), ElementsAre(Field(&ArgDescription::default_value, "15s"),
                                         Field(&ArgDescription::default_value, "true"),
                                         Field(&ArgDescription::default_value, "up"),
                                         Field(&ArgDescription::default_value, "\"\""),
                                         Field(&ArgDescription::default_value, ""),
                                         Field(&ArgDescription::default_value, "512Mi")));
  EXPECT_EQ(s.described()[0].allowed, "1s..1h");
}

// GpuQuota::kUnlimited and an infinite duration mean "no limit": no number a
// file could write, so no default is shown.
TEST(SectionReaderTest, ANoLimitDefaultShowsNone) {
  SectionReader s = SectionReader::ForDescription();
  int64_t gpus = std::numeric_limits<int64_t>::max();
  MemoryMiB memory(std::numeric_limits<int64_t>::max());
  absl::Duration run_time = absl::InfiniteDuration();
  s.Integer("gpus", 0, 100, gpus, "g");
  s.Memory("gpuMemory", memory, "m");
  s.Duration("maxRunTime", absl::Minutes(1), absl::Hours(1), run_time, "r");
  EXPECT_THAT(s.described(), ElementsAre(Field(&ArgDescription::default_value, ""),
                                         Field(&ArgDescription::default_value, ""),
                                         Field(&ArgDescription::default_value, "")));
}

TEST(SectionReaderTest, ANestedMapsFieldsAreDeclaredDottedInTheSectionsList) {
  Opened in("{prometheus: {labels: {node: host}}}");
  std::optional<SectionReader> s = SectionReader::Open(in.field, in.node, "telemetry", in.errors);
  ASSERT_TRUE(s.has_value());
  std::string node = "Hostname";
  if (std::optional<SectionReader> prometheus = s->Map("prometheus", "p")) {
    if (std::optional<SectionReader> labels = prometheus->Map("labels", "l")) labels->LabelName("node", node, "n");
  }
  EXPECT_EQ(node, "host");
  EXPECT_THAT(KeysOf(s->described()), ElementsAre("prometheus", "prometheus.labels", "prometheus.labels.node"));
  EXPECT_TRUE(in.errors.empty());
}

// Loading: an absent map is not there. Describing: it is read as empty, so
// its fields are declared too.
TEST(SectionReaderTest, OnlyADescriptionReadsAnAbsentMap) {
  Opened in("{}");
  std::optional<SectionReader> loading = SectionReader::Open(in.field, in.node, "telemetry", in.errors);
  ASSERT_TRUE(loading.has_value());
  EXPECT_FALSE(loading->Map("prometheus", "p").has_value());
  EXPECT_THAT(KeysOf(loading->described()), ElementsAre("prometheus"));

  SectionReader describing = SectionReader::ForDescription();
  std::optional<SectionReader> prometheus = describing.Map("prometheus", "p");
  ASSERT_TRUE(prometheus.has_value());
  std::string url;
  prometheus->String("url", /*allow_empty=*/false, url, "u");
  EXPECT_THAT(KeysOf(describing.described()), ElementsAre("prometheus", "prometheus.url"));
}

}  // namespace
}  // namespace tessera::config_internal
