// Why the wire decoder uses simdjson: parsing a full NodeList with nlohmann's
// DOM against Tessera's simdjson decoder, on the same body made of the real
// Node objects kube-scheduler v1.26 sent (data/kube-scheduler-v1.26), repeated to
// N nodes.
//
//   ./build-bench/benchmarks/json_decode_benchmark --benchmark_min_time=0.2
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "k8s/extender_args.h"

namespace tessera {
namespace {

const std::string& Body(int nodes) {
  static std::map<int, std::string> cache;
  auto it = cache.find(nodes);
  if (it != cache.end()) return it->second;
  const std::string path = TESSERA_DATA_DIR "/kube-scheduler-v1.26/filter-request-fullnodes.json";
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json request = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  // Stop with the file's name, not a parse exception or a division by zero nodes.
  if (request.is_discarded() || !request["Nodes"]["items"].is_array() || request["Nodes"]["items"].empty()) {
    std::fprintf(stderr, "json_decode_benchmark: %s: cannot read a NodeList from it\n", path.c_str());
    std::exit(1);
  }
  const nlohmann::json recorded = request["Nodes"]["items"];
  nlohmann::json items = nlohmann::json::array();
  for (int i = 0; i < nodes; ++i) {
    nlohmann::json node = recorded[static_cast<size_t>(i) % recorded.size()];
    node["metadata"]["name"] = "gpu-node-" + std::to_string(i);
    items.push_back(std::move(node));
  }
  request["Nodes"]["items"] = std::move(items);
  return cache.emplace(nodes, request.dump()).first->second;
}

void BM_NlohmannDomParse(benchmark::State& state) {
  const std::string& body = Body(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    nlohmann::json doc = nlohmann::json::parse(body);
    benchmark::DoNotOptimize(doc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}

void BM_TesseraSimdjsonDecode(benchmark::State& state) {
  const std::string& body = Body(static_cast<int>(state.range(0)));
  simdjson::dom::parser parser;
  for (auto _ : state) {
    auto args = k8s::DecodeExtenderArgs(body, parser);
    benchmark::DoNotOptimize(args);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}

BENCHMARK(BM_NlohmannDomParse)->Arg(100)->Arg(1000)->Arg(5000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TesseraSimdjsonDecode)->Arg(100)->Arg(1000)->Arg(5000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
