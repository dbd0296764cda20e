// Requests no kube-scheduler sends but anyone on the port can: answers stay
// bounded, refusals say why.
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "extender/service/router.h"
#include "k8s/extender_args.h"
#include "test/testing/service_fixture.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using nlohmann::json;

constexpr const char* kCluster = R"(
nodes:
  - {name: a100-1, labels: {nvidia.com/gpu.count: "8", nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB, nvidia.com/gpu.memory: "81920"}}
)";

// A filter request naming `count` nodes, node-0 ... node-<count-1>, for a pod
// with `annotations`; built as text, as json would take seconds at 100 000 names.
std::string ManyNodes(const json& annotations, size_t count) {
  json pod = {{"metadata", {{"name", "p"}, {"namespace", "ml"}, {"uid", "u-1"}, {"annotations", annotations}}},
              {"spec", json::object()}};
  std::string body = R"({"Pod":)" + pod.dump() + R"(,"Nodes":null,"NodeNames":[)";
  for (size_t i = 0; i < count; ++i) {
    if (i > 0) body += ',';
    body += "\"node-" + std::to_string(i) + "\"";
  }
  return body + "]}";
}

HttpRequest Post(std::string target, std::string body) {
  HttpRequest req{boost::beast::http::verb::post, target, 11};
  req.body() = std::move(body);
  req.prepare_payload();
  return req;
}

TEST(HostileRequestsTest, APodLevelReasonIsAnsweredOnceWhateverTheNodeCount) {
  testing::ServiceFixture fixture(kCluster);
  // A kilobyte of nonsense in the annotation: once copied per node, 100 000
  // names made a 100 MB answer (120 000 names and 6 KB made 740 MB).
  const std::string nonsense(1000, 'x');
  const std::string body = ManyNodes({{"tessera.io/gpu-fraction", nonsense + "%"}}, k8s::kMaxNodesPerRequest);
  absl::StatusOr<std::string> answer = fixture.service().Filter(body);
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_LT(answer->size(), size_t{4} << 10);
  const json got = json::parse(*answer);
  EXPECT_THAT(got["Error"].get<std::string>(), HasSubstr("pod has an invalid GPU request: tessera.io/gpu-fraction="));
  EXPECT_THAT(got["Error"].get<std::string>(), Not(HasSubstr("%")));
  EXPECT_EQ(got["NodeNames"], json::array());
  EXPECT_EQ(got["FailedNodes"], json::object());
  EXPECT_EQ(got["FailedAndUnresolvableNodes"], json::object());
}

TEST(HostileRequestsTest, AnAnswerNamingEveryNodeStaysWithinAFewTimesTheRequest) {
  testing::ServiceFixture fixture(kCluster);
  // Unknown nodes each get their own (short) reason.
  const std::string body = ManyNodes({{"tessera.io/gpu-fraction", "0.5"}}, k8s::kMaxNodesPerRequest);
  absl::StatusOr<std::string> answer = fixture.service().Filter(body);
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_LT(answer->size(), 8 * body.size());
  EXPECT_EQ(json::parse(*answer)["FailedNodes"].size(), k8s::kMaxNodesPerRequest);
}

TEST(HostileRequestsTest, MoreNodesThanTheCapAreRefusedWith413AndAReason) {
  testing::ServiceFixture fixture(kCluster);
  const Router router(RouterOptions{}, fixture.service(), fixture.metrics());
  const std::string body = ManyNodes({{"tessera.io/gpu-fraction", "1.5"}}, k8s::kMaxNodesPerRequest + 1);
  for (const char* verb : {"/filter", "/prioritize"}) {
    SCOPED_TRACE(verb);
    const HttpResponse res = router.Handle(Post(verb, body));
    EXPECT_EQ(res.result(), boost::beast::http::status::payload_too_large);
    EXPECT_EQ(json::parse(res.body())["Error"],
              "ExtenderArgs.NodeNames has 100001 entries; Tessera answers at most 100000 nodes a request");
  }
}

}  // namespace
}  // namespace tessera
