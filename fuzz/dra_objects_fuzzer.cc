// DRA's ResourceSlice and ResourceClaim (k8s/dra_objects.h), as the watch
// reads them from the API server: the same bytes are tried as both.
#include "fuzz/fuzz_input.h"
#include "k8s/dra_objects.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  const std::string_view text = fuzz::AsText(data, size);
  simdjson::dom::parser parser;
  simdjson::dom::element object;
  if (parser.parse(text.data(), text.size(), true).get(object) != simdjson::SUCCESS) return 0;
  absl::StatusOr<k8s::DraSlice> slice = k8s::DecodeResourceSlice(object);
  if (slice.ok()) {
    if (slice->name.empty() || slice->driver.empty() || slice->pool.empty()) fuzz::Violated("an accepted slice lacks its name, driver or pool");
    for (const k8s::DraDevice& d : slice->devices) {
      if (d.name.empty()) fuzz::Violated("an accepted device has no name");
    }
  }
  absl::StatusOr<k8s::DraClaim> claim = k8s::DecodeResourceClaim(object);
  if (claim.ok()) {
    if (claim->uid.empty() || claim->name.empty()) fuzz::Violated("an accepted claim lacks its uid or name");
    for (const k8s::DraAllocatedDevice& d : claim->allocated) {
      if (d.driver.empty() || d.pool.empty() || d.device.empty()) fuzz::Violated("an allocated device lacks a field");
    }
  }
  return 0;
}
