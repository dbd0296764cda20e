// The tessera_pool_* gauges as /metrics shows them: one series per pool,
// model and state or kind; a pool that went away reads 0.
#include "extender/service/pool_gauges.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/cache/cluster_model.h"
#include "test/testing/builders.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::Holding;
using testing::Inventory;

TEST(PoolGauges, EachPoolAndModelHasItsSeriesWithTheirLabels) {
  ClusterModel model;
  model.UpsertNode("a1", Inventory(2, "A100", 16384), absl::OkStatus(), std::nullopt, "train");
  model.UpsertNode("n1", Inventory(1, "", 0), absl::OkStatus());
  model.UpsertPod(Holding("q", "a1", {0}, 250, 1024));
  MetricsRegistry metrics;
  PoolGauges gauges(metrics);
  gauges.Refresh(*model.Publish());
  const std::string text = metrics.Render();
  for (const char* line : {
           R"(tessera_pool_gpus{model="A100",pool="train",state="idle"} 1)",
           R"(tessera_pool_gpus{model="A100",pool="train",state="partial"} 1)",
           R"(tessera_pool_gpus{model="A100",pool="train",state="full"} 0)",
           R"(tessera_pool_gpus{model="A100",pool="train",state="unhealthy"} 0)",
           R"(tessera_pool_gpu_milli{kind="capacity",model="A100",pool="train"} 2000)",
           R"(tessera_pool_gpu_milli{kind="allocated",model="A100",pool="train"} 250)",
           R"(tessera_pool_gpu_milli{kind="free_fragmented",model="A100",pool="train"} 750)",
           R"(tessera_pool_gpu_memory_mib{kind="allocated",model="A100",pool="train"} 1024)",
           R"(tessera_pool_nodes{model="A100",pool="train",state="in_use"} 1)",
           R"x(tessera_pool_nodes{model="(unknown)",pool="(none)",state="idle"} 1)x",
       }) {
    EXPECT_THAT(text, HasSubstr(std::string("\n") + line + "\n"));
  }
}

TEST(PoolGauges, APoolThatWentAwayReadsZero) {
  ClusterModel model;
  model.UpsertNode("a1", Inventory(2, "A100", 16384), absl::OkStatus(), std::nullopt, "spot");
  MetricsRegistry metrics;
  PoolGauges gauges(metrics);
  gauges.Refresh(*model.Publish());
  model.RemoveNode("a1");
  gauges.Refresh(*model.Publish());
  const std::string text = metrics.Render();
  EXPECT_THAT(text, HasSubstr("\n" R"(tessera_pool_gpus{model="A100",pool="spot",state="idle"} 0)" "\n"));
  EXPECT_THAT(text, HasSubstr("\n" R"(tessera_pool_gpu_milli{kind="capacity",model="A100",pool="spot"} 0)" "\n"));
}

}  // namespace
}  // namespace tessera
