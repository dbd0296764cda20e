// The policy file's `tenants:` section (scheduler/tenancy/tenant_set.h):
//
//   tenants:
//     - name: research                 # required, unique
//       namespaces: [research, ml]     # pods here belong to it (a pod's tessera.io/tenant label wins)
//       guaranteed:                    # default: nothing guaranteed
//         gpuMilli: 8000               #   guaranteed milli-GPU over all its pods (1000 = one GPU)
//         gpuMemory: 160Gi             #   reserved GPU memory
//         gpus: 8                      #   GPUs held (a pod sharing a GPU holds one)
//       max:                           # default: unlimited; each field at least its guarantee
//         gpuMilli: 16000
//       maxRunTime: 24h                # pods running longer are reported...
//       evictAfterMaxRunTime: false    # ...and evicted (through the Eviction API) when true
//       priorityLifetime: 2h           # a pod's priority lasts this long after it is bound...
//       expiredPriority: 0             # ...then preemption weighs it at this (when lower)
#pragma once

#include <vector>

#include "scheduler/common/config_errors.h"
#include "scheduler/common/yaml_map.h"
#include "scheduler/framework/plugin_args.h"
#include "scheduler/tenancy/tenant_set.h"
#include "yaml-cpp/yaml.h"

namespace tessera::config_internal {

/// Reads the section; every problem goes to `errors` with its position. The
/// set is empty when the section is absent or has errors.
TenantSet ReadTenants(const yaml_internal::YamlMap::Field& field, const YAML::Node& root, ConfigErrors& errors);

/// The fields of one entry of the list, as the reader declares them, nested
/// maps' included ("guaranteed.gpuMilli"): for docs/reference/policy-file.md.
std::vector<ArgDescription> DescribeTenantFields();

}  // namespace tessera::config_internal
