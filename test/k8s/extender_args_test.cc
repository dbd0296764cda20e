// DecodeExtenderArgs reads a filter or prioritize body an object at a time
// (k8s/extender_args.h): what it decodes must be what a parse of the whole
// body says, its refusals must name the field, and its memory must not grow
// with the body.
#include "k8s/extender_args.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "k8s/extender_results.h"
#include "k8s/pod_record.h"
#include "test/testing/data_files.h"

namespace tessera::k8s {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using nlohmann::json;

// The recorded full-node filter request with `copies` times its nodes, each
// copy under new names.
std::string RecordedWithNodes(size_t copies) {
  const json recorded = json::parse(testing::ReadFile(testing::FixturePath("filter-request-fullnodes.json")));
  json request = recorded;
  request["Nodes"]["items"] = json::array();
  for (size_t i = 0; i < copies; ++i) {
    for (json node : recorded["Nodes"]["items"]) {
      node["metadata"]["name"] = absl::StrCat(node["metadata"]["name"].get<std::string>(), "-", i);
      request["Nodes"]["items"].push_back(std::move(node));
    }
  }
  return request.dump();
}

TEST(DecodeExtenderArgsTest, ReadsWhatAWholeBodyParseReadsAndEchoesEachNodeAsSent) {
  for (const char* fixture : {"filter-request-fullnodes.json", "prioritize-request-fullnodes.json",
                              "filter-request-nodecache.json", "filter-request-nodecache-after-preemption.json"}) {
    SCOPED_TRACE(fixture);
    const std::string body = testing::ReadFile(testing::FixturePath(fixture));
    simdjson::dom::parser parser;
    absl::StatusOr<ExtenderArgs> args = DecodeExtenderArgs(body, parser);
    ASSERT_TRUE(args.ok()) << args.status();

    // The same fields, read from one DOM of the whole body.
    simdjson::dom::parser whole;
    simdjson::dom::element doc = whole.parse(body).value();
    absl::StatusOr<WirePod> pod = DecodePodObject(doc["Pod"].value(), "Pod");
    ASSERT_TRUE(pod.ok()) << pod.status();
    EXPECT_EQ(args->pod.name, pod->name);
    EXPECT_EQ(args->pod.namespace_name, pod->namespace_name);
    EXPECT_EQ(args->pod.uid, pod->uid);
    EXPECT_EQ(args->pod.annotations, pod->annotations);
    EXPECT_EQ(args->pod.host, pod->host);
    simdjson::dom::array items;
    if (doc["Nodes"]["items"].get(items) == simdjson::SUCCESS) {
      ASSERT_TRUE(args->nodes.has_value());
      ASSERT_EQ(args->nodes->size(), items.size());
      size_t i = 0;
      for (simdjson::dom::element item : items) {
        absl::StatusOr<WireNode> node = DecodeNodeObject(item, "Node");
        ASSERT_TRUE(node.ok()) << node.status();
        const WireNode& got = (*args->nodes)[i++];
        EXPECT_EQ(got.name, node->name);
        EXPECT_EQ(got.inventory.inventory_annotation, node->inventory.inventory_annotation);
        EXPECT_EQ(got.inventory.gfd_product, node->inventory.gfd_product);
        EXPECT_EQ(got.allocatable_cpu, node->allocatable_cpu);
        EXPECT_EQ(got.allocatable_memory, node->allocatable_memory);
        EXPECT_EQ(json::parse(got.json), json::parse(simdjson::to_string(item)));
        EXPECT_NE(body.find(got.json), std::string::npos) << "the echo is the node's text in the body";
      }
    } else {
      ASSERT_TRUE(args->node_names.has_value());
      std::vector<std::string_view> names;
      simdjson::dom::array list;
      ASSERT_EQ(doc["NodeNames"].get(list), simdjson::SUCCESS);
      for (simdjson::dom::element name : list) names.push_back(name.get_string().value());
      EXPECT_EQ(*args->node_names, names);
    }
  }
}

TEST(DecodeExtenderArgsTest, ItsParserGrowsToTheLargestObjectNotToTheBody) {
  // ~11 MB of Node objects of ~4 KB: a whole-body parse made the parser
  // hold ~15 bytes per byte of it (160 MB) until the next request.
  const std::string body = RecordedWithNodes(1000);
  ASSERT_GT(body.size(), size_t{10} << 20);
  simdjson::dom::parser parser;
  absl::StatusOr<ExtenderArgs> args = DecodeExtenderArgs(body, parser);
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(args->nodes->size(), 3000u);
  EXPECT_LT(parser.capacity(), size_t{64} << 10);
}

TEST(DecodeExtenderArgsTest, NamesAreMarkedPlainOnlyWhenNoneWasWrittenWithAnEscape) {
  const struct {
    const char* case_name;
    std::string names;
    bool plain;
  } cases[] = {
      {"DNS names", R"(["gpu-node-1","n.example.com"])", true},
      {"no names", "[]", true},
      {"one name with a unicode escape", R"(["a","n\u00e9"])", false},
      {"one name with an escaped quote", R"(["a\"b","c"])", false},
      {"an escaped slash, harmless but escaped", R"(["a\/b"])", false},
  };
  for (const auto& c : cases) {
    simdjson::dom::parser parser;
    const std::string body = R"({"Pod":{"metadata":{"name":"p"}},"NodeNames":)" + c.names + "}";  // the names point into it
    absl::StatusOr<ExtenderArgs> args = DecodeExtenderArgs(body, parser);
    ASSERT_TRUE(args.ok()) << c.case_name << ": " << args.status();
    EXPECT_EQ(args->node_names_plain, c.plain) << c.case_name;
    // Plain or not, the answer is the same: the flag only skips a check.
    const std::vector<int64_t> scores(args->node_names->size(), 3);
    EXPECT_EQ(EncodeHostPriorityList(*args->node_names, scores, args->node_names_plain),
              EncodeHostPriorityList(*args->node_names, scores)) << c.case_name;
  }
}

TEST(DecodeExtenderArgsTest, DecodedArgsStayValidWhenMovedAndWhenTheParserParsesAgain) {
  const std::string body = R"({"Pod":{"metadata":{"name":"p","namespace":"ml","uid":"u-1"}},)"
                           R"("NodeNames":["n\u00e9-1","plain"]})";
  simdjson::dom::parser parser;
  absl::StatusOr<ExtenderArgs> decoded = DecodeExtenderArgs(body, parser);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ExtenderArgs args = *std::move(decoded);
  ASSERT_TRUE(parser.parse(std::string(R"({"overwrite":"everything the parser held"})")).error() == simdjson::SUCCESS);
  EXPECT_EQ(args.pod.name, "p");
  EXPECT_EQ(args.pod.namespace_name, "ml");
  EXPECT_EQ(args.pod.uid, "u-1");
  ASSERT_TRUE(args.node_names.has_value());
  EXPECT_EQ(*args.node_names, (std::vector<std::string_view>{"n\xc3\xa9-1", "plain"}));
}

TEST(DecodeExtenderArgsTest, ThePodsTaskTypeLabelIsKeptAsSentAndOutlivesTheParse) {
  const std::string body =
      R"({"Pod":{"metadata":{"name":"p","labels":{"tessera.io/task-type":"train\u0069ng","app":"x"}}},)"
      R"("NodeNames":["a"]})";
  simdjson::dom::parser parser;
  absl::StatusOr<ExtenderArgs> args = DecodeExtenderArgs(body, parser);
  ASSERT_TRUE(args.ok()) << args.status();
  ASSERT_TRUE(parser.parse(std::string(R"({"overwrite":"everything the parser held"})")).error() == simdjson::SUCCESS);
  EXPECT_EQ(args->pod.task_type, "training");

  absl::StatusOr<ExtenderArgs> none = DecodeExtenderArgs(R"({"Pod":{"metadata":{"name":"p"}},"NodeNames":[]})", parser);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->pod.task_type, "");

  absl::StatusOr<ExtenderArgs> number = DecodeExtenderArgs(
      R"({"Pod":{"metadata":{"name":"p","labels":{"tessera.io/task-type":7}}},"NodeNames":[]})", parser);
  EXPECT_THAT(std::string(number.status().message()),
              HasSubstr("Pod.metadata.labels[\"tessera.io/task-type\"] must be a string, got number"));
}

TEST(DecodePodRecordTest, TheWatchsRecordCarriesTheTaskTypeForBind) {
  simdjson::dom::parser parser;
  simdjson::dom::element pod;
  ASSERT_EQ(parser.parse(std::string(R"({"metadata":{"name":"p","uid":"u","labels":{"tessera.io/task-type":"inference"}}})"))
                .get(pod),
            simdjson::SUCCESS);
  absl::StatusOr<PodRecord> record = DecodePodRecord(pod);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->task_type, "inference");
}

// GPU Feature Discovery's MIG labels reach the inventory from a request's
// Node objects and from the watch's alike, and outlive the parse of the next
// node and a move of the args.
TEST(DecodeExtenderArgsTest, EveryMigCountLabelOfANodeIsReadInBothForms) {
  json request = json::parse(RecordedWithNodes(1));
  json& labels = request["Nodes"]["items"][0]["metadata"]["labels"];
  labels["nvidia.com/mig.strategy"] = "mixed";
  labels["nvidia.com/mig-1g.10gb.count"] = "3";
  labels["nvidia.com/mig-1g.10gb.memory"] = "9728";
  labels["nvidia.com/mig-3g.40gb.count"] = "1";
  const std::string body = request.dump();
  simdjson::dom::parser parser;
  absl::StatusOr<ExtenderArgs> decoded = DecodeExtenderArgs(body, parser);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ExtenderArgs args = *std::move(decoded);
  ASSERT_TRUE(parser.parse(std::string(R"({"overwrite":"everything the parser held"})")).error() == simdjson::SUCCESS);
  const auto as_pairs = [](absl::Span<const GfdMigCount> counts) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const GfdMigCount& c : counts) out.emplace_back(c.profile, c.count);
    std::sort(out.begin(), out.end());
    return out;
  };
  const std::vector<std::pair<std::string, std::string>> want = {{"1g.10gb", "3"}, {"3g.40gb", "1"}};
  const WireNode& node = (*args.nodes)[0];
  EXPECT_EQ(node.inventory.gfd_mig_strategy, "mixed");
  EXPECT_EQ(as_pairs(node.inventory.gfd_mig_counts), want);
  EXPECT_TRUE((*args.nodes)[1].inventory.gfd_mig_counts.empty());

  simdjson::dom::parser whole;
  simdjson::dom::element item = whole.parse(body).value()["Nodes"]["items"].at(0).value();
  absl::StatusOr<WireNode> watched = DecodeNodeObject(item, "Node");
  ASSERT_TRUE(watched.ok()) << watched.status();
  const WireNode moved = *std::move(watched);
  EXPECT_EQ(as_pairs(moved.inventory.gfd_mig_counts), want) << "the view follows the node when it moves";

  labels["nvidia.com/mig-2g.20gb.count"] = 2;
  absl::StatusOr<ExtenderArgs> refused = DecodeExtenderArgs(request.dump(), parser);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr(R"(Nodes.items[0].metadata.labels["nvidia.com/mig-2g.20gb.count"] must be a string)"));
}

TEST(DecodeExtenderArgsTest, RefusalsNameTheFieldOrWhereTheJsonBreaks) {
  const std::string pod = R"({"metadata":{"name":"p","namespace":"ml"}})";
  struct Case {
    std::string name;
    std::string body;
    absl::StatusCode code;
    std::string message;  // a prefix of the error message
  };
  const std::vector<Case> cases = {
      {"empty", " ", absl::StatusCode::kInvalidArgument, "request body is empty"},
      {"not an object", "[1]", absl::StatusCode::kInvalidArgument, "ExtenderArgs must be a JSON object, got array"},
      {"broken after a good pod", R"({"Pod":)" + pod + R"(,"NodeNames":["a",})", absl::StatusCode::kInvalidArgument,
       "malformed JSON: expected a value at byte"},
      {"malformed JSON outranks a wrong type before it", R"({"Pod":1,"NodeNames":[)",
       absl::StatusCode::kInvalidArgument, "malformed JSON: "},
      {"invalid UTF-8", R"({"Pod":)" + pod + ",\"NodeNames\":[\"\xff\"]}", absl::StatusCode::kInvalidArgument,
       "malformed JSON: The input is not valid UTF-8"},
      {"text after the object", R"({"Pod":)" + pod + R"(,"NodeNames":[]} {})", absl::StatusCode::kInvalidArgument,
       "malformed JSON: unexpected text after the JSON value"},
      {"a broken node", R"({"Pod":)" + pod + R"(,"Nodes":{"items":[{"a":tru}]}})",
       absl::StatusCode::kInvalidArgument, "malformed JSON: "},
      {"a broken node after a wrong type", R"({"Pod":1,"Nodes":{"items":[{"a":tru}]}})",
       absl::StatusCode::kInvalidArgument, "malformed JSON: invalid literal at byte 5 of Nodes.items[0]"},
      {"no pod", R"({"NodeNames":[]})", absl::StatusCode::kInvalidArgument, "ExtenderArgs.Pod is missing"},
      {"a null pod", R"({"Pod":null,"NodeNames":[]})", absl::StatusCode::kInvalidArgument,
       "ExtenderArgs.Pod is missing"},
      {"a pod of the wrong type", R"({"Pod":"p","NodeNames":[]})", absl::StatusCode::kInvalidArgument,
       "ExtenderArgs.Pod must be an object, got string"},
      {"a node name that is a number", R"({"Pod":)" + pod + R"(,"NodeNames":["a",7]})",
       absl::StatusCode::kInvalidArgument, "NodeNames[1] must be a string, got number"},
      {"Nodes that are a list", R"({"Pod":)" + pod + R"(,"Nodes":[]})", absl::StatusCode::kInvalidArgument,
       "ExtenderArgs.Nodes must be a NodeList object, got array"},
      {"items that are an object", R"({"Pod":)" + pod + R"(,"Nodes":{"items":{}}})",
       absl::StatusCode::kInvalidArgument, "Nodes.items must be an array, got object"},
      {"a node without a name", R"({"Pod":)" + pod + R"(,"Nodes":{"items":[{"metadata":{}}]}})",
       absl::StatusCode::kInvalidArgument, "Nodes.items[0].metadata.name is missing"},
      {"a node of over 4 MiB", R"({"Pod":)" + pod + R"(,"Nodes":{"items":[{"metadata":{"name":"n"},"x":")" +
                                   std::string(kMaxObjectBytes, 'x') + R"("}]}})",
       absl::StatusCode::kResourceExhausted, "Nodes.items[0] is 4194336 bytes; Tessera reads objects of at most"},
      {"neither form", R"({"Pod":)" + pod + "}", absl::StatusCode::kInvalidArgument,
       "ExtenderArgs has neither Nodes nor NodeNames"},
      {"both forms", R"({"Pod":)" + pod + R"(,"Nodes":{"items":[]},"NodeNames":[]})",
       absl::StatusCode::kInvalidArgument, "ExtenderArgs has both Nodes and NodeNames"},
  };
  simdjson::dom::parser parser;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<ExtenderArgs> args = DecodeExtenderArgs(c.body, parser);
    ASSERT_FALSE(args.ok());
    EXPECT_EQ(args.status().code(), c.code) << args.status();
    EXPECT_THAT(std::string(args.status().message()), StartsWith(c.message));
  }
}

TEST(DecodeExtenderArgsTest, ReadsMembersAsADomLookupWould) {
  const std::string pod = R"({"metadata":{"name":"p","namespace":"ml"}})";
  simdjson::dom::parser parser;
  // Escaped member names are the same names; the first of two duplicates counts.
  absl::StatusOr<ExtenderArgs> args = DecodeExtenderArgs(
      R"({"P\u006fd":)" + pod + R"(,"Pod":"ignored","Nodes":null,"NodeNames":["a"],"NodeNames":7,"Other":[{}]})",
      parser);
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(args->pod.name, "p");
  EXPECT_FALSE(args->nodes.has_value());
  EXPECT_EQ(args->node_names->size(), 1u);
  // A NodeList without items is no node, not an error.
  args = DecodeExtenderArgs(R"({"Pod":)" + pod + R"(,"Nodes":{"metadata":{},"items":null}})", parser);
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_TRUE(args->nodes.has_value());
  EXPECT_TRUE(args->nodes->empty());
}

TEST(DecodeExtenderArgsTest, TooManyNodesIsReportedWithTheCountWhateverElseIsWrongWithThem) {
  std::string body = R"({"Pod":{"metadata":{"name":"p"}},"NodeNames":[7)";
  for (size_t i = 1; i <= kMaxNodesPerRequest; ++i) body += ",\"n\"";
  body += "]}";
  simdjson::dom::parser parser;
  absl::StatusOr<ExtenderArgs> args = DecodeExtenderArgs(body, parser);
  ASSERT_FALSE(args.ok());
  EXPECT_EQ(args.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(args.status().message(),
            "ExtenderArgs.NodeNames has 100001 entries; Tessera answers at most 100000 nodes a request");
}

TEST(DecodeBindingArgsTest, ABodyOverTheObjectLimitIsRefusedBeforeItIsParsed) {
  simdjson::dom::parser parser;
  const std::string body = R"({"PodName":"p","PodNamespace":"ml","PodUID":"u","Node":"n","x":")" +
                           std::string(kMaxObjectBytes, 'x') + "\"}";
  absl::StatusOr<ExtenderBindingArgs> args = DecodeBindingArgs(body, parser);
  ASSERT_FALSE(args.ok());
  EXPECT_EQ(args.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(args.status().message(), HasSubstr("ExtenderBindingArgs is"));
  EXPECT_EQ(parser.capacity(), 0u);
}

}  // namespace
}  // namespace tessera::k8s
