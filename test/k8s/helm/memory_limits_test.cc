// The server's default request limits fit in the memory the chart grants
// Tessera, by the derivation in extender/service/request_memory.h: neither the
// chart's memory limit nor the defaults can change without the other.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "extender/server/http_server.h"
#include "extender/service/request_memory.h"
#include "scheduler/model/quantity_parse.h"
#include "test/k8s/helm/chart_fixture.h"

namespace tessera::deploy {
namespace {

class ChartMemory : public ChartTest {};

Manifests Rendered(std::string_view overrides = "") {
  absl::StatusOr<Manifests> m = RenderChart(overrides);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : Manifests{};
}

// The tessera container's memory limit, in bytes.
int64_t MemoryLimitBytes(const YAML::Node& tessera) {
  const YAML::Node limit = tessera["resources"]["limits"]["memory"];
  EXPECT_TRUE(limit.IsScalar()) << "the chart sets no memory limit on the tessera container";
  if (!limit.IsScalar()) return 0;
  absl::StatusOr<MemoryMiB> mib = k8s::ParseMemoryQuantity(limit.as<std::string>());
  EXPECT_TRUE(mib.ok()) << mib.status();
  return mib.ok() ? mib->value() * kMiBytes : 0;
}

TEST_F(ChartMemory, TheDefaultRequestLimitsFitTheChartsMemoryLimit) {
  const YAML::Node tessera = Container(Rendered().One("Deployment"), "tessera");
  const HttpServerOptions defaults;
  // The chart leaves the body limits at the program's defaults.
  EXPECT_FALSE(FlagValue(tessera, "--max-body-bytes").has_value());
  EXPECT_FALSE(FlagValue(tessera, "--max-body-bytes-in-flight").has_value());
  const std::optional<std::string> threads_flag = FlagValue(tessera, "--threads");
  const int64_t threads = threads_flag ? std::stoll(*threads_flag) : defaults.threads;

  const auto in_flight = static_cast<int64_t>(defaults.max_body_bytes_in_flight);
  const int64_t limit = MemoryLimitBytes(tessera);
  EXPECT_LE(ContainerMemoryNeeded(in_flight, threads), limit)
      << kPeakBytesPerBodyByte << " x " << in_flight / kMiBytes << " MiB in flight + " << threads << " threads x "
      << kPerRequestBytes / kMiBytes << " MiB + " << kProcessReserveBytes / kMiBytes << " MiB for the rest = "
      << ContainerMemoryNeeded(in_flight, threads) / kMiBytes << " MiB, over the chart's limit of " << limit / kMiBytes
      << " MiB: lower the defaults in extender/server/http_server.h or raise tessera.resources.limits.memory";
  // The largest request fits in the budget on an idle server.
  EXPECT_GE(defaults.max_body_bytes_in_flight, defaults.body_limit);
}

TEST_F(ChartMemory, TheRelationCatchesALimitThatNoLongerFits) {
  // What an operator would do wrong: halve the container's memory and keep
  // the defaults. The same check must refuse it.
  const YAML::Node tessera =
      Container(Rendered("tessera: {resources: {limits: {memory: 1Gi}}}").One("Deployment"), "tessera");
  const HttpServerOptions defaults;
  EXPECT_GT(ContainerMemoryNeeded(static_cast<int64_t>(defaults.max_body_bytes_in_flight), defaults.threads),
            MemoryLimitBytes(tessera));
}

}  // namespace
}  // namespace tessera::deploy
