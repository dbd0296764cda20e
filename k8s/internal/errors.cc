#include "k8s/internal/errors.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "scheduler/common/json_text.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::k8s::internal {

namespace {
constexpr size_t kMaxQuotedBytes = 128;
}  // namespace

std::string Quote(std::string_view value) {
  std::string out;
  if (value.size() <= kMaxQuotedBytes) {
    AppendJsonString(out, value);
    return out;
  }
  size_t cut = kMaxQuotedBytes;
  // Back up over UTF-8 continuation bytes so the message stays valid UTF-8.
  while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80) --cut;
  AppendJsonString(out, value.substr(0, cut));
  out.insert(out.size() - 1, "...");
  return out;
}

std::string Field(std::string_view key, std::string_view value) {
  return absl::StrCat(Absl(key), "=", Quote(value));
}

void ErrorList::Add(std::string message) {
  if (messages_.size() < kMaxMessages) {
    messages_.push_back(std::move(message));
  } else {
    ++dropped_;
  }
}

absl::Status ErrorList::ToStatus() const {
  if (messages_.empty()) return absl::OkStatus();
  std::string joined = absl::StrJoin(messages_, "; ");
  if (dropped_ > 0) absl::StrAppend(&joined, "; and ", dropped_, " more");
  return absl::InvalidArgumentError(joined);
}

}  // namespace tessera::k8s::internal
