#include "kube/leader_election.h"

#include <cmath>
#include <ctime>
#include <thread>

#include "common/guard.h"
#include "common/log.h"
#include "common/time.h"

namespace pipescale::kube {
namespace {

// metav1.MicroTime: RFC 3339 with microseconds.
std::string MicroTime(double unix_seconds) { return FormatRfc3339(unix_seconds, 6); }

double ParseMicroTime(const std::string& s) {
  std::tm tm{};
  if (strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) return 0;
  auto t = static_cast<double>(timegm(&tm));
  if (auto dot = s.find('.'); dot != std::string::npos) t += std::stod("0" + s.substr(dot, 7));
  return t;
}

}  // namespace

LeaderElector::LeaderElector(const Client& client, Options options, Clock clock)
    : client_(client), options_(std::move(options)), clock_(std::move(clock)) {}

Result<bool> LeaderElector::TryAcquireOrRenew() {
  try {
    return AcquireOrRenew();
  } catch (...) {
    const std::string what = CurrentExceptionMessage();
    ReportPanic("leader-election", what);
    return Error{ErrorKind::kTransient, "taking or renewing the Lease threw: " + what};
  }
}

Result<bool> LeaderElector::AcquireOrRenew() {
  const std::string path = ObjectPath(kLeases, options_.namespace_name, options_.name);
  const double now = clock_();
  const nlohmann::json spec = {{"holderIdentity", options_.identity},
                               {"leaseDurationSeconds", options_.lease_duration.count()},
                               {"renewTime", MicroTime(now)}};
  auto current = client_.Get(path);
  if (!current.ok()) {
    if (current.error().kind != ErrorKind::kNotFound) return current.error();
    nlohmann::json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                            {"kind", "Lease"},
                            {"metadata", {{"name", options_.name}}},
                            {"spec", spec}};
    lease["spec"]["acquireTime"] = MicroTime(now);
    lease["spec"]["leaseTransitions"] = 0;
    auto created = client_.Create(CollectionPath(kLeases, options_.namespace_name), lease);
    if (created.ok()) return true;
    if (created.error().kind == ErrorKind::kConflict) return false;  // someone was faster
    return created.error();
  }
  nlohmann::json lease = *current;
  nlohmann::json& s = lease["spec"];
  const std::string holder = s.value("holderIdentity", "");
  const double renewed = ParseMicroTime(s.value("renewTime", ""));
  const double duration = s.value("leaseDurationSeconds", 15);
  const bool ours = holder == options_.identity;
  if (!ours && !holder.empty() && renewed + duration > now) return false;  // held by another
  if (!ours) {
    s["acquireTime"] = MicroTime(now);
    s["leaseTransitions"] = s.value("leaseTransitions", 0) + 1;
  }
  s.update(spec);
  // The PUT carries the resourceVersion we read: of two candidates, one gets 409.
  auto updated = client_.Update(path, lease);
  if (updated.ok()) return true;
  if (updated.error().kind == ErrorKind::kConflict) return false;
  return updated.error();
}

bool LeaderElector::Acquire(const std::atomic<bool>& stop) {
  std::string last_error;
  while (!stop) {
    auto r = TryAcquireOrRenew();
    if (r.ok() && *r) return true;
    // Said once per distinct error: a 403 (no rights to the Lease) does not heal by itself.
    if (!r.ok() && r.error().message != last_error) {
      last_error = r.error().message;
      Log("error", "cannot take the leader Lease; retrying",
          {{"lease", options_.namespace_name + "/" + options_.name}, {"error", last_error}});
    }
    for (int i = 0; i < options_.retry_period.count() * 10 && !stop; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  return false;
}

bool LeaderElector::Hold(const std::atomic<bool>& stop) {
  double last_renewal = clock_();
  while (!stop) {
    for (int i = 0; i < options_.retry_period.count() * 10 && !stop; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (stop) break;
    auto r = TryAcquireOrRenew();
    if (!r.ok()) {
      Log("warning", "cannot renew the leader Lease",
          {{"lease", options_.namespace_name + "/" + options_.name}, {"error", r.error().message}});
    }
    if (r.ok() && *r) {
      last_renewal = clock_();
    } else if (r.ok() || clock_() - last_renewal > options_.renew_deadline.count()) {
      return false;  // another holder, or we could not renew in time
    }
  }
  return true;
}

void LeaderElector::Release() {
  const std::string path = ObjectPath(kLeases, options_.namespace_name, options_.name);
  const Client client(client_.config(), {.timeout = kReleaseTimeout});
  auto current = client.Get(path);
  if (!current.ok()) return;
  Guard("leader-election", [&] {
    nlohmann::json lease = *current;
    if (lease["spec"].value("holderIdentity", "") != options_.identity) return;
    lease["spec"]["holderIdentity"] = "";
    lease["spec"]["leaseDurationSeconds"] = 1;
    (void)client.Update(path, lease);
  });
}

}  // namespace pipescale::kube
