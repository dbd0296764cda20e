#include "k8s/pod_host_request.h"

#include <algorithm>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "scheduler/model/quantity_parse.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::k8s {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

HostRequest Plus(HostRequest a, HostRequest b) { return {.cpu = a.cpu + b.cpu, .memory = a.memory + b.memory}; }
HostRequest Max(HostRequest a, HostRequest b) {
  return {.cpu = std::max(a.cpu, b.cpu), .memory = std::max(a.memory, b.memory)};
}

// The member `key` of `o`; false when absent or null.
bool Member(object o, std::string_view key, element& out) {
  return o.at_key(key).get(out) == simdjson::SUCCESS && !out.is_null();
}

absl::Status NotAn(std::string_view what, const std::string& path) {
  return absl::InvalidArgumentError(absl::StrCat(path, " must be ", Absl(what)));
}

// The cpu and memory of the ResourceList `list` (requests or overhead).
// `where` is the list's path, built only for an error message.
template <typename Where>
absl::StatusOr<HostRequest> ReadResourceList(element list, Where where) {
  HostRequest out;
  object entries;
  if (list.get(entries) != simdjson::SUCCESS) return NotAn("an object", where());
  for (auto [key, value] : entries) {
    const bool cpu = key == "cpu";
    if (!cpu && key != "memory") continue;
    std::string_view text;
    if (value.get(text) != simdjson::SUCCESS) {
      return NotAn("a quantity string", absl::StrCat(where(), ".", Absl(key)));
    }
    if (cpu) {
      absl::StatusOr<MilliCpu> q = ParseCpuQuantity(text);
      if (!q.ok()) return absl::InvalidArgumentError(absl::StrCat(where(), ".cpu=\"", Absl(text), "\": ", q.status().message()));
      out.cpu = *q;
    } else {
      absl::StatusOr<MemoryMiB> q = ParseMemoryQuantity(text);
      if (!q.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(where(), ".memory=\"", Absl(text), "\": ", q.status().message()));
      }
      out.memory = *q;
    }
  }
  return out;
}

// One container's resources.requests; `is_sidecar` set from restartPolicy.
absl::StatusOr<HostRequest> ContainerRequest(element container, std::string_view path, std::string_view field,
                                             size_t i, bool* is_sidecar) {
  auto where = [&] { return absl::StrCat(Absl(path), ".spec.", Absl(field), "[", i, "]"); };
  object c;
  if (container.get(c) != simdjson::SUCCESS) return NotAn("an object", where());
  if (is_sidecar != nullptr) {
    std::string_view policy;
    element e;
    *is_sidecar = Member(c, "restartPolicy", e) && e.get(policy) == simdjson::SUCCESS && policy == "Always";
  }
  element resources_element;
  if (!Member(c, "resources", resources_element)) return HostRequest{};
  object resources;
  if (resources_element.get(resources) != simdjson::SUCCESS) return NotAn("an object", absl::StrCat(where(), ".resources"));
  element requests;
  if (!Member(resources, "requests", requests)) return HostRequest{};
  return ReadResourceList(requests, [&] { return absl::StrCat(where(), ".resources.requests"); });
}

// An absent list is nullopt (a default dom::array cannot be iterated).
absl::StatusOr<std::optional<array>> OptionalArray(object spec, std::string_view key, std::string_view path) {
  element e;
  if (!Member(spec, key, e)) return std::optional<array>();
  array a;
  if (e.get(a) != simdjson::SUCCESS) return NotAn("an array", absl::StrCat(Absl(path), ".spec.", Absl(key)));
  return std::optional<array>(a);
}

}  // namespace

absl::StatusOr<HostRequest> DecodePodHostRequest(element pod, std::string_view path) {
  object pod_object;
  if (pod.get(pod_object) != simdjson::SUCCESS) return NotAn("an object", std::string(path));
  element spec_element;
  if (!Member(pod_object, "spec", spec_element)) return HostRequest{};
  object spec;
  if (spec_element.get(spec) != simdjson::SUCCESS) return NotAn("an object", absl::StrCat(Absl(path), ".spec"));

  // 1. The containers run together.
  HostRequest containers;
  absl::StatusOr<std::optional<array>> list = OptionalArray(spec, "containers", path);
  if (!list.ok()) return list.status();
  size_t i = 0;
  if (list->has_value()) {
    for (element c : **list) {
      absl::StatusOr<HostRequest> r = ContainerRequest(c, path, "containers", i++, nullptr);
      if (!r.ok()) return r.status();
      containers = Plus(containers, *r);
    }
  }

  // 2. Init containers one at a time, each beside the sidecars started before it.
  HostRequest sidecars, init_peak;
  if (list = OptionalArray(spec, "initContainers", path); !list.ok()) return list.status();
  i = 0;
  if (list->has_value()) {
    for (element c : **list) {
      bool sidecar = false;
      absl::StatusOr<HostRequest> r = ContainerRequest(c, path, "initContainers", i++, &sidecar);
      if (!r.ok()) return r.status();
      if (sidecar) {
        containers = Plus(containers, *r);  // runs beside the containers too
        sidecars = Plus(sidecars, *r);
        init_peak = Max(init_peak, sidecars);
      } else {
        init_peak = Max(init_peak, Plus(*r, sidecars));
      }
    }
  }
  HostRequest total = Max(containers, init_peak);

  // 3. The runtime's own overhead.
  element overhead;
  if (Member(spec, "overhead", overhead)) {
    absl::StatusOr<HostRequest> r = ReadResourceList(overhead, [&] { return absl::StrCat(Absl(path), ".spec.overhead"); });
    if (!r.ok()) return r.status();
    total = Plus(total, *r);
  }
  return total;
}

}  // namespace tessera::k8s
