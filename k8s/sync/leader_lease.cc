#include "k8s/sync/leader_lease.h"

#include <unistd.h>

#include <array>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "k8s/client/reflector.h"
#include "k8s/internal/json.h"
#include "scheduler/common/json_text.h"
#include "scheduler/common/log.h"
#include "scheduler/common/thread_name.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::k8s {
namespace {

std::string LeasesPath(const LeaseOptions& o) {
  return absl::StrCat("/apis/coordination.k8s.io/v1/namespaces/", QueryEscape(o.namespace_name), "/leases");
}

std::string LeasePath(const LeaseOptions& o) { return absl::StrCat(LeasesPath(o), "/", QueryEscape(o.name)); }

// Kubernetes' MicroTime: RFC 3339 in UTC with microseconds.
std::string MicroTime(absl::Time t) { return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", t, absl::UTCTimeZone()); }

std::string StringField(simdjson::dom::object object, std::string_view key) {
  std::string_view v;
  if (object[key].get_string().get(v) != simdjson::SUCCESS) return "";
  return std::string(v);
}

int64_t IntField(simdjson::dom::object object, std::string_view key) {
  simdjson::dom::element e;
  if (object[key].get(e) != simdjson::SUCCESS) return 0;
  return internal::AsInt64(e).value_or(0);
}

absl::StatusOr<LeaseRecord> DecodeLease(std::string_view body) {
  simdjson::dom::object root;
  if (internal::ParseJson(body).get_object().get(root) != simdjson::SUCCESS) {
    return absl::DataLossError("the lease is not a JSON object");
  }
  LeaseRecord r;
  simdjson::dom::object meta;
  if (root["metadata"].get_object().get(meta) == simdjson::SUCCESS) r.resource_version = StringField(meta, "resourceVersion");
  simdjson::dom::object spec;
  if (root["spec"].get_object().get(spec) == simdjson::SUCCESS) {
    r.holder = StringField(spec, "holderIdentity");
    r.lease_duration_seconds = IntField(spec, "leaseDurationSeconds");
    r.acquire_time = StringField(spec, "acquireTime");
    r.renew_time = StringField(spec, "renewTime");
    r.transitions = IntField(spec, "leaseTransitions");
  }
  return r;
}

std::string EncodeLease(const LeaseOptions& o, const LeaseRecord& r) {
  std::string body = R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":)";
  AppendJsonString(body, o.name);
  body += ",\"namespace\":";
  AppendJsonString(body, o.namespace_name);
  if (!r.resource_version.empty()) {
    body += ",\"resourceVersion\":";
    AppendJsonString(body, r.resource_version);
  }
  body += "},\"spec\":{\"holderIdentity\":";
  AppendJsonString(body, r.holder);
  absl::StrAppend(&body, ",\"leaseDurationSeconds\":", r.lease_duration_seconds, ",\"leaseTransitions\":", r.transitions);
  for (const auto& [key, value] : {std::pair{"acquireTime", &r.acquire_time}, {"renewTime", &r.renew_time}}) {
    if (value->empty()) continue;
    absl::StrAppend(&body, ",\"", key, "\":");
    AppendJsonString(body, *value);
  }
  body += "}}";
  return body;
}

}  // namespace

std::string LeaseOptionsError(const LeaseOptions& o) {
  if (o.namespace_name.empty() || o.name.empty()) return "the lease needs a namespace and a name";
  if (o.identity.empty()) return "the lease needs an identity";
  if (o.retry_period <= absl::ZeroDuration()) return "the retry period must be positive";
  if (o.renew_deadline <= o.retry_period) return "the renew deadline must be longer than the retry period";
  if (o.lease_duration <= o.renew_deadline) return "the lease duration must be longer than the renew deadline";
  if (o.lease_duration < absl::Seconds(1)) return "the lease duration must be at least 1s";
  return "";
}

std::string DefaultLeaseIdentity() {
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) != 0) host[0] = '\0';
  std::random_device random;
  const uint64_t suffix = (uint64_t{random()} << 32) | random();
  return absl::StrFormat("%s_%016x", host[0] != '\0' ? host.data() : "tessera", suffix);
}

LeaderLease::LeaderLease(ApiClient& client, LeaseOptions options, MetricsRegistry* metrics)
    : client_(client), options_(std::move(options)) {
  if (metrics != nullptr) {
    leader_gauge_ = &metrics->Gauge("tessera_leader", "1 while this replica holds the lease that lets it write on its own "
                                                      "initiative (the nudge), else 0.");
    acquired_counter_ = &metrics->Counter("tessera_leader_acquired_total", "Times this replica took the lease.");
  }
}

LeaderLease::~LeaderLease() { Stop(false); }

absl::StatusOr<LeaseRecord> LeaderLease::Read(bool* absent) {
  *absent = false;
  absl::StatusOr<ApiResponse> r = client_.Get(LeasePath(options_));
  if (!r.ok()) return r.status();
  if (r->status == 404) {
    *absent = true;
    return LeaseRecord{};
  }
  if (r->status != 200) {
    return absl::UnavailableError(absl::StrCat("GET lease ", options_.namespace_name, "/", options_.name, ": HTTP ",
                                               r->status, ": ", StatusMessage(r->body)));
  }
  return DecodeLease(r->body);
}

// True when written; false when another replica wrote first (409).
absl::StatusOr<bool> LeaderLease::Write(const LeaseRecord& record, bool create) {
  absl::StatusOr<ApiResponse> r = create ? client_.Send("POST", LeasesPath(options_), EncodeLease(options_, record),
                                                        "application/json")
                                         : client_.Send("PUT", LeasePath(options_), EncodeLease(options_, record),
                                                        "application/json");
  if (!r.ok()) return r.status();
  if (r->status == 409) return false;
  if (r->status != 200 && r->status != 201) {
    return absl::UnavailableError(absl::StrCat(create ? "create" : "update", " lease ", options_.namespace_name, "/",
                                               options_.name, ": HTTP ", r->status, ": ", StatusMessage(r->body)));
  }
  return true;
}

void LeaderLease::Observe(const LeaseRecord& record, absl::Time now) {
  if (!record.SameTerm(observed_)) observed_at_ = now;
  observed_ = record;
}

absl::StatusOr<bool> LeaderLease::TryAcquireOrRenew(absl::Time now) {
  bool absent = false;
  absl::StatusOr<LeaseRecord> current = Read(&absent);
  if (!current.ok()) return current.status();
  LeaseRecord next;
  {
    absl::MutexLock lock(&mu_);
    last_contact_ = now;
    if (!absent) Observe(*current, now);
    const bool ours = !absent && current->holder == options_.identity;
    const absl::Duration term = absl::Seconds(current->lease_duration_seconds > 0 ? current->lease_duration_seconds
                                                                                  : absl::ToInt64Seconds(options_.lease_duration));
    if (!absent && !ours && !current->holder.empty() && now < observed_at_ + term) {
      holding_ = false;
      return false;  // held by a live replica
    }
    next.holder = options_.identity;
    next.lease_duration_seconds = absl::ToInt64Seconds(options_.lease_duration);
    next.renew_time = MicroTime(now);
    next.acquire_time = ours ? current->acquire_time : next.renew_time;
    next.transitions = absent ? 0 : (ours ? current->transitions : current->transitions + 1);
    next.resource_version = current->resource_version;
  }
  absl::StatusOr<bool> written = Write(next, absent);
  if (!written.ok()) return written.status();
  absl::MutexLock lock(&mu_);
  if (!*written) {
    holding_ = false;
    return false;
  }
  // Taken, or renewed after the renew deadline passed (IsLeader said no
  // since: "lost the lease" was logged): either way this replica becomes the
  // writer now, and says so once per "lost".
  if (!holding_ || now - renewed_at_ >= options_.renew_deadline) {
    LogInfo(absl::StrCat("took the lease ", options_.namespace_name, "/", options_.name, " as ", options_.identity,
                         observed_.holder.empty() || observed_.holder == options_.identity
                             ? ""
                             : absl::StrCat(" (it was ", observed_.holder, "'s)")));
    if (acquired_counter_ != nullptr) acquired_counter_->Inc();
  }
  holding_ = true;
  renewed_at_ = now;
  Observe(next, now);
  return true;
}

absl::Status LeaderLease::Release(absl::Time now) {
  LeaseRecord next;
  {
    absl::MutexLock lock(&mu_);
    if (!holding_) return absl::OkStatus();
    holding_ = false;
    // What client-go writes: no holder, and a 1 s term, so whoever looks next takes it.
    next = observed_;
    next.holder.clear();
    next.lease_duration_seconds = 1;
    next.renew_time = MicroTime(now);
    next.acquire_time = next.renew_time;
  }
  bool absent = false;
  absl::StatusOr<LeaseRecord> current = Read(&absent);
  if (!current.ok()) return current.status();
  if (absent || current->holder != options_.identity) return absl::OkStatus();  // someone took it meanwhile
  next.resource_version = current->resource_version;
  absl::StatusOr<bool> written = Write(next, false);
  if (!written.ok()) return written.status();
  if (*written) LogInfo(absl::StrCat("released the lease ", options_.namespace_name, "/", options_.name));
  return absl::OkStatus();
}

bool LeaderLease::IsLeader(absl::Time now) const {
  absl::MutexLock lock(&mu_);
  return holding_ && now - renewed_at_ < options_.renew_deadline;
}

absl::Time LeaderLease::LastContact() const {
  absl::MutexLock lock(&mu_);
  return last_contact_;
}

std::string LeaderLease::LastSeenHolder() const {
  absl::MutexLock lock(&mu_);
  return observed_.holder;
}

void LeaderLease::Start() {
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] {
    NameThisThread("lease");
    Loop();
  });
}

void LeaderLease::Stop(bool release) {
  if (!thread_.joinable()) return;
  {
    absl::MutexLock lock(&wake_mu_);
    stop_ = true;
  }
  thread_.join();
  if (release) {
    if (absl::Status st = Release(absl::Now()); !st.ok()) {
      LogWarning(absl::StrCat("could not release the lease; a standby takes it when it expires: ", st.message()));
    }
  }
}

void LeaderLease::Loop() {
  bool was_leader = false;
  while (true) {
    const absl::Time now = absl::Now();
    absl::StatusOr<bool> held = TryAcquireOrRenew(now);
    if (!held.ok()) LogWarning(absl::StrCat("lease ", options_.name, ": ", held.status().message()));
    const bool leader = IsLeader(absl::Now());
    if (was_leader && !leader) LogWarning(absl::StrCat("lost the lease ", options_.namespace_name, "/", options_.name));
    was_leader = leader;
    if (leader_gauge_ != nullptr) leader_gauge_->Set(leader ? 1 : 0);
    absl::MutexLock lock(&wake_mu_);
    if (wake_mu_.AwaitWithTimeout(absl::Condition(+[](std::atomic<bool>* s) { return s->load(); }, &stop_),
                                  options_.retry_period)) {
      return;
    }
  }
}

}  // namespace tessera::k8s
