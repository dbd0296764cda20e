// Name -> factory for plugins. One explicit registry, built in one function
// (policies/builtin_registry.cc); adding a plugin never edits a switch.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "scheduler/framework/plugin.h"

namespace tessera {

class PluginArgs;  // scheduler/framework/plugin_args.h: typed, validating access to a plugin's YAML args.

/// Builds a plugin from its args. A factory validates its own args: it reads
/// them through `args`, which records every error with file, line and field
/// path; it returns an error status if any arg is invalid.
using PluginFactory = std::function<absl::StatusOr<std::unique_ptr<Plugin>>(PluginArgs& args)>;

class PluginRegistry {
 public:
  /// One line of a registry's list: the name the policy file uses, the
  /// factory, and one line on what the plugin does (the generated reference's).
  struct Entry {
    std::string_view name;
    PluginFactory factory;
    std::string_view summary;
  };
  /// A registry of every entry of `entries`.
  /// \return AlreadyExists naming the first name listed twice.
  static absl::StatusOr<PluginRegistry> FromList(const std::vector<Entry>& entries);

  /// \return AlreadyExists if `name` is registered.
  absl::Status Register(std::string name, PluginFactory factory, std::string summary = "");
  /// \return nullptr when unknown.
  [[nodiscard]] const PluginFactory* Find(std::string_view name) const;
  /// Registered names, sorted (for "unknown plugin X; known: a, b, c").
  [[nodiscard]] std::vector<std::string> Names() const;
  /// The summary `name` was registered with; empty when unknown or none.
  [[nodiscard]] std::string Summary(std::string_view name) const;

 private:
  struct Registered {
    PluginFactory factory;
    std::string summary;
  };
  absl::flat_hash_map<std::string, Registered> factories_;
};

}  // namespace tessera
