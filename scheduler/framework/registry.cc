#include "scheduler/framework/registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "scheduler/model/absl_compat.h"

namespace tessera {

absl::StatusOr<PluginRegistry> PluginRegistry::FromList(const std::vector<Entry>& entries) {
  PluginRegistry registry;
  for (const Entry& entry : entries) {
    absl::Status st = registry.Register(std::string(entry.name), entry.factory, std::string(entry.summary));
    if (!st.ok()) return st;
  }
  return registry;
}

absl::Status PluginRegistry::Register(std::string name, PluginFactory factory, std::string summary) {
  if (factories_.contains(name)) {
    return absl::AlreadyExistsError(absl::StrCat("plugin \"", name, "\" is registered twice"));
  }
  factories_.emplace(std::move(name), Registered{std::move(factory), std::move(summary)});
  return absl::OkStatus();
}

const PluginFactory* PluginRegistry::Find(std::string_view name) const {
  auto it = factories_.find(Absl(name));
  return it == factories_.end() ? nullptr : &it->second.factory;
}

std::string PluginRegistry::Summary(std::string_view name) const {
  auto it = factories_.find(Absl(name));
  return it == factories_.end() ? std::string() : it->second.summary;
}

std::vector<std::string> PluginRegistry::Names() const {
  std::vector<std::string> names;
  names.reserve(factories_.size());
  for (const auto& [name, registered] : factories_) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace tessera
