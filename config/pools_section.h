// The policy file's `pools:` section (scheduler/framework/profile_set.h;
// docs/concepts/pools.md):
//
//   pools:
//     - name: gpu-training             # required, unique: the node pool, as the node's pool
//                                      #   label says (tessera.io/node-pool, karpenter.sh/nodepool, ...)
//       taskTypes: [training]          # required, at least one: values of the pod label
//                                      #   tessera.io/task-type routed here; each in one pool only
//       exclusive: true                # optional, default false: keep other pods off its nodes
//       plugins:                       # required: the pool's own profile, the schema of the
//         - name: gpu-share            #   top-level `plugins:` (same registry, same checks)
//           args: {nodeStrategy: binpack}
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "scheduler/common/config_errors.h"
#include "scheduler/common/yaml_map.h"
#include "scheduler/framework/plugin_args.h"
#include "scheduler/framework/profile.h"
#include "scheduler/framework/profile_set.h"
#include "yaml-cpp/yaml.h"

namespace tessera::config_internal {

/// Builds the profile of one `plugins:` list (`path` names it in errors:
/// "pools[1].plugins"); null with its errors recorded when it has any.
/// `field` is the `plugins` field, or null when absent; `parent` its map.
using ProfileBuilder = std::function<std::shared_ptr<const Profile>(
    const yaml_internal::YamlMap::Field* field, const YAML::Node& parent, const std::string& path)>;

/// Reads the section; every problem goes to `errors` with its position.
/// The pools are complete (each with its profile) when no error was added.
std::vector<PoolPolicy> ReadPools(const yaml_internal::YamlMap::Field& field, const YAML::Node& root,
                                  ConfigErrors& errors, const ProfileBuilder& build_profile);

/// The fields of one entry of the list, as the reader declares them: for
/// docs/reference/policy-file.md.
std::vector<ArgDescription> DescribePoolFields();

}  // namespace tessera::config_internal
