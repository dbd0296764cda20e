// The fields of Dynamic Resource Allocation's objects (resource.k8s.io/v1,
// GA in Kubernetes 1.34) that Tessera reads to stay off GPUs a DRA driver
// hands out: a ResourceSlice says which devices a driver publishes on which
// node, and a ResourceClaim's status which of them kube-scheduler allocated.
// A claim names its devices by driver, pool and device name only; the slice
// gives the node and the device's UUID, which Tessera matches to the GPUs of
// its own inventory (docs: "DRA on the same cluster").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "simdjson.h"

namespace tessera::k8s {

/// One device of a ResourceSlice.
struct DraDevice {
  std::string name;  ///< spec.devices[].name, unique in its pool.
  /// The device's UUID attribute ("uuid", in the driver's domain or
  /// qualified, e.g. "gpu.nvidia.com/uuid"); empty when it has none.
  std::string uuid;
  /// Its PCI bus id attribute ("pciBusID", "pcieBusID", "pci-bus-id", any
  /// case, qualified or not); empty when it has none.
  std::string pci_bus_id;
};

/// A ResourceSlice: devices one driver publishes in one pool.
struct DraSlice {
  std::string name;    ///< metadata.name
  std::string driver;  ///< spec.driver
  std::string pool;    ///< spec.pool.name
  /// spec.nodeName; empty for a slice of devices reachable from many nodes
  /// (network-attached), which Tessera's per-node GPUs never are.
  std::string node;
  std::vector<DraDevice> devices;
};

/// One device a claim was allocated (status.allocation.devices.results[]).
struct DraAllocatedDevice {
  std::string driver;
  std::string pool;
  std::string device;
};

/// A ResourceClaim as far as its allocation goes.
struct DraClaim {
  std::string uid;
  std::string namespace_name;
  std::string name;
  std::vector<DraAllocatedDevice> allocated;  ///< Empty while unallocated.
};

/// Decodes a ResourceSlice. InvalidArgument, naming the field, when it has no
/// name, driver or pool, or a device without a name.
absl::StatusOr<DraSlice> DecodeResourceSlice(simdjson::dom::element slice);
/// Decodes a ResourceClaim. InvalidArgument, naming the field, when it has no
/// uid or name, or an allocation result without driver, pool or device.
absl::StatusOr<DraClaim> DecodeResourceClaim(simdjson::dom::element claim);

/// The attribute name without its domain ("gpu.nvidia.com/uuid" -> "uuid").
std::string_view DraAttributeShortName(std::string_view qualified);

}  // namespace tessera::k8s
