#include "gym/baseline.h"

#include <map>

#include "api/workload.h"
#include "common/flags.h"
#include "common/strings.h"
#include "gym/world.h"

namespace pipescale::gym {
namespace {

using optimizer::BaselineTask;

constexpr std::string_view kDoor = "+door";

struct Named {
  std::string_view name;
  BaselinePolicy::Kind kind;
};
constexpr Named kBases[] = {{"hpa", BaselinePolicy::Kind::kHpa},
                            {"keda", BaselinePolicy::Kind::kKeda},
                            {"kpa", BaselinePolicy::Kind::kKpa},
                            {"fixed", BaselinePolicy::Kind::kFixed}};

std::vector<std::string> Split(const std::string& text, char at) {
  std::vector<std::string> out(1);
  for (char c : text) {
    if (c == at) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

// One KNOB=V of `policy`.
Status ReadKnob(const std::string& policy, const std::string& knob, BaselinePolicy& out) {
  const size_t eq = knob.find('=');
  const std::string name = knob.substr(0, eq);
  const std::string value = eq == std::string::npos ? "" : knob.substr(eq + 1);
  const std::string what = "policy " + policy + ": " + name;
  if (name == "target") {
    auto t = ParseNumber(what, value, 0.05, 1);
    if (!t) return t.error();
    out.knobs.target = *t;
  } else if (name == "batch") {
    auto b = ParseInteger(what, value, 1, limits::kMaxBatch);
    if (!b) return b.error();
    out.knobs.max_batch = *b;
  } else {
    return Error{ErrorKind::kInvalid,
                 "policy " + policy + ": unknown knob \"" + name + "\" (target=SHARE, batch=N)"};
  }
  return Done{};
}

// What each task's autoscaler aims at, from its deployment and the knobs.
std::map<std::string, TaskTarget> Targets(const model::Pipeline& pipeline,
                                          const std::vector<BaselineTask>& deployed,
                                          const optimizer::BaselineKnobs& knobs) {
  std::map<std::string, TaskTarget> out;
  for (size_t t = 0; t < deployed.size(); ++t) {
    const BaselineTask& d = deployed[t];
    out[pipeline.spec.tasks[t].name] = {
        .utilization = knobs.target,
        .rps = knobs.target * d.replica_rps,
        // A batching server holds about a batch per pod at full load: Knative users set
        // containerConcurrency to the server's max batch.
        .concurrency = static_cast<double>(d.batch),
        .min_replicas = d.min_replicas,
        .max_replicas = d.max_replicas,
        .scale_down_window_s = pipeline.spec.behavior.scale_down_window_seconds};
  }
  return out;
}

// KEDA's rate window: 1 minute, four of Prometheus' usual 15 s scrapes, where its documented
// example's 2 minutes average a 30 s load swing away.
constexpr double kKedaRateWindowS = 60;

}  // namespace

Result<BaselinePolicy> ParseBaseline(const std::string& policy) {
  BaselinePolicy out;
  std::string text = policy;
  if (text.ends_with(kDoor)) {
    out.door = true;
    text.resize(text.size() - kDoor.size());
  }
  if (const size_t at = text.find('@'); at != std::string::npos) {
    const size_t end = text.find(':', at);
    out.knobs.hardware_class = text.substr(at + 1, end == std::string::npos ? end : end - at - 1);
    text.erase(at, end == std::string::npos ? end : end - at);
    if (out.knobs.hardware_class.empty()) {
      return Error{ErrorKind::kInvalid, "policy " + policy + ": @ names no hardware class"};
    }
  }
  std::vector<std::string> parts = Split(text, ':');
  const Named* base = nullptr;
  for (const Named& n : kBases) {
    if (parts[0] == n.name) base = &n;
  }
  if (base == nullptr) return Error{ErrorKind::kInvalid, "policy " + policy + ": not a baseline"};
  out.kind = base->kind;
  size_t knobs_from = 1;
  if (out.kind == BaselinePolicy::Kind::kFixed) {
    auto n = ParseInteger("policy " + policy + ": N", parts.size() > 1 ? parts[1] : "", 1, 1000);
    if (!n) return n.error();
    out.fixed = *n;
    knobs_from = 2;
  }
  for (size_t i = knobs_from; i < parts.size(); ++i) {
    if (auto read = ReadKnob(policy, parts[i], out); !read) return read.error();
  }
  return out;
}

std::string BaselineName(const BaselinePolicy& policy) {
  std::string out;
  for (const Named& n : kBases) {
    if (n.kind == policy.kind) out = n.name;
  }
  if (policy.kind == BaselinePolicy::Kind::kFixed) out += ":" + std::to_string(policy.fixed);
  if (!policy.knobs.hardware_class.empty()) out += "@" + policy.knobs.hardware_class;
  if (policy.knobs.target != optimizer::BaselineKnobs{}.target) {
    out += StrFormat(":target=%g", policy.knobs.target);
  }
  if (policy.knobs.max_batch > 0) out += ":batch=" + std::to_string(policy.knobs.max_batch);
  if (policy.door) out += kDoor;
  return out;
}

Status SetUpBaseline(engine::World& world, BaselinePolicy policy) {
  const model::Pipeline& p = world.pipeline;
  if (!policy.knobs.hardware_class.empty() &&
      p.HardwareClassIndex(policy.knobs.hardware_class) < 0) {
    return Error{ErrorKind::kInvalid, "policy " + world.options.policy + ": no hardware class " +
                                          policy.knobs.hardware_class + " in the pipeline"};
  }
  policy.knobs.call_overhead_ms = world.options.call_overhead_ms;
  const std::vector<BaselineTask> deployed =
      optimizer::DeployBaseline(p, api::AtLeastMinRate(p, {}), policy.knobs);
  world.policy.admission = policy.door;
  world.policy.drop = model::DropPolicy::kNone;
  for (size_t t = 0; t < deployed.size(); ++t) {
    const BaselineTask& d = deployed[t];
    const int i = world.EnsureDeployment(static_cast<int>(t), d.variant, d.hw_class, d.batch);
    engine::Deployment& deployment = world.deployments[i];
    // Every write of the Deployment (the replicas' below first) applies its server.
    deployment.server = {.batch = d.batch,
                         .max_delay_ms = optimizer::kBaselineQueueDelayMs,
                         .queue_timeout_ms = d.queue_timeout_ms};
    world.baseline_deployment.push_back(i);
    world.SetReplicas(i,
                      policy.kind == BaselinePolicy::Kind::kFixed ? policy.fixed : d.min_replicas);
  }
  const auto targets = Targets(p, deployed, policy.knobs);
  switch (policy.kind) {
    case BaselinePolicy::Kind::kHpa:
      world.autoscaler = MakeHpa(targets);
      break;
    case BaselinePolicy::Kind::kKeda:
      world.autoscaler = MakeKeda(targets, {.rate_window_s = kKedaRateWindowS});
      break;
    case BaselinePolicy::Kind::kKpa:
      world.autoscaler = MakeKpa(targets);
      break;
    case BaselinePolicy::Kind::kFixed:
      break;
  }
  world.Reconcile();
  return Done{};
}

}  // namespace pipescale::gym
