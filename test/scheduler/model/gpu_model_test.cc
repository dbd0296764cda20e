// GpuModelMatches: a pod's accepted-model pattern against a GPU's model name.
#include "scheduler/model/gpu_model.h"

#include <string>

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(GpuModelMatchesTest, EqualIgnoringCaseOrAPrefixWhenThePatternEndsInAStar) {
  struct Case {
    std::string name, pattern, model;
    bool matches;
  };
  const Case cases[] = {
      {"the same name", "NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-SXM4-80GB", true},
      {"the same name in another case", "nvidia-a100-sxm4-80gb", "NVIDIA-A100-SXM4-80GB", true},
      {"another model", "NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-SXM4-80GB", false},
      {"a prefix without a star is no match", "NVIDIA-A100", "NVIDIA-A100-SXM4-80GB", false},
      {"a prefix with a star", "NVIDIA-A100*", "NVIDIA-A100-SXM4-80GB", true},
      {"a prefix with a star, in another case", "nvidia-a100*", "NVIDIA-A100-PCIE-40GB", true},
      {"a star pattern longer than the model", "NVIDIA-A100-SXM4-80GB-X*", "NVIDIA-A100-SXM4-80GB", false},
      {"a star alone matches every model", "*", "AMD-Instinct-MI300X", true},
      {"a star only at the end counts", "NVIDIA-*-80GB", "NVIDIA-A100-SXM4-80GB", false},
      {"an empty pattern matches only an empty model", "", "NVIDIA-A100-SXM4-80GB", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(GpuModelMatches(c.pattern, c.model), c.matches);
  }
}

}  // namespace
}  // namespace tessera
