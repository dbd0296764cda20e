// Loads a scheduling policy file into a Profile, validating all of it first.
//
// Policy file format:
//
//   apiVersion: tessera.io/v1alpha1   # required, exactly this
//   kind: SchedulingPolicy            # required, exactly this
//   plugins:                          # required, at least one entry, in run order
//     - name: gpu-share               # required; a name in the PluginRegistry; each at most once
//       weight: 2                     # optional integer 1..100, default 1; scales the plugin's score
//       args:                         # optional map (absent or null = all defaults);
//         nodeStrategy: binpack       #   validated by the plugin's factory via PluginArgs
//
//   telemetry:                        # optional: where live GPU metrics come from (load-aware plugin);
//     ...                             #   see telemetry/telemetry_settings.h for every field
//
//   workloadLearning:                 # optional: learn the expected workload (fgd, host-stranding) from
//     enabled: true                   #   arrivals; on by default; scheduler/cache/workload_learner.h
//     windowPods: 5000                #   100..1e6: the mix is that of the last this many arrivals
//     warmupPods: 500                 #   1..windowPods: the plugins' own `workload` fades to priorPercent by then
//     publishEveryPods: 200           #   arrivals between two learned mixes
//     coveragePercent: 95             #   the most common kinds covering this share of the window...
//     maxKinds: 64                    #   ...and at most this many
//     priorPercent: 5                 #   0..100: each plugin's own `workload` stays mixed in at this share
//
//   shortlist:                        # optional: how many nodes filter passes on for a GPU pod
//     maxNodes: 1                     #   0..100: at most this many of the best-ranked (the top score);
//                                     #   0 = every node that fits (scheduler/framework/profile_set.h)
//
//   tenants:                          # optional: teams, their guaranteed and maximum GPUs, run-time
//     - name: research                #   limits and priority lifetime; config/tenants_section.h
//       ...
//
//   pools:                            # optional: node pools that pods of given task types go to,
//     - name: gpu-training            #   each with its own plugins; config/pools_section.h
//       taskTypes: [training]
//       plugins: [...]
//
// Every section's fields, with type, range, default and meaning, are in
// docs/reference/policy-file.md, generated from the readers' getters
// (DescribePolicySections below).
//
// Exactly one plugin must be a GPU chooser (Profile::Create checks the mix).
// Any other key, at the top or in a plugin entry, is an error, as is a key the
// plugin's factory did not read from `args`.
//
// Errors: the loader does not stop at the first problem. It reports every one
// it finds, sorted by position, one per line, each as
//
//   policy.yaml:9:21: plugins[0].args.nodeStrategy: must be one of binpack, spread; got "pack"
//
// (1-based line and column of the offending value, or of the enclosing map
// for a missing field). Two kinds of error hide what follows them: a YAML
// syntax error (the parser cannot go on), and any failure to build a plugin
// (Profile::Create's check of the mix runs only once every plugin was built,
// so that a typo in one plugin's args does not also read as "no GPU chooser").
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/framework/plugin_args.h"
#include "scheduler/framework/profile.h"
#include "scheduler/framework/profile_set.h"
#include "scheduler/cache/workload_learner.h"
#include "scheduler/framework/registry.h"
#include "scheduler/tenancy/tenant_set.h"
#include "telemetry/telemetry_settings.h"

namespace tessera {

/// The only apiVersion and kind the loader accepts.
inline constexpr std::string_view kPolicyApiVersion = "tessera.io/v1alpha1";
inline constexpr std::string_view kPolicyKind = "SchedulingPolicy";

/// Everything a policy file configures: the profile, and the settings of the
/// services beside it. (The telemetry refresher is a service, not a plugin:
/// plugins stay stateless and read its data from the cluster snapshot.)
struct LoadedPolicy {
  std::shared_ptr<const Profile> profile;
  std::optional<TelemetrySettings> telemetry;  ///< nullopt: no `telemetry:` section.
  /// The `tenants:` section (config/tenants_section.h); never null, empty when absent.
  std::shared_ptr<const TenantSet> tenants = std::make_shared<const TenantSet>();
  /// The `workloadLearning:` section; its defaults (on) when absent.
  WorkloadLearning learning;
  /// `profile` and the `pools:` section's profiles (config/pools_section.h),
  /// as one set; never null once loaded (no pools: `profile` alone).
  std::shared_ptr<const ProfileSet> profiles;
};

/// One top-level section of a policy file beside apiVersion, kind and
/// plugins, as its reader declares it: what docs/reference/policy-file.md
/// lists (config/policy_reference.h).
struct PolicySectionDescription {
  std::string key;                     ///< "telemetry"
  bool is_list = false;                ///< a list of maps (pools, tenants): `fields` are each item's
  std::string doc;                     ///< one line: what the section sets, and what its absence means
  std::vector<ArgDescription> fields;  ///< in the order read; a nested map's as "prometheus.url"
};

/// Every section the loader reads beside apiVersion, kind and plugins, in
/// the reference's order. Each section's own reader runs once on an empty
/// map (config_internal::SectionReader::ForDescription) to declare its fields.
std::vector<PolicySectionDescription> DescribePolicySections();

/// Loads a whole policy from its text, validated like LoadPolicyText (one
/// error list for the plugins and the telemetry section alike).
absl::StatusOr<LoadedPolicy> LoadPolicyDocument(std::string_view yaml, std::string_view file_name,
                                                const PluginRegistry& registry);

/// Reads and loads the policy file at `path`; errors name the file as `path`.
/// \return the profile, or InvalidArgument with every error, one per line (an
///   unreadable file gets the status code its errno maps to, e.g. NotFound).
absl::StatusOr<std::shared_ptr<const Profile>> LoadPolicyFile(const std::string& path,
                                                              const PluginRegistry& registry);

/// Loads a policy from its text. Nothing is read from disk; `file_name` only
/// names the source in error messages.
absl::StatusOr<std::shared_ptr<const Profile>> LoadPolicyText(std::string_view yaml,
                                                              std::string_view file_name,
                                                              const PluginRegistry& registry);

}  // namespace tessera
