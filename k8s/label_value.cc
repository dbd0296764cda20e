#include "k8s/label_value.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace tessera::k8s {

absl::Status CheckLabelValue(std::string_view value) {
  if (value.empty()) return absl::InvalidArgumentError("must not be empty");
  if (value.size() > kMaxLabelValueLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("must be at most ", kMaxLabelValueLength, " characters; has ", value.size()));
  }
  const auto alnum = [](char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)); };
  for (char c : value) {
    if (!alnum(c) && c != '-' && c != '_' && c != '.') {
      return absl::InvalidArgumentError("may hold only letters, digits, '-', '_' and '.'");
    }
  }
  if (!alnum(value.front()) || !alnum(value.back())) {
    return absl::InvalidArgumentError("must begin and end with a letter or digit");
  }
  return absl::OkStatus();
}

}  // namespace tessera::k8s
