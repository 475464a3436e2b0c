// Simulate: the policy named on the command line set up in a World, and the run.
#include <memory>
#include <optional>

#include "api/pipeline_object.h"
#include "common/strings.h"
#include "gym/baseline.h"
#include "gym/narrow.h"
#include "gym/render.h"
#include "gym/world.h"
#include "optimizer/registry.h"

namespace pipescale::gym {
namespace {

using engine::World;

constexpr double kMaxRequests = 1e9;

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

Result<std::unique_ptr<World>> engine::MakeWorld(const nlohmann::json& pipeline_object,
                                                 const Options& options) {
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
  // kAlwaysWarm: the spec's own optimizer with spec.scaleToZero off, what scale to zero saves
  // against.
  const bool warm = options.policy == kAlwaysWarm;
  if (warm && object.contains("spec")) object["spec"].erase("scaleToZero");
  const std::string policy = warm ? "" : options.policy;
  const bool baseline = IsBaseline(policy);
  std::optional<BaselinePolicy> base;
  if (baseline) {
    auto parsed = ParseBaseline(policy);
    if (!parsed) return parsed.error();
    base = *parsed;
  }
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
                                            kNarrowedPolicies + ", " + kBaselinePolicies};
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
  named.policy = warm             ? options.policy
                 : policy.empty() ? PolicyOf(parsed->pipeline->spec.optimizer)
                                  : policy;
  auto world = std::make_unique<World>(*parsed->pipeline, object, named);
  world->parsed = parsed;
  if (!baseline) {
    world->optimizer = &optimizer::OptimizerOf(world->pipeline.spec);
  } else if (auto set = SetUpBaseline(*world, *base); !set) {
    return set.error();
  }
  return world;
}

Result<PolicyReport> Simulate(const nlohmann::json& pipeline_object, const Options& options) {
  auto world = engine::MakeWorld(pipeline_object, options);
  if (!world) return world.error();
  return (*world)->Run();
}

}  // namespace pipescale::gym
