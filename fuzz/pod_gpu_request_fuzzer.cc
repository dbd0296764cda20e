// A pod's GPU request from its `tessera.io/*` annotations (k8s/pod_gpu_request.h).
//
// Input: one annotation a line, `key=value`; a key without a `/` is taken as
// `tessera.io/<key>`, so seeds read `gpu-fraction=0.25`.
//
// Properties: an accepted request is within the ranges the header states
// (1..64 GPUs; guaranteed ≤ limit ≤ 1000 milli; memory ≤ its limit).
#include "fuzz/fuzz_input.h"
#include "k8s/pod_gpu_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  std::string_view text = fuzz::AsText(data, size);
  k8s::Annotations annotations;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    const size_t eq = line.find('=');
    const std::string_view key = line.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? std::string_view() : line.substr(eq + 1);
    std::string full = key.find('/') == std::string_view::npos ? "tessera.io/" + std::string(key) : std::string(key);
    annotations[std::move(full)] = std::string(value);
  }
  absl::StatusOr<std::optional<PodGpuRequest>> request = k8s::ParsePodGpuRequest(annotations);
  if (!request.ok() || !request->has_value()) return 0;
  const PodGpuRequest& r = **request;
  if (r.count < 1 || r.count > 64) fuzz::Violated("GPU count out of 1..64");
  if (r.guaranteed.value() <= 0 || r.guaranteed > r.limit || r.limit.value() > 1000) {
    fuzz::Violated("guaranteed/limit out of 0 < guaranteed <= limit <= 1000");
  }
  if (r.memory.value() < 0 || (r.memory_limit.value() != 0 && r.memory_limit < r.memory)) {
    fuzz::Violated("memory out of 0 <= memory <= memory limit");
  }
  return 0;
}
