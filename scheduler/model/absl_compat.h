// Debian 12's abseil is built with its own absl::string_view (not an alias of
// std::string_view), so StrCat and heterogeneous hash-map lookups do not take
// a std::string_view directly. Tessera's interfaces use std::string_view;
// this converts at the few abseil call sites. (StrFormat's %s takes either.)
#pragma once

#include <string_view>

#include "absl/strings/string_view.h"

namespace tessera {

constexpr absl::string_view Absl(std::string_view v) { return absl::string_view(v.data(), v.size()); }
constexpr std::string_view Std(absl::string_view v) { return std::string_view(v.data(), v.size()); }

}  // namespace tessera
