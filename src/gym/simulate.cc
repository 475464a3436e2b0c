// Simulate: the policy named on the command line set up in a World, and the run.
#include <cstdlib>

#include "api/pipeline_object.h"
#include "common/strings.h"
#include "gym/narrow.h"
#include "gym/world.h"
#include "optimizer/registry.h"

namespace pipescale::gym {
namespace {

using engine::World;

// A request's service time alone at one replica, over the pipeline's query-size mix (Kairos's
// queries carry many rows; without a mix each request is one).
double MeanRequestMs(const model::Pipeline& pipeline, const model::Profile& profile) {
  const std::vector<model::QuerySize>& mix = pipeline.spec.query_sizes;
  if (mix.empty()) return profile.latency.Ms(1);
  double weight = 0, ms = 0;
  for (const model::QuerySize& q : mix) {
    weight += q.weight;
    ms += q.weight * profile.latency.Ms(q.size);
  }
  return weight > 0 ? ms / weight : profile.latency.Ms(1);
}

// What a user of a baseline sets per task: its target at 70% of what one replica serves alone
// (one request at a time over the traffic's query sizes, the most accurate variant on its first
// class), as HPA and KPA users set 70%.
std::map<std::string, TaskTarget> Targets(const model::Pipeline& pipeline) {
  std::map<std::string, TaskTarget> out;
  for (const model::Task& t : pipeline.spec.tasks) {
    const model::Variant& v = *std::max_element(
        t.variants.begin(), t.variants.end(),
        [](const model::Variant& a, const model::Variant& b) { return a.accuracy < b.accuracy; });
    const model::Profile& p = v.profiles.front();
    const int c = pipeline.HardwareClassIndex(p.hardware_class);
    TaskTarget target;
    target.rps = 0.7 * 1000 / MeanRequestMs(pipeline, p);
    target.concurrency = 1;
    target.max_replicas = pipeline.spec.hardware_classes[c].max_replicas.value_or(100);
    out[t.name] = target;
  }
  return out;
}

// The baselines run what users run without pipescale: one Deployment per task (its most accurate
// variant on the first class it profiles, batch 1), behind a gateway that walks the DAG with no
// door, no drops and no router-formed batches.
void SetUpBaseline(World& world, int fixed) {
  const model::Pipeline& p = world.pipeline;
  world.policy.admission = false;
  world.policy.drop = model::DropPolicy::kNone;
  for (size_t t = 0; t < p.spec.tasks.size(); ++t) {
    const model::Task& task = p.spec.tasks[t];
    size_t best = 0;
    for (size_t v = 0; v < task.variants.size(); ++v) {
      if (task.variants[v].accuracy > task.variants[best].accuracy) best = v;
    }
    const int c = p.HardwareClassIndex(task.variants[best].profiles.front().hardware_class);
    const int d = world.EnsureDeployment(static_cast<int>(t), static_cast<int>(best), c, 1);
    world.baseline_deployment.push_back(d);
    world.SetReplicas(d, fixed > 0 ? fixed : 1);
  }
  world.Reconcile();
}

constexpr double kMaxRequests = 1e9;

Result<int> FixedCount(const std::string& policy) {
  const std::string n = policy.substr(6);
  char* end = nullptr;
  const long count = std::strtol(n.c_str(), &end, 10);
  if (n.empty() || *end != '\0' || count < 1 || count > 1000) {
    return Error{ErrorKind::kInvalid, "policy " + policy + ": N must be a whole number 1..1000"};
  }
  return static_cast<int>(count);
}

// The levels the setup below writes into must be objects (or absent): anything else in a file
// from outside is an error naming the field, never a type_error thrown out of nlohmann.
Status TopLevelShape(const nlohmann::json& object) {
  if (!object.is_object()) {
    return Error{ErrorKind::kInvalid, "the pipeline must be a YAML or JSON object"};
  }
  for (const char* key : {"metadata", "spec"}) {
    auto it = object.find(key);
    if (it != object.end() && !it->is_null() && !it->is_object()) {
      return Error{ErrorKind::kInvalid, std::string(key) + ": must be an object"};
    }
  }
  return Done{};
}

}  // namespace

Result<PolicyReport> Simulate(const nlohmann::json& pipeline_object, const Options& options) {
  const double seconds = options.RunSeconds();
  if (seconds > trace::kMaxSeconds) {
    return Error{ErrorKind::kInvalid, StrFormat("the run may last at most %.0f days of load",
                                                trace::kMaxSeconds / 86400)};
  }
  // Each request costs about 10 us here: a bound that keeps a typing error from running for days.
  if (const double requests = options.trace.MeanRps() * seconds; requests > kMaxRequests) {
    return Error{ErrorKind::kInvalid,
                 StrFormat("the trace asks for %.3g requests; a run simulates at most %.0e "
                           "(about 3 hours here)",
                           requests, kMaxRequests)};
  }
  if (auto shape = TopLevelShape(pipeline_object); !shape) return shape.error();
  nlohmann::json object = pipeline_object;
  object.erase("status");
  const std::string& policy = options.policy;
  const bool baseline =
      policy == "hpa" || policy == "keda" || policy == "kpa" || policy.rfind("fixed:", 0) == 0;
  // The optimizer the operator runs: one of the spec's, or one the CLI alone offers (the papers'
  // baselines, and optimizers on a narrowed spec), which the operator's loop runs all the same
  // once the spec has been validated.
  std::string name = policy;
  if (!baseline && !policy.empty()) {
    auto narrowed = Narrow(policy, object);
    if (!narrowed) return narrowed.error();
    name = *narrowed;
  }
  const optimizer::Descriptor* chosen = optimizer::FindOptimizer(name);
  if (!baseline && !policy.empty()) {
    if (chosen == nullptr) {
      return Error{ErrorKind::kInvalid, "unknown policy " + policy + ": one of " +
                                            optimizer::OptimizerNames(false) + ", " +
                                            kNarrowedPolicies + ", hpa, keda, kpa, fixed:N"};
    }
    if (chosen->in_spec) object["spec"]["optimizer"] = name;
  }
  nlohmann::json& metadata = object["metadata"];
  if (!metadata.contains("uid")) metadata["uid"] = "gym";
  if (!metadata.contains("generation")) metadata["generation"] = 1;
  auto parsed = std::make_shared<api::ParsedPipeline>(api::ParseSpecOf(object));
  if (!parsed->errors.empty()) {
    std::string message;
    for (const api::FieldError& e : parsed->errors)
      message += (message.empty() ? "" : "; ") + e.ToString();
    return Error{ErrorKind::kInvalid, message};
  }
  if (!baseline && chosen != nullptr && !chosen->in_spec) {
    parsed->pipeline->spec.optimizer = name;
  }
  Options named = options;
  named.policy = policy.empty() ? parsed->pipeline->spec.optimizer : policy;
  World world(*parsed->pipeline, object, named);
  world.parsed = parsed;
  if (!baseline) {
    world.optimizer = &optimizer::OptimizerOf(world.pipeline.spec);
  } else if (policy.rfind("fixed:", 0) == 0) {
    auto n = FixedCount(policy);
    if (!n) return n.error();
    SetUpBaseline(world, *n);
  } else {
    const auto targets = Targets(world.pipeline);
    world.autoscaler = policy == "hpa"    ? MakeHpa(targets)
                       : policy == "keda" ? MakeKeda(targets)
                                          : MakeKpa(targets);
    SetUpBaseline(world, 0);
  }
  return world.Run();
}

}  // namespace pipescale::gym
