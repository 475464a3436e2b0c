#include "api/status_json.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <exception>
#include <optional>
#include <set>
#include <utility>

#include "api/field_reader.h"
#include "api/pipeline_parse.h"
#include "api/plan_json.h"
#include "api/plan_parts.h"
#include "common/log.h"
#include "common/strings.h"
#include "optimizer/problem.h"

namespace pipescale::api {

using nlohmann::json;

// ---------------------------------------------------------------------------------------------
// The writer.

namespace {

json Rounded(const std::map<std::string, double>& values, double (*round)(double)) {
  json out = json::object();
  for (const auto& [key, v] : values) out[key] = round(v);
  return out;
}

json PlanToJson(const model::AppliedPlan& applied) {
  json out = PlanToJsonValue(applied.plan, {.rounded = true, .report = false});
  json& tasks = out["tasks"];
  for (size_t i = 0; i < tasks.size() && i < applied.deployments.size(); ++i) {
    tasks[i]["deployment"] = applied.deployments[i];
  }
  return out;
}

json SolverToJson(const model::SolverRecord& solver) {
  return {{"name", solver.name},
          {"status", model::SolveStatusName(solver.status)},
          {"objective", solver.objective.value},
          {"objectiveUnit", solver.objective.unit},
          {"durationMs", solver.duration_ms}};
}

json DataPlaneToJson(const model::ObservedDataPlane& seen) {
  json out = {{"dropsPerSecond", Rounded(seen.drops_rps, RoundQuantity)},
              {"reroutesPerSecond", RoundQuantity(seen.reroutes_rps)},
              {"spillShare", Rounded(seen.spill_share, RoundFraction)},
              {"poolWaiting", Rounded(seen.pool_waiting, RoundQuantity)},
              {"batchRows", Rounded(seen.batch_rows, RoundQuantity)}};
  json shed = json::object();
  for (const auto& [path, by_reason] : seen.shed_rps) {
    shed[path] = Rounded(by_reason, RoundQuantity);
  }
  out["shedPerSecond"] = std::move(shed);
  if (seen.planned_accuracy) out["plannedAccuracy"] = RoundFraction(*seen.planned_accuracy);
  if (seen.served_accuracy) out["servedAccuracy"] = RoundFraction(*seen.served_accuracy);
  return out;
}

json MixToJson(const std::vector<model::SizeShare>& mix) {
  json out = json::array();
  for (const model::SizeShare& s : mix) {
    out.push_back({{"size", s.size}, {"share", RoundFraction(s.share)}});
  }
  return out;
}

json QuerySizesToJson(const model::QuerySizesRecord& sizes) {
  json out = {{"source", sizes.source == model::MixSource::kMeasured ? "measured" : "spec"},
              {"planned", MixToJson(sizes.planned)}};
  if (!sizes.measured.empty()) out["measured"] = MixToJson(sizes.measured);
  if (sizes.shift) out["shift"] = RoundFraction(*sizes.shift);
  if (!sizes.settling_since.empty()) out["settlingSince"] = sizes.settling_since;
  return out;
}

json KeyToJson(const model::ProfileKey& key) {
  return {{"task", key.task}, {"variant", key.variant}, {"hardwareClass", key.hardware_class}};
}

json ProfilesToJson(const std::vector<model::ObservedProfile>& profiles) {
  json out = json::array();
  for (const model::ObservedProfile& p : profiles) {
    json entry = KeyToJson(p.key);
    if (p.ratio) entry["ratio"] = RoundFraction(*p.ratio);
    entry["plannedRatio"] = RoundFraction(p.planned_ratio);
    json points = json::array();
    for (const model::ProfilePoint& q : p.points) {
      points.push_back({{"batch", q.batch},
                        {"measuredMs", RoundQuantity(q.measured_ms)},
                        {"declaredMs", RoundQuantity(q.declared_ms)},
                        {"batches", RoundQuantity(q.batches)}});
    }
    entry["points"] = std::move(points);
    out.push_back(std::move(entry));
  }
  return out;
}

// Exact, not rounded: what the planner plans from must come back as it was.
json CorrectionsToJson(const std::vector<model::ProfileCorrection>& corrections) {
  json out = json::array();
  for (const model::ProfileCorrection& c : corrections) {
    json entry = KeyToJson(c.key);
    entry["ratio"] = c.ratio;
    json points = json::array();
    for (const model::LatencyPoint& p : c.points) points.push_back({p.batch, p.ms});
    entry["points"] = std::move(points);
    entry["declared"] = c.declared;
    out.push_back(std::move(entry));
  }
  return out;
}

json ObservedToJson(const model::ObservedLoad& observed) {
  json out = {{"pathRates", Rounded(observed.path_rates_rps, RoundQuantity)}};
  if (observed.demand_rps) out["demand"] = Rounded(*observed.demand_rps, RoundQuantity);
  if (observed.arrival_rate_rps) out["arrivalRate"] = RoundQuantity(*observed.arrival_rate_rps);
  if (observed.data_plane) out["dataPlane"] = DataPlaneToJson(*observed.data_plane);
  if (observed.query_sizes) out["querySizes"] = QuerySizesToJson(*observed.query_sizes);
  if (!observed.profiles.empty()) out["profiles"] = ProfilesToJson(observed.profiles);
  return out;
}

json CapacityToJson(const std::vector<model::ClassCapacity>& capacity) {
  json out = json::array();
  for (const model::ClassCapacity& c : capacity) {
    json entry = {{"hardwareClass", c.hardware_class},
                  {"nodes", c.nodes},
                  {"scheduled", c.scheduled},
                  {"placeable", c.placeable},
                  {"limit", c.Limit()}};
    if (c.preemptible > 0) entry["preemptible"] = c.preemptible;
    if (c.pool > 0) entry["pool"] = c.pool;
    if (c.share) entry["share"] = *c.share;
    if (!c.full_reason.empty()) entry["full"] = c.full_reason;
    out.push_back(std::move(entry));
  }
  return out;
}

json UnschedulableToJson(const std::vector<model::Unschedulable>& waiting) {
  json out = json::array();
  for (const model::Unschedulable& u : waiting) {
    out.push_back({{"deployment", u.deployment}, {"pods", u.pods}, {"message", u.message}});
  }
  return out;
}

json HeadroomToJson(const model::Headroom& headroom) {
  json paths = json::object();
  for (const auto& [path, h] : headroom.paths) {
    paths[path] = {{"headroom", h.headroom}, {"raisedFrom", h.raised_from}};
  }
  return {{"paths", std::move(paths)},
          {"quietUntil", headroom.quiet_until},
          {"heldUntil", headroom.held_until}};
}

json MemoryToJson(const model::StatusMemory& memory) {
  json steps = json::array();
  for (const model::Recommendation& r : memory.recommendations) {
    steps.push_back({{"since", r.since}, {"replicas", r.replicas}});
  }
  json out = {{"recommendations", std::move(steps)}};
  if (memory.guard_quiet_until) out["guardQuietUntil"] = *memory.guard_quiet_until;
  if (!memory.query_mix.empty()) {
    json mix = json::array();
    for (const model::QuerySize& q : memory.query_mix) {
      mix.push_back({{"size", q.size}, {"weight", q.weight}});
    }
    out["queryMix"] = std::move(mix);
    out["queryMixFor"] = memory.query_mix_for;
  }
  if (!memory.profiles.empty()) out["profiles"] = CorrectionsToJson(memory.profiles);
  if (!memory.quiet_since.empty()) out["quietSince"] = memory.quiet_since;
  if (!memory.held_since.empty()) out["heldSince"] = memory.held_since;
  if (!memory.sleeping_paths.empty()) out["sleepingPaths"] = memory.sleeping_paths;
  for (const auto& [path, returns] : memory.returns) {
    json list = json::array();
    for (const model::LoadReturn& r : returns)
      list.push_back({{"at", r.at}, {"rateRps", r.rate_rps}});
    out["returns"][path] = std::move(list);
  }
  for (const auto& [path, w] : memory.awake_ahead) {
    out["awakeAhead"][path] = {{"until", w.until}, {"rateRps", w.rate_rps}};
  }
  if (memory.headroom != model::Headroom{}) out["headroom"] = HeadroomToJson(memory.headroom);
  return out;
}

}  // namespace

json ConditionsToJson(const std::vector<model::Condition>& conditions) {
  json out = json::array();
  for (const model::Condition& c : conditions) {
    json entry = {{"type", c.type}, {"status", c.status}};
    if (!c.reason.empty()) entry["reason"] = c.reason;
    // An empty message is left out: kube-apiserver 1.20 turns "" inside a merge patch of a
    // custom resource's status into null and then rejects it against the schema.
    if (!c.message.empty()) entry["message"] = c.message;
    if (c.observed_generation) entry["observedGeneration"] = *c.observed_generation;
    if (!c.last_transition_time.empty()) entry["lastTransitionTime"] = c.last_transition_time;
    out.push_back(std::move(entry));
  }
  return out;
}

// "gpu 6/12": per class counted in a pool, the replicas bound of the replicas the pool holds.
std::string ShareSummary(const std::vector<model::ClassCapacity>& capacity) {
  std::string out;
  for (const model::ClassCapacity& c : capacity) {
    if (c.pool == 0) continue;
    if (!out.empty()) out += ", ";
    out += c.hardware_class + " " + std::to_string(c.scheduled) + "/" + std::to_string(c.pool);
  }
  return out;
}

json StatusToJson(const model::PipelineStatus& status) {
  json out = {{"observedGeneration", status.observed_generation},
              {"conditions", ConditionsToJson(status.conditions)}};
  if (status.plan) out["plan"] = PlanToJson(*status.plan);
  if (status.solver) out["solver"] = SolverToJson(*status.solver);
  if (status.total_replicas) out["totalReplicas"] = *status.total_replicas;
  if (status.cost_per_hour) out["costPerHour"] = RoundQuantity(*status.cost_per_hour);
  if (status.observed) out["observed"] = ObservedToJson(*status.observed);
  if (status.capacity) {
    out["capacity"] = CapacityToJson(*status.capacity);
    // Written for `kubectl get` and a tenant's bill, not read.
    if (std::string share = ShareSummary(*status.capacity); !share.empty()) out["share"] = share;
  }
  if (!status.unschedulable.empty())
    out["unschedulable"] = UnschedulableToJson(status.unschedulable);
  if (status.memory) out["memory"] = MemoryToJson(*status.memory);
  return out;
}

// ---------------------------------------------------------------------------------------------
// The reader: api::Reader, leniently. Each field it cannot read is reported (as the pipeline's
// parser reports one) and left as it was, absent or at its default; the rest is read on.

namespace {

// Any number a status holds: rates, costs, times, latencies.
constexpr Range kAny{.min = -limits::kMaxMagnitude, .max = limits::kMaxMagnitude};
static_assert(optimizer::kMaxQueueMs <= limits::kMaxMagnitude,
              "a plan's unbounded queue must read back");
constexpr std::int64_t kGeneration = INT64_MAX;  // metadata.generation's range

// `value` into `into` when it was there and readable.
template <typename T, typename U>
void Set(std::optional<U> value, T& into) {
  if (value) into = static_cast<T>(*value);
}

std::optional<model::SolveStatus> ParseSolveStatus(const std::string& name) {
  for (model::SolveStatus s : {model::SolveStatus::kOptimal, model::SolveStatus::kFeasible,
                               model::SolveStatus::kInfeasible, model::SolveStatus::kTimeLimit}) {
    if (name == model::SolveStatusName(s)) return s;
  }
  return std::nullopt;
}

class StatusReader {
 public:
  explicit StatusReader(Reader& r) : r_(r), parts_(r, /*report_unknown=*/true) {}

  model::PipelineStatus Status(const json& status);
  std::vector<model::Condition> Conditions(const json& status, const std::string& path);

 private:
  // Shorthands for the optional fields of a status.
  std::optional<double> Number(const json& o, const char* key, const std::string& path) {
    return r_.Number(o, key, path, false, kAny);
  }
  std::optional<std::int64_t> Count(const json& o, const char* key, const std::string& path,
                                    std::int64_t low, std::int64_t high) {
    return r_.Integer(o, key, path, false, low, high);
  }
  std::optional<std::string> String(const json& o, const char* key, const std::string& path) {
    return r_.String(o, key, path, false);
  }
  template <typename Read>
  void EachObject(const json& o, const char* key, const std::string& path, Read read) {
    parts_.ForEachObject(o, key, path, read);
  }
  std::map<std::string, double> NumberMap(const json& o, const char* key, const std::string& path);

  std::optional<model::Condition> Condition(const json& c, const std::string& path);
  model::AppliedPlan Plan(const json& p, const std::string& path);
  void Tasks(const json& p, const std::string& path, model::AppliedPlan& out);
  model::AccuracyScalingPlan AccuracyScaling(const json& p, const std::string& path,
                                             model::Phase phase);
  model::PoolPlan Pools(const json& p, const std::string& path);
  model::SolverRecord Solver(const json& s, const std::string& path);
  model::ObservedLoad Observed(const json& o, const std::string& path);
  model::ObservedDataPlane DataPlane(const json& d, const std::string& path);
  std::vector<model::SizeShare> Mix(const json& o, const char* key, const std::string& path);
  model::QuerySizesRecord QuerySizes(const json& q, const std::string& path);
  std::optional<model::ProfileKey> Key(const json& o, const std::string& path);
  std::vector<model::ObservedProfile> Profiles(const json& o, const std::string& path);
  std::vector<model::ProfileCorrection> Corrections(const json& o, const std::string& path);
  std::vector<model::Recommendation> Recommendations(const json& m, const std::string& path);
  void QueryMix(const json& m, const std::string& path, model::StatusMemory& out);
  void WakeAhead(const json& m, const std::string& path, model::StatusMemory& out);
  model::Headroom Headroom(const json& h, const std::string& path);
  model::StatusMemory Memory(const json& m, const std::string& path);

  Reader& r_;
  PlanParts parts_;
};

std::map<std::string, double> StatusReader::NumberMap(const json& o, const char* key,
                                                      const std::string& path) {
  std::map<std::string, double> out;
  const json* map = r_.Object(o, key, path, false);
  if (map == nullptr) return out;
  const std::string at = Reader::At(path, key);
  for (const auto& [name, v] : map->items()) {
    if (auto n = r_.NumberValue(v, Reader::At(at, name), kAny)) out[name] = *n;
  }
  return out;
}

// ----- conditions

std::optional<model::Condition> StatusReader::Condition(const json& c, const std::string& path) {
  r_.OnlyKnown(c, path,
               {"type", "status", "reason", "message", "observedGeneration", "lastTransitionTime"});
  model::Condition out;
  Set(String(c, "type", path), out.type);
  Set(String(c, "status", path), out.status);
  Set(String(c, "reason", path), out.reason);
  Set(String(c, "message", path), out.message);
  Set(Count(c, "observedGeneration", path, 0, kGeneration), out.observed_generation);
  Set(String(c, "lastTransitionTime", path), out.last_transition_time);
  // type and status are what a condition is (the CRD requires them).
  if (out.type.empty() ||
      (out.status != "True" && out.status != "False" && out.status != "Unknown")) {
    r_.Fail(path, "no type, or a status other than True, False and Unknown");
    return std::nullopt;
  }
  return out;
}

std::vector<model::Condition> StatusReader::Conditions(const json& status,
                                                       const std::string& path) {
  std::vector<model::Condition> out;
  EachObject(status, "conditions", path, [&](const json& c, const std::string& at) {
    if (auto condition = Condition(c, at)) out.push_back(std::move(*condition));
  });
  return out;
}

// ----- the plan

void StatusReader::Tasks(const json& p, const std::string& path, model::AppliedPlan& out) {
  EachObject(p, "tasks", path, [&](const json& t, const std::string& at) {
    // "budgetMs": a Loki drop budget older operators wrote; read as nothing.
    r_.OnlyKnown(t, at,
                 {"task", "variant", "hardwareClass", "replicas", "batchSize", "latencyMs",
                  "queueMs", "loadRps", "deployment", "budgetMs"});
    model::TaskPlan task;
    Set(String(t, "task", at), task.task);
    Set(String(t, "variant", at), task.variant);
    Set(String(t, "hardwareClass", at), task.hardware_class);
    Set(Count(t, "replicas", at, 0, limits::kMaxReplicas), task.replicas);
    Set(Count(t, "batchSize", at, 1, limits::kMaxBatch), task.batch_size);
    Set(Number(t, "latencyMs", at), task.latency_ms);
    Set(Number(t, "queueMs", at), task.queue_ms);
    Set(Number(t, "loadRps", at), task.load_rps);
    std::string deployment;
    Set(String(t, "deployment", at), deployment);
    out.plan.tasks.push_back(std::move(task));
    out.deployments.push_back(std::move(deployment));
  });
}

model::AccuracyScalingPlan StatusReader::AccuracyScaling(const json& p, const std::string& path,
                                                         model::Phase phase) {
  model::AccuracyScalingPlan loki{.phase = phase};
  Set(Number(p, "accuracy", path), loki.accuracy);
  EachObject(p, "variantPaths", path, [&](const json& v, const std::string& at) {
    r_.OnlyKnown(v, at, {"path", "variants", "share", "accuracy", "latencyMs"});
    model::VariantPath variant_path;
    Set(String(v, "path", at), variant_path.path);
    if (const json* list = r_.Array(v, "variants", at, false, limits::kMaxPathTasks)) {
      for (size_t i = 0; i < list->size(); ++i) {
        const std::string item = Reader::At(Reader::At(at, "variants"), i);
        if (auto name = r_.StringValue((*list)[i], item)) variant_path.variants.push_back(*name);
      }
    }
    Set(Number(v, "share", at), variant_path.share);
    Set(Number(v, "accuracy", at), variant_path.accuracy);
    Set(Number(v, "latencyMs", at), variant_path.latency_ms);
    loki.variant_paths.push_back(std::move(variant_path));
  });
  EachObject(p, "routing", path, [&](const json& t, const std::string& at) {
    loki.routing.push_back(parts_.Table(t, at));
  });
  EachObject(p, "backups", path, [&](const json& b, const std::string& at) {
    loki.backups.push_back(parts_.Backup(b, at));
  });
  return loki;
}

model::PoolPlan StatusReader::Pools(const json& p, const std::string& path) {
  model::PoolPlan pools;
  Set(Number(p, "upperBoundQps", path), pools.upper_bound_qps);
  if (const json* forecast = r_.Object(p, "forecast", path, false)) {
    const std::string at = Reader::At(path, "forecast");
    r_.OnlyKnown(*forecast, at, {"stepSeconds", "rps"});
    Set(Number(*forecast, "stepSeconds", at), pools.forecast_step_seconds);
    if (const json* rps = r_.Array(*forecast, "rps", at, false, limits::kMaxPlanItems)) {
      for (size_t i = 0; i < rps->size(); ++i) {
        const std::string item = Reader::At(Reader::At(at, "rps"), i);
        if (auto r = r_.NumberValue((*rps)[i], item, kAny)) pools.forecast_rps.push_back(*r);
      }
    }
  }
  EachObject(p, "pools", path, [&](const json& pool, const std::string& at) {
    pools.pools.push_back(parts_.Pool(pool, at));
  });
  return pools;
}

model::AppliedPlan StatusReader::Plan(const json& p, const std::string& path) {
  model::AppliedPlan out;
  Set(Number(p, "costPerHour", path), out.plan.cost_per_hour);
  Set(Number(p, "servedFraction", path), out.plan.served_fraction);
  Set(Number(p, "minReplicasCostPerHour", path), out.plan.floor_cost_per_hour);
  // Loki's plans carry a phase, Kairos's and MArk's pools; what a plan is decides which of its
  // fields belong.
  const std::optional<model::Phase> phase = parts_.Phase(p, "phase", path, false);
  if (phase) {
    r_.OnlyKnown(p, path,
                 {"costPerHour", "minReplicasCostPerHour", "servedFraction", "tasks", "paths",
                  "phase", "accuracy", "variantPaths", "routing", "backups"});
    out.plan.detail = AccuracyScaling(p, path, *phase);
  } else {
    r_.OnlyKnown(p, path,
                 {"costPerHour", "minReplicasCostPerHour", "servedFraction", "tasks", "paths",
                  "phase", "pools", "upperBoundQps", "forecast"});
    const auto present = [&](const char* key) {
      const auto it = p.find(key);
      return it != p.end() && !it->is_null();
    };
    if (present("pools") || present("upperBoundQps") || present("forecast")) {
      out.plan.detail = Pools(p, path);
    }
  }
  Tasks(p, path, out);
  EachObject(p, "paths", path, [&](const json& q, const std::string& at) {
    r_.OnlyKnown(q, at, {"name", "sloMs", "predictedLatencyMs"});
    model::PathPlan plan_path;
    Set(String(q, "name", at), plan_path.name);
    Set(Number(q, "sloMs", at), plan_path.slo_ms);
    Set(Number(q, "predictedLatencyMs", at), plan_path.predicted_latency_ms);
    out.plan.paths.push_back(std::move(plan_path));
  });
  return out;
}

model::SolverRecord StatusReader::Solver(const json& s, const std::string& path) {
  r_.OnlyKnown(s, path, {"name", "status", "objective", "objectiveUnit", "durationMs"});
  model::SolverRecord out;
  Set(String(s, "name", path), out.name);
  if (auto name = String(s, "status", path)) {
    if (auto status = ParseSolveStatus(*name)) {
      out.status = *status;
    } else {
      r_.Fail(Reader::At(path, "status"), "must be Optimal, Feasible, Infeasible or TimeLimit");
    }
  }
  Set(Number(s, "objective", path), out.objective.value);
  Set(String(s, "objectiveUnit", path), out.objective.unit);
  Set(Number(s, "durationMs", path), out.duration_ms);
  return out;
}

// ----- observed

model::ObservedDataPlane StatusReader::DataPlane(const json& d, const std::string& path) {
  r_.OnlyKnown(d, path,
               {"dropsPerSecond", "reroutesPerSecond", "spillShare", "poolWaiting", "batchRows",
                "shedPerSecond", "plannedAccuracy", "servedAccuracy"});
  model::ObservedDataPlane out;
  out.drops_rps = NumberMap(d, "dropsPerSecond", path);
  Set(Number(d, "reroutesPerSecond", path), out.reroutes_rps);
  out.spill_share = NumberMap(d, "spillShare", path);
  out.pool_waiting = NumberMap(d, "poolWaiting", path);
  out.batch_rows = NumberMap(d, "batchRows", path);
  if (const json* shed = r_.Object(d, "shedPerSecond", path, false)) {
    const std::string at = Reader::At(path, "shedPerSecond");
    for (const auto& [name, reasons] : shed->items()) {
      std::map<std::string, double> by_reason = NumberMap(*shed, name.c_str(), at);
      if (reasons.is_object()) out.shed_rps[name] = std::move(by_reason);
    }
  }
  Set(Number(d, "plannedAccuracy", path), out.planned_accuracy);
  Set(Number(d, "servedAccuracy", path), out.served_accuracy);
  return out;
}

std::vector<model::SizeShare> StatusReader::Mix(const json& o, const char* key,
                                                const std::string& path) {
  std::vector<model::SizeShare> out;
  EachObject(o, key, path, [&](const json& s, const std::string& at) {
    r_.OnlyKnown(s, at, {"size", "share"});
    auto size = Count(s, "size", at, 1, limits::kMaxBatch);
    auto share = Number(s, "share", at);
    if (size && share) out.push_back({.size = static_cast<int>(*size), .share = *share});
  });
  return out;
}

model::QuerySizesRecord StatusReader::QuerySizes(const json& q, const std::string& path) {
  r_.OnlyKnown(q, path, {"source", "planned", "measured", "shift", "settlingSince"});
  model::QuerySizesRecord out;
  if (auto source = String(q, "source", path)) {
    if (*source == "measured") {
      out.source = model::MixSource::kMeasured;
    } else if (*source != "spec") {
      r_.Fail(Reader::At(path, "source"), "must be spec or measured");
    }
  }
  out.planned = Mix(q, "planned", path);
  out.measured = Mix(q, "measured", path);
  Set(Number(q, "shift", path), out.shift);
  Set(String(q, "settlingSince", path), out.settling_since);
  return out;
}

// A profile's task, variant and class; nullopt (reported) without all three.
std::optional<model::ProfileKey> StatusReader::Key(const json& o, const std::string& path) {
  const auto task = String(o, "task", path), variant = String(o, "variant", path);
  const auto hardware_class = String(o, "hardwareClass", path);
  if (!task || !variant || !hardware_class) {
    r_.Fail(path, "without task, variant or hardwareClass");
    return std::nullopt;
  }
  return model::ProfileKey{*task, *variant, *hardware_class};
}

std::vector<model::ObservedProfile> StatusReader::Profiles(const json& o, const std::string& path) {
  std::vector<model::ObservedProfile> out;
  EachObject(o, "profiles", path, [&](const json& p, const std::string& at) {
    r_.OnlyKnown(p, at, {"task", "variant", "hardwareClass", "ratio", "plannedRatio", "points"});
    const auto key = Key(p, at);
    model::ObservedProfile entry;
    Set(Number(p, "ratio", at), entry.ratio);
    Set(Number(p, "plannedRatio", at), entry.planned_ratio);
    EachObject(p, "points", at, [&](const json& q, const std::string& point_at) {
      r_.OnlyKnown(q, point_at, {"batch", "measuredMs", "declaredMs", "batches"});
      model::ProfilePoint point;
      const auto batch = Count(q, "batch", point_at, 1, limits::kMaxBatch);
      Set(Number(q, "measuredMs", point_at), point.measured_ms);
      Set(Number(q, "declaredMs", point_at), point.declared_ms);
      Set(Number(q, "batches", point_at), point.batches);
      if (batch) point.batch = static_cast<int>(*batch);
      if (batch) entry.points.push_back(point);
    });
    if (!key) return;
    entry.key = *key;
    out.push_back(std::move(entry));
  });
  return out;
}

model::ObservedLoad StatusReader::Observed(const json& o, const std::string& path) {
  r_.OnlyKnown(o, path,
               {"pathRates", "demand", "arrivalRate", "dataPlane", "querySizes", "profiles"});
  model::ObservedLoad out;
  out.path_rates_rps = NumberMap(o, "pathRates", path);
  if (r_.Object(o, "demand", path, false) != nullptr) out.demand_rps = NumberMap(o, "demand", path);
  Set(Number(o, "arrivalRate", path), out.arrival_rate_rps);
  if (const json* seen = r_.Object(o, "dataPlane", path, false)) {
    out.data_plane = DataPlane(*seen, Reader::At(path, "dataPlane"));
  }
  if (const json* sizes = r_.Object(o, "querySizes", path, false)) {
    out.query_sizes = QuerySizes(*sizes, Reader::At(path, "querySizes"));
  }
  out.profiles = Profiles(o, path);
  return out;
}

// ----- memory

// A correction's points, whole or not at all: [[batch, ms], ...], batches rising, ms positive.
std::optional<std::vector<model::LatencyPoint>> CorrectionPoints(const json* list) {
  std::vector<model::LatencyPoint> out;
  if (list == nullptr || !list->is_array() || list->size() > limits::kMaxPoints) {
    return std::nullopt;
  }
  for (const json& p : *list) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_number_integer() || !p[1].is_number()) {
      return std::nullopt;
    }
    const long long batch = p[0].get<long long>();
    const double ms = p[1].get<double>();
    if (batch < 1 || batch > limits::kMaxBatch || !(ms > 0) || ms > limits::kMaxMs ||
        (!out.empty() && batch <= out.back().batch)) {
      return std::nullopt;
    }
    out.push_back({static_cast<int>(batch), ms});
  }
  return out;
}

// The corrections planned from, each whole or forgotten: the declared profile is planned from
// instead until the router measures again.
std::vector<model::ProfileCorrection> StatusReader::Corrections(const json& o,
                                                                const std::string& path) {
  std::vector<model::ProfileCorrection> out;
  EachObject(o, "profiles", path, [&](const json& c, const std::string& at) {
    r_.OnlyKnown(c, at, {"task", "variant", "hardwareClass", "ratio", "points", "declared"});
    const auto key = Key(c, at);
    const auto ratio = Number(c, "ratio", at);
    const auto declared = String(c, "declared", at);
    const auto found = c.find("points");
    const auto points = CorrectionPoints(found == c.end() ? nullptr : &*found);
    if (!key || !ratio || !(*ratio > 0) || *ratio > limits::kMaxRatio || !declared || !points) {
      r_.Fail(at, "malformed correction: forgotten");
      return;
    }
    out.push_back({.key = *key, .ratio = *ratio, .points = *points, .declared = *declared});
  });
  return out;
}

// The stabilization steps: at most model::kMaxRecommendations, each at a finite time after the
// one before (steps out of order were not written by the operator), replicas within what a
// Deployment may ask for.
std::vector<model::Recommendation> StatusReader::Recommendations(const json& m,
                                                                 const std::string& path) {
  std::vector<model::Recommendation> out;
  EachObject(m, "recommendations", path, [&](const json& step, const std::string& at) {
    r_.OnlyKnown(step, at, {"since", "replicas"});
    const auto since = Number(step, "since", at);
    const json* replicas = r_.Object(step, "replicas", at, false);
    if (out.size() == model::kMaxRecommendations) {
      r_.Fail(at, "beyond the steps kept");
      return;
    }
    if (!since || replicas == nullptr) {
      r_.Fail(at, "no since or no replicas");
      return;
    }
    model::Recommendation r{.since = *since, .replicas = {}};
    for (const auto& [name, n] : replicas->items()) {
      // Clamped, as a scale-down window would read them: beyond the most replicas is the most.
      if (n.is_number_unsigned()) {
        r.replicas[name] =
            static_cast<int>(std::min<std::uint64_t>(n.get<std::uint64_t>(), limits::kMaxReplicas));
      } else if (n.is_number_integer()) {
        r.replicas[name] =
            static_cast<int>(std::clamp<long long>(n.get<long long>(), 0, limits::kMaxReplicas));
      } else {
        r_.Fail(Reader::At(Reader::At(at, "replicas"), name), "must be an integer");
      }
    }
    if (!out.empty() && r.since < out.back().since) {
      r_.Fail(at, "before the step it follows");
      return;
    }
    out.push_back(std::move(r));
  });
  return out;
}

// The adopted query-size mix, whole or not at all: a malformed one is forgotten, and the spec's
// mix stands in until the router's measurement settles again.
void StatusReader::QueryMix(const json& m, const std::string& path, model::StatusMemory& out) {
  const json* mix = r_.Array(m, "queryMix", path, false, limits::kMaxPlanItems);
  const auto for_spec = String(m, "queryMixFor", path);
  if (mix == nullptr && !for_spec) return;
  std::vector<model::QuerySize> sizes;
  std::set<long long> seen;
  bool whole = mix != nullptr && for_spec && !mix->empty() && mix->size() <= limits::kMaxQuerySizes;
  std::vector<FieldError> ignored;  // one problem says the mix is forgotten, not one per entry
  Reader quiet(ignored);
  for (size_t i = 0; whole && i < mix->size(); ++i) {
    const json& q = (*mix)[i];
    if (!q.is_object()) {
      whole = false;
      break;
    }
    const std::int64_t size = quiet.Integer(q, "size", "", true, 1, limits::kMaxBatch).value_or(0);
    const double weight = quiet.Number(q, "weight", "", true, kAny).value_or(0);
    whole = size > 0 && seen.insert(size).second && weight > 0 && weight <= limits::kMaxWeight;
    if (whole) sizes.push_back({.size = static_cast<int>(size), .weight = weight});
  }
  if (!whole) {
    r_.Fail(Reader::At(path, "queryMix"), "malformed: forgotten with queryMixFor");
    return;
  }
  out.query_mix = std::move(sizes);
  out.query_mix_for = *for_spec;
}

// returns and awakeAhead: an entry missing a number is dropped.
void StatusReader::WakeAhead(const json& m, const std::string& path, model::StatusMemory& out) {
  if (const json* returns = r_.Object(m, "returns", path, false)) {
    for (const auto& [name, list] : returns->items()) {
      const std::string at = Reader::At(Reader::At(path, "returns"), name);
      if (!list.is_array() || list.size() > limits::kMaxPlanItems) {
        r_.Fail(at, "must be an array of at most " + std::to_string(limits::kMaxPlanItems));
        continue;
      }
      for (size_t i = 0; i < list.size(); ++i) {
        const std::string item = Reader::At(at, i);
        if (!list[i].is_object()) continue;
        r_.OnlyKnown(list[i], item, {"at", "rateRps"});
        auto when = Number(list[i], "at", item);
        auto rate = Number(list[i], "rateRps", item);
        if (when && rate) out.returns[name].push_back({.at = *when, .rate_rps = *rate});
      }
    }
  }
  if (const json* ahead = r_.Object(m, "awakeAhead", path, false)) {
    for (const auto& [name, w] : ahead->items()) {
      const std::string at = Reader::At(Reader::At(path, "awakeAhead"), name);
      if (!w.is_object()) continue;
      r_.OnlyKnown(w, at, {"until", "rateRps"});
      auto until = Number(w, "until", at);
      auto rate = Number(w, "rateRps", at);
      if (until && rate) out.awake_ahead[name] = {.until = *until, .rate_rps = *rate};
    }
  }
}

model::Headroom StatusReader::Headroom(const json& h, const std::string& path) {
  r_.OnlyKnown(h, path, {"paths", "quietUntil", "heldUntil"});
  model::Headroom out;
  Set(Number(h, "quietUntil", path), out.quiet_until);
  Set(Number(h, "heldUntil", path), out.held_until);
  const json* paths = r_.Object(h, "paths", path, false);
  if (paths != nullptr && paths->size() > limits::kMaxPlanItems) {
    r_.Fail(Reader::At(path, "paths"),
            "must have at most " + std::to_string(limits::kMaxPlanItems) + " paths");
  } else if (paths != nullptr) {
    for (const auto& [name, p] : paths->items()) {
      const std::string at = Reader::At(Reader::At(path, "paths"), name);
      if (!p.is_object()) continue;
      r_.OnlyKnown(p, at, {"headroom", "raisedFrom"});
      model::PathHeadroom entry;
      Set(Number(p, "headroom", at), entry.headroom);
      Set(Number(p, "raisedFrom", at), entry.raised_from);
      out.paths[name] = entry;
    }
  }
  return out;
}

model::StatusMemory StatusReader::Memory(const json& m, const std::string& path) {
  r_.OnlyKnown(m, path,
               {"recommendations", "guardQuietUntil", "queryMix", "queryMixFor", "profiles",
                "quietSince", "heldSince", "sleepingPaths", "returns", "awakeAhead", "headroom"});
  model::StatusMemory out;
  out.recommendations = Recommendations(m, path);
  Set(Number(m, "guardQuietUntil", path), out.guard_quiet_until);
  QueryMix(m, path, out);
  out.profiles = Corrections(m, path);
  out.quiet_since = NumberMap(m, "quietSince", path);
  out.held_since = NumberMap(m, "heldSince", path);
  if (const json* sleeping = r_.Array(m, "sleepingPaths", path, false, limits::kMaxPlanItems)) {
    for (size_t i = 0; i < sleeping->size(); ++i) {
      if (auto name =
              r_.StringValue((*sleeping)[i], Reader::At(Reader::At(path, "sleepingPaths"), i))) {
        out.sleeping_paths.push_back(*name);
      }
    }
  }
  WakeAhead(m, path, out);
  if (const json* h = r_.Object(m, "headroom", path, false)) {
    out.headroom = Headroom(*h, Reader::At(path, "headroom"));
  }
  return out;
}

model::PipelineStatus StatusReader::Status(const json& status) {
  model::PipelineStatus out;
  const std::string path = "status";
  if (status.is_null()) return out;
  if (!status.is_object()) {
    r_.Fail(path, "must be an object");
    return out;
  }
  r_.OnlyKnown(status, path,
               {"observedGeneration", "conditions", "plan", "solver", "totalReplicas",
                "costPerHour", "share", "observed", "capacity", "unschedulable", "memory"});
  Set(Count(status, "observedGeneration", path, 0, kGeneration), out.observed_generation);
  out.conditions = Conditions(status, path);
  if (const json* plan = r_.Object(status, "plan", path, false)) {
    out.plan = Plan(*plan, Reader::At(path, "plan"));
  }
  if (const json* solver = r_.Object(status, "solver", path, false)) {
    out.solver = Solver(*solver, Reader::At(path, "solver"));
  }
  Set(Count(status, "totalReplicas", path, 0, limits::kMaxCount), out.total_replicas);
  Set(Number(status, "costPerHour", path), out.cost_per_hour);
  if (const json* observed = r_.Object(status, "observed", path, false)) {
    out.observed = Observed(*observed, Reader::At(path, "observed"));
  }
  if (r_.Array(status, "capacity", path, false, limits::kMaxPlanItems) != nullptr) {
    out.capacity.emplace();
    EachObject(status, "capacity", path, [&](const json& c, const std::string& at) {
      r_.OnlyKnown(c, at,
                   {"hardwareClass", "nodes", "scheduled", "placeable", "preemptible", "pool",
                    "share", "full", "limit"});
      model::ClassCapacity entry;
      Set(String(c, "hardwareClass", at), entry.hardware_class);
      Set(Count(c, "nodes", at, 0, limits::kMaxCount), entry.nodes);
      Set(Count(c, "scheduled", at, 0, limits::kMaxCount), entry.scheduled);
      Set(Count(c, "placeable", at, 0, limits::kMaxCount), entry.placeable);
      Set(Count(c, "preemptible", at, 0, limits::kMaxCount), entry.preemptible);
      Set(Count(c, "pool", at, 0, limits::kMaxCount), entry.pool);
      Set(Count(c, "share", at, 0, limits::kMaxCount), entry.share);
      Set(String(c, "full", at), entry.full_reason);
      // "limit" is scheduled + placeable (or share): written for a person, not read.
      out.capacity->push_back(std::move(entry));
    });
  }
  EachObject(status, "unschedulable", path, [&](const json& u, const std::string& at) {
    r_.OnlyKnown(u, at, {"deployment", "pods", "message"});
    model::Unschedulable entry;
    Set(String(u, "deployment", at), entry.deployment);
    Set(Count(u, "pods", at, 0, limits::kMaxCount), entry.pods);
    Set(String(u, "message", at), entry.message);
    out.unschedulable.push_back(std::move(entry));
  });
  if (const json* memory = r_.Object(status, "memory", path, false)) {
    out.memory = Memory(*memory, Reader::At(path, "memory"));
  }
  return out;
}

// How many dropped fields one log line names.
constexpr size_t kDropsLogged = 10;

}  // namespace

model::PipelineStatus ReadStatus(const json& status, std::string_view pipeline,
                                 std::vector<std::string>* dropped) {
  std::vector<FieldError> errors;
  Reader r(errors);
  model::PipelineStatus out;
  try {
    out = StatusReader(r).Status(status);
  } catch (const std::exception& e) {
    // Not expected (every access above checks its type first); a status is not worth a crash.
    r.Fail("status", e.what());
  }
  r.Finish();
  std::vector<std::string> list;
  list.reserve(errors.size());
  for (const FieldError& e : errors) list.push_back(e.ToString());
  if (dropped != nullptr) {
    *dropped = std::move(list);
  } else if (!list.empty()) {
    std::string fields;
    for (size_t i = 0; i < list.size() && i < kDropsLogged; ++i) {
      fields += (i > 0 ? "; " : "") + list[i];
    }
    if (list.size() > kDropsLogged) {
      fields += "; and " + std::to_string(list.size() - kDropsLogged) + " more";
    }
    Log("warning", "status fields dropped: unreadable or unknown",
        {{"pipeline", std::string(pipeline)}, {"fields", fields}});
  }
  return out;
}

std::vector<model::Condition> ReadConditions(const json& conditions) {
  std::vector<FieldError> ignored;
  Reader r(ignored);
  try {
    return StatusReader(r).Conditions(json{{"conditions", conditions}}, "");
  } catch (const std::exception&) {
    return {};
  }
}

}  // namespace pipescale::api
