#include "k8s/dra_objects.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::k8s {
namespace {

using Result = simdjson::simdjson_result<simdjson::dom::element>;

// The string at `key` of `o`: "" when `o` or the key is absent or null; an
// error naming `path` when present and not a string.
absl::StatusOr<std::string> StringField(Result o, std::string_view key, std::string_view path) {
  simdjson::dom::element e;
  if (o[key].get(e) != simdjson::SUCCESS || e.is_null()) return std::string();
  std::string_view s;
  if (e.get(s) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(absl::StrCat(Absl(path), ".", Absl(key), " must be a string"));
  }
  return std::string(s);
}

// A required string: an error naming `path` when it is absent or empty.
absl::StatusOr<std::string> Required(Result o, std::string_view key, std::string_view path) {
  absl::StatusOr<std::string> s = StringField(o, key, path);
  if (s.ok() && s->empty()) return absl::InvalidArgumentError(absl::StrCat(Absl(path), ".", Absl(key), " is missing"));
  return s;
}

bool IsPciBusIdName(std::string_view short_name) {
  const std::string lower = absl::AsciiStrToLower(Absl(short_name));
  return lower == "pcibusid" || lower == "pciebusid" || lower == "pci-bus-id" || lower == "pcie-bus-id";
}

// A DeviceAttribute's value, when it is a string ({"string": "..."}).
std::string AttributeString(simdjson::dom::element attribute) {
  std::string_view s;
  if (attribute["string"].get(s) == simdjson::SUCCESS) return std::string(s);
  return {};
}

}  // namespace

std::string_view DraAttributeShortName(std::string_view qualified) {
  const size_t slash = qualified.rfind('/');
  return slash == std::string_view::npos ? qualified : qualified.substr(slash + 1);
}

absl::StatusOr<DraSlice> DecodeResourceSlice(simdjson::dom::element slice) {
  DraSlice out;
  const Result root(simdjson::dom::element{slice});
  absl::StatusOr<std::string> name = Required(root["metadata"], "name", "ResourceSlice.metadata");
  if (!name.ok()) return name.status();
  out.name = *std::move(name);
  const std::string path = absl::StrCat("ResourceSlice ", out.name, ": spec");
  const Result spec = root["spec"];
  absl::StatusOr<std::string> driver = Required(spec, "driver", path);
  if (!driver.ok()) return driver.status();
  out.driver = *std::move(driver);
  absl::StatusOr<std::string> pool = Required(spec["pool"], "name", path + ".pool");
  if (!pool.ok()) return pool.status();
  out.pool = *std::move(pool);
  absl::StatusOr<std::string> node = StringField(spec, "nodeName", path);
  if (!node.ok()) return node.status();
  out.node = *std::move(node);

  simdjson::dom::element listed;
  if (spec["devices"].get(listed) != simdjson::SUCCESS || listed.is_null()) return out;  // a slice may publish none
  simdjson::dom::array devices;
  if (listed.get(devices) != simdjson::SUCCESS) return absl::InvalidArgumentError(path + ".devices must be a list");
  size_t i = 0;
  for (simdjson::dom::element device : devices) {
    const std::string device_path = absl::StrCat(path, ".devices[", i++, "]");
    absl::StatusOr<std::string> device_name = Required(Result(simdjson::dom::element{device}), "name", device_path);
    if (!device_name.ok()) return device_name.status();
    DraDevice d;
    d.name = *std::move(device_name);
    simdjson::dom::object attributes;
    if (device["attributes"].get(attributes) == simdjson::SUCCESS) {
      for (auto [key, value] : attributes) {
        const std::string_view short_name = DraAttributeShortName(key);
        if (absl::AsciiStrToLower(Absl(short_name)) == "uuid") {
          d.uuid = AttributeString(value);
        } else if (IsPciBusIdName(short_name)) {
          d.pci_bus_id = AttributeString(value);
        }
      }
    }
    out.devices.push_back(std::move(d));
  }
  return out;
}

absl::StatusOr<DraClaim> DecodeResourceClaim(simdjson::dom::element claim) {
  DraClaim out;
  const Result root(simdjson::dom::element{claim});
  const Result metadata = root["metadata"];
  absl::StatusOr<std::string> name = Required(metadata, "name", "ResourceClaim.metadata");
  if (!name.ok()) return name.status();
  out.name = *std::move(name);
  absl::StatusOr<std::string> uid = Required(metadata, "uid", absl::StrCat("ResourceClaim ", out.name, ": metadata"));
  if (!uid.ok()) return uid.status();
  out.uid = *std::move(uid);
  absl::StatusOr<std::string> ns = StringField(metadata, "namespace", "ResourceClaim.metadata");
  if (!ns.ok()) return ns.status();
  out.namespace_name = *std::move(ns);

  simdjson::dom::array results;
  if (root["status"]["allocation"]["devices"]["results"].get(results) != simdjson::SUCCESS) {
    return out;  // not allocated
  }
  size_t i = 0;
  for (simdjson::dom::element result : results) {
    const std::string path = absl::StrCat("ResourceClaim ", out.namespace_name, "/", out.name,
                                          ": status.allocation.devices.results[", i++, "]");
    DraAllocatedDevice d;
    for (auto [field, into] : {std::pair{"driver", &d.driver}, {"pool", &d.pool}, {"device", &d.device}}) {
      absl::StatusOr<std::string> value = Required(Result(simdjson::dom::element{result}), field, path);
      if (!value.ok()) return value.status();
      *into = *std::move(value);
    }
    out.allocated.push_back(std::move(d));
  }
  return out;
}

}  // namespace tessera::k8s
