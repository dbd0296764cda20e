#include "scheduler/framework/registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "scheduler/model/absl_compat.h"

namespace tessera {

absl::StatusOr<PluginRegistry> PluginRegistry::FromList(const std::vector<Entry>& entries) {
  PluginRegistry registry;
  for (const Entry& entry : entries) {
    if (absl::Status st = registry.Register(std::string(entry.name), entry.factory); !st.ok()) return st;
  }
  return registry;
}

absl::Status PluginRegistry::Register(std::string name, PluginFactory factory) {
  if (factories_.contains(name)) {
    return absl::AlreadyExistsError(absl::StrCat("plugin \"", name, "\" is registered twice"));
  }
  factories_.emplace(std::move(name), std::move(factory));
  return absl::OkStatus();
}

const PluginFactory* PluginRegistry::Find(std::string_view name) const {
  auto it = factories_.find(Absl(name));
  return it == factories_.end() ? nullptr : &it->second;
}

std::vector<std::string> PluginRegistry::Names() const {
  std::vector<std::string> names;
  names.reserve(factories_.size());
  for (const auto& [name, factory] : factories_) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace tessera
