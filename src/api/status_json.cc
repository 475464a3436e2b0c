#include "api/status_json.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <exception>
#include <optional>
#include <set>
#include <utility>

#include "api/pipeline_parse.h"
#include "api/plan_json.h"
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

json StatusToJson(const model::PipelineStatus& status) {
  json out = {{"observedGeneration", status.observed_generation},
              {"conditions", ConditionsToJson(status.conditions)}};
  if (status.plan) out["plan"] = PlanToJson(*status.plan);
  if (status.solver) out["solver"] = SolverToJson(*status.solver);
  if (status.total_replicas) out["totalReplicas"] = *status.total_replicas;
  if (status.cost_per_hour) out["costPerHour"] = RoundQuantity(*status.cost_per_hour);
  if (status.observed) out["observed"] = ObservedToJson(*status.observed);
  if (status.capacity) out["capacity"] = CapacityToJson(*status.capacity);
  if (!status.unschedulable.empty())
    out["unschedulable"] = UnschedulableToJson(status.unschedulable);
  if (status.memory) out["memory"] = MemoryToJson(*status.memory);
  return out;
}

// ---------------------------------------------------------------------------------------------
// The reader.

namespace {

constexpr long long kCount = INT_MAX;  // replicas, batch sizes, nodes, pods
constexpr long long kGeneration = INT64_MAX;
// No rate, cost, time or latency in a status comes near; beyond it the status's rounding (to
// 1/10000) would neither keep a number nor give back the same one when it rounds it again.
constexpr double kMaxMagnitude = 1e11;
static_assert(optimizer::kMaxQueueMs <= kMaxMagnitude, "a plan's unbounded queue must read back");
// What one read keeps of what it dropped: a status may hold any number of fields.
constexpr size_t kMaxDrops = 1000;

// What the reader dropped: "<path>: <why>", the path escaped (its keys are anyone's text).
class Drops {
 public:
  void Add(const std::string& path, const char* why) {
    if (list.size() < kMaxDrops) {
      list.push_back(EscapeUserText(path, 2 * kQuotedChars) + ": " + why);
    } else {
      ++more;
    }
  }
  std::vector<std::string> list;
  size_t more = 0;
};

std::optional<double> Number(const json& v, const std::string& path, Drops& drops) {
  if (v.is_number() && std::abs(v.get<double>()) <= kMaxMagnitude) return v.get<double>();
  drops.Add(path, "not a number within 1e11");
  return std::nullopt;
}

std::optional<long long> Integer(const json& v, long long min, long long max,
                                 const std::string& path, Drops& drops) {
  if (v.is_number_unsigned()) {
    if (v.get<std::uint64_t>() <= static_cast<std::uint64_t>(max)) {
      if (const auto n = static_cast<long long>(v.get<std::uint64_t>()); n >= min) return n;
    }
  } else if (v.is_number_integer()) {
    if (const auto n = v.get<long long>(); n >= min && n <= max) return n;
  }
  drops.Add(path, "not an integer in range");
  return std::nullopt;
}

std::optional<std::string> String(const json& v, const std::string& path, Drops& drops) {
  if (v.is_string()) return v.get<std::string>();
  drops.Add(path, "not a string");
  return std::nullopt;
}

// One JSON object being read. Each field asked for is checked for its type and dropped when it
// has the wrong one; a null field is absent (what a merge patch leaves). Done() drops the fields
// never asked for as unknown.
class Fields {
 public:
  Fields(const json& value, std::string path, Drops& drops)
      : object_(value.is_object() ? &value : nullptr), path_(std::move(path)), drops_(drops) {
    if (object_ == nullptr && !value.is_null()) drops_.Add(path_, "not an object");
  }

  bool ok() const { return object_ != nullptr; }
  const std::string& path() const { return path_; }
  std::string Path(const char* key) const { return path_ + "." + key; }
  Drops& drops() { return drops_; }

  // The field, or nullptr when it is absent or null.
  const json* Get(const char* key) {
    known_.insert(key);
    if (object_ == nullptr) return nullptr;
    const auto it = object_->find(key);
    return it == object_->end() || it->is_null() ? nullptr : &*it;
  }
  std::optional<double> Number(const char* key) {
    const json* v = Get(key);
    return v == nullptr ? std::nullopt : api::Number(*v, Path(key), drops_);
  }
  std::optional<long long> Integer(const char* key, long long min, long long max) {
    const json* v = Get(key);
    return v == nullptr ? std::nullopt : api::Integer(*v, min, max, Path(key), drops_);
  }
  std::optional<std::string> String(const char* key) {
    const json* v = Get(key);
    return v == nullptr ? std::nullopt : api::String(*v, Path(key), drops_);
  }
  // An array field's items; nullptr (and dropped) when it is there but not an array.
  const json* Array(const char* key) {
    const json* v = Get(key);
    if (v == nullptr || v->is_array()) return v;
    drops_.Add(Path(key), "not an array");
    return nullptr;
  }

  void Done() {
    if (object_ == nullptr) return;
    for (const auto& [key, value] : object_->items()) {
      if (!known_.contains(key)) drops_.Add(path_ + "." + key, "unknown field");
    }
  }

 private:
  const json* object_;
  std::string path_;
  Drops& drops_;
  std::set<std::string> known_;
};

std::string Item(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

// `value` into `into` when it was there and readable.
template <typename T, typename U>
void Set(std::optional<U> value, T& into) {
  if (value) into = static_cast<T>(*value);
}

std::map<std::string, double> NumberMap(Fields& f, const char* key) {
  std::map<std::string, double> out;
  const json* value = f.Get(key);
  if (value == nullptr) return out;
  Fields map(*value, f.Path(key), f.drops());
  if (!map.ok()) return out;
  for (const auto& [name, v] : value->items()) {
    if (const auto n = map.Number(name.c_str())) out[name] = *n;
  }
  return out;
}

// ----- conditions

std::optional<model::Condition> ReadCondition(const json& value, const std::string& path,
                                              Drops& drops) {
  Fields f(value, path, drops);
  if (!f.ok()) return std::nullopt;
  model::Condition c;
  Set(f.String("type"), c.type);
  Set(f.String("status"), c.status);
  Set(f.String("reason"), c.reason);
  Set(f.String("message"), c.message);
  Set(f.Integer("observedGeneration", 0, kGeneration), c.observed_generation);
  Set(f.String("lastTransitionTime"), c.last_transition_time);
  f.Done();
  // type and status are what a condition is (the CRD requires them).
  if (c.type.empty() || (c.status != "True" && c.status != "False" && c.status != "Unknown")) {
    drops.Add(path, "no type, or a status other than True, False and Unknown");
    return std::nullopt;
  }
  return c;
}

std::vector<model::Condition> ReadConditionList(const json* list, const std::string& path,
                                                Drops& drops) {
  std::vector<model::Condition> out;
  if (list == nullptr) return out;
  for (size_t i = 0; i < list->size(); ++i) {
    if (auto c = ReadCondition((*list)[i], Item(path, i), drops)) out.push_back(std::move(*c));
  }
  return out;
}

// ----- the plan

std::optional<model::Phase> ParsePhase(const std::string& name) {
  for (model::Phase p : {model::Phase::kHardwareScaling, model::Phase::kAccuracyScaling,
                         model::Phase::kOverloaded}) {
    if (name == model::PhaseName(p)) return p;
  }
  return std::nullopt;
}

std::optional<model::SolveStatus> ParseSolveStatus(const std::string& name) {
  for (model::SolveStatus s : {model::SolveStatus::kOptimal, model::SolveStatus::kFeasible,
                               model::SolveStatus::kInfeasible, model::SolveStatus::kTimeLimit}) {
    if (name == model::SolveStatusName(s)) return s;
  }
  return std::nullopt;
}

// Calls read(item, path) for each item of the array `key` that is an object.
template <typename Read>
void EachObject(Fields& f, const char* key, Read read) {
  const json* list = f.Array(key);
  if (list == nullptr) return;
  for (size_t i = 0; i < list->size(); ++i) {
    Fields item((*list)[i], Item(f.Path(key), i), f.drops());
    if (!item.ok()) continue;
    read(item);
    item.Done();
  }
}

void ReadTasks(Fields& f, model::AppliedPlan& out) {
  EachObject(f, "tasks", [&](Fields& t) {
    model::TaskPlan task;
    Set(t.String("task"), task.task);
    Set(t.String("variant"), task.variant);
    Set(t.String("hardwareClass"), task.hardware_class);
    Set(t.Integer("replicas", 0, kCount), task.replicas);
    Set(t.Integer("batchSize", 0, kCount), task.batch_size);
    Set(t.Number("latencyMs"), task.latency_ms);
    Set(t.Number("queueMs"), task.queue_ms);
    Set(t.Number("loadRps"), task.load_rps);
    std::string deployment;
    Set(t.String("deployment"), deployment);
    (void)t.Number("budgetMs");  // a Loki drop budget older operators wrote; no longer kept
    out.plan.tasks.push_back(std::move(task));
    out.deployments.push_back(std::move(deployment));
  });
}

void ReadPaths(Fields& f, model::Plan& plan) {
  EachObject(f, "paths", [&](Fields& p) {
    model::PathPlan path;
    Set(p.String("name"), path.name);
    Set(p.Number("sloMs"), path.slo_ms);
    Set(p.Number("predictedLatencyMs"), path.predicted_latency_ms);
    plan.paths.push_back(std::move(path));
  });
}

std::vector<std::string> StringList(Fields& f, const char* key) {
  std::vector<std::string> out;
  const json* list = f.Array(key);
  if (list == nullptr) return out;
  for (size_t i = 0; i < list->size(); ++i) {
    if (auto s = String((*list)[i], Item(f.Path(key), i), f.drops())) out.push_back(*s);
  }
  return out;
}

model::AccuracyScalingPlan ReadAccuracyScaling(Fields& f, model::Phase phase) {
  model::AccuracyScalingPlan loki{.phase = phase};
  Set(f.Number("accuracy"), loki.accuracy);
  EachObject(f, "variantPaths", [&](Fields& v) {
    model::VariantPath path;
    Set(v.String("path"), path.path);
    path.variants = StringList(v, "variants");
    Set(v.Number("share"), path.share);
    Set(v.Number("accuracy"), path.accuracy);
    Set(v.Number("latencyMs"), path.latency_ms);
    loki.variant_paths.push_back(std::move(path));
  });
  EachObject(f, "routing", [&](Fields& r) {
    model::RoutingTable table;
    Set(r.String("path"), table.path);
    Set(r.String("task"), table.task);
    Set(r.String("from"), table.from_variant);
    EachObject(r, "to", [&](Fields& to) {
      auto variant = to.String("variant");
      auto fraction = to.Number("fraction");
      if (variant && fraction) table.to.emplace_back(*variant, *fraction);
    });
    loki.routing.push_back(std::move(table));
  });
  EachObject(f, "backups", [&](Fields& b) {
    model::BackupWorker backup;
    Set(b.String("task"), backup.task);
    Set(b.String("variant"), backup.variant);
    Set(b.Number("spareRps"), backup.spare_rps);
    loki.backups.push_back(std::move(backup));
  });
  return loki;
}

model::PoolPlan ReadPools(Fields& f) {
  model::PoolPlan pools;
  Set(f.Number("upperBoundQps"), pools.upper_bound_qps);
  if (const json* forecast = f.Get("forecast")) {
    Fields fc(*forecast, f.Path("forecast"), f.drops());
    Set(fc.Number("stepSeconds"), pools.forecast_step_seconds);
    if (const json* rps = fc.Array("rps")) {
      for (size_t i = 0; i < rps->size(); ++i) {
        if (auto r = Number((*rps)[i], Item(fc.Path("rps"), i), f.drops())) {
          pools.forecast_rps.push_back(*r);
        }
      }
    }
    fc.Done();
  }
  EachObject(f, "pools", [&](Fields& p) {
    model::Pool pool;
    Set(p.String("task"), pool.task);
    Set(p.Number("qosMs"), pool.qos_ms);
    EachObject(p, "members", [&](Fields& m) {
      model::PoolMember member;
      Set(m.String("hardwareClass"), member.hardware_class);
      Set(m.Integer("replicas", 0, kCount), member.replicas);
      Set(m.Integer("maxQuery", 0, kCount), member.max_query);
      Set(m.Number("coefficient"), member.coefficient);
      Set(m.Number("capacityRps"), member.capacity_rps);
      pool.members.push_back(std::move(member));
    });
    Set(p.String("spillClass"), pool.spill_class);
    Set(p.Number("upperBoundQps"), pool.upper_bound_qps);
    pools.pools.push_back(std::move(pool));
  });
  return pools;
}

std::optional<model::AppliedPlan> ReadPlan(const json& value, const std::string& path,
                                           Drops& drops) {
  Fields f(value, path, drops);
  if (!f.ok()) return std::nullopt;
  model::AppliedPlan out;
  Set(f.Number("costPerHour"), out.plan.cost_per_hour);
  Set(f.Number("servedFraction"), out.plan.served_fraction);
  // Loki's plans carry a phase, Kairos's and MArk's pools; what a plan is decides which of its
  // fields belong.
  std::optional<model::Phase> phase;
  if (auto name = f.String("phase")) {
    phase = ParsePhase(*name);
    if (!phase) drops.Add(f.Path("phase"), "not a phase");
  }
  if (phase) {
    out.plan.detail = ReadAccuracyScaling(f, *phase);
  } else if (f.Get("pools") != nullptr || f.Get("upperBoundQps") != nullptr ||
             f.Get("forecast") != nullptr) {
    out.plan.detail = ReadPools(f);
  }
  ReadTasks(f, out);
  ReadPaths(f, out.plan);
  f.Done();
  return out;
}

std::optional<model::SolverRecord> ReadSolver(const json& value, const std::string& path,
                                              Drops& drops) {
  Fields f(value, path, drops);
  if (!f.ok()) return std::nullopt;
  model::SolverRecord out;
  Set(f.String("name"), out.name);
  if (auto name = f.String("status")) {
    if (auto status = ParseSolveStatus(*name)) {
      out.status = *status;
    } else {
      drops.Add(f.Path("status"), "not a solve status");
    }
  }
  Set(f.Number("objective"), out.objective.value);
  Set(f.String("objectiveUnit"), out.objective.unit);
  Set(f.Number("durationMs"), out.duration_ms);
  f.Done();
  return out;
}

// ----- observed

model::ObservedDataPlane ReadDataPlane(Fields& f) {
  model::ObservedDataPlane out;
  out.drops_rps = NumberMap(f, "dropsPerSecond");
  Set(f.Number("reroutesPerSecond"), out.reroutes_rps);
  out.spill_share = NumberMap(f, "spillShare");
  out.pool_waiting = NumberMap(f, "poolWaiting");
  out.batch_rows = NumberMap(f, "batchRows");
  if (const json* shed = f.Get("shedPerSecond")) {
    Fields paths(*shed, f.Path("shedPerSecond"), f.drops());
    if (paths.ok()) {
      for (const auto& [name, reasons] : shed->items()) {
        std::map<std::string, double> by_reason = NumberMap(paths, name.c_str());
        if (reasons.is_object()) out.shed_rps[name] = std::move(by_reason);
      }
    }
  }
  Set(f.Number("plannedAccuracy"), out.planned_accuracy);
  Set(f.Number("servedAccuracy"), out.served_accuracy);
  return out;
}

std::vector<model::SizeShare> ReadMix(Fields& f, const char* key) {
  std::vector<model::SizeShare> out;
  EachObject(f, key, [&](Fields& s) {
    auto size = s.Integer("size", 1, limits::kMaxBatch);
    auto share = s.Number("share");
    if (size && share) out.push_back({.size = static_cast<int>(*size), .share = *share});
  });
  return out;
}

model::QuerySizesRecord ReadQuerySizes(Fields& f) {
  model::QuerySizesRecord out;
  if (auto source = f.String("source")) {
    if (*source == "measured") {
      out.source = model::MixSource::kMeasured;
    } else if (*source != "spec") {
      f.drops().Add(f.Path("source"), "neither spec nor measured");
    }
  }
  out.planned = ReadMix(f, "planned");
  out.measured = ReadMix(f, "measured");
  Set(f.Number("shift"), out.shift);
  Set(f.String("settlingSince"), out.settling_since);
  return out;
}

// ----- profiles

// A profile's task, variant and class; nullopt (dropped) without all three.
std::optional<model::ProfileKey> ReadKey(Fields& f) {
  model::ProfileKey key;
  const auto task = f.String("task"), variant = f.String("variant");
  const auto hardware_class = f.String("hardwareClass");
  if (!task || !variant || !hardware_class) {
    f.drops().Add(f.path(), "without task, variant or hardwareClass");
    return std::nullopt;
  }
  return model::ProfileKey{*task, *variant, *hardware_class};
}

std::vector<model::ObservedProfile> ReadProfiles(Fields& f) {
  std::vector<model::ObservedProfile> out;
  EachObject(f, "profiles", [&](Fields& p) {
    const auto key = ReadKey(p);
    model::ObservedProfile entry;
    Set(p.Number("ratio"), entry.ratio);
    Set(p.Number("plannedRatio"), entry.planned_ratio);
    EachObject(p, "points", [&](Fields& q) {
      model::ProfilePoint point;
      const auto batch = q.Integer("batch", 1, limits::kMaxBatch);
      Set(q.Number("measuredMs"), point.measured_ms);
      Set(q.Number("declaredMs"), point.declared_ms);
      Set(q.Number("batches"), point.batches);
      if (batch) point.batch = static_cast<int>(*batch);
      if (batch) entry.points.push_back(point);
    });
    if (!key) return;
    entry.key = *key;
    out.push_back(std::move(entry));
  });
  return out;
}

// A correction's points, whole or not at all: [[batch, ms], ...], batches rising, ms positive.
std::optional<std::vector<model::LatencyPoint>> ReadCorrectionPoints(const json* list) {
  std::vector<model::LatencyPoint> out;
  if (list == nullptr || list->size() > limits::kMaxBatch) return std::nullopt;
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
std::vector<model::ProfileCorrection> ReadCorrections(Fields& f) {
  std::vector<model::ProfileCorrection> out;
  EachObject(f, "profiles", [&](Fields& c) {
    const auto key = ReadKey(c);
    const auto ratio = c.Number("ratio");
    const auto declared = c.String("declared");
    const auto points = ReadCorrectionPoints(c.Array("points"));
    if (!key || !ratio || !(*ratio > 0) || *ratio > limits::kMaxRatio || !declared || !points) {
      c.drops().Add(c.path(), "malformed correction: forgotten");
      return;
    }
    out.push_back({.key = *key, .ratio = *ratio, .points = *points, .declared = *declared});
  });
  return out;
}

std::optional<model::ObservedLoad> ReadObserved(const json& value, const std::string& path,
                                                Drops& drops) {
  Fields f(value, path, drops);
  if (!f.ok()) return std::nullopt;
  model::ObservedLoad out;
  out.path_rates_rps = NumberMap(f, "pathRates");
  if (const json* demand = f.Get("demand"); demand != nullptr && demand->is_object()) {
    out.demand_rps = NumberMap(f, "demand");
  } else if (demand != nullptr) {
    drops.Add(f.Path("demand"), "not an object");
  }
  Set(f.Number("arrivalRate"), out.arrival_rate_rps);
  if (const json* seen = f.Get("dataPlane")) {
    Fields dp(*seen, f.Path("dataPlane"), drops);
    if (dp.ok()) out.data_plane = ReadDataPlane(dp);
    dp.Done();
  }
  if (const json* sizes = f.Get("querySizes")) {
    Fields qs(*sizes, f.Path("querySizes"), drops);
    if (qs.ok()) out.query_sizes = ReadQuerySizes(qs);
    qs.Done();
  }
  out.profiles = ReadProfiles(f);
  f.Done();
  return out;
}

// ----- capacity

std::vector<model::ClassCapacity> ReadCapacity(Fields& f) {
  std::vector<model::ClassCapacity> out;
  EachObject(f, "capacity", [&](Fields& c) {
    model::ClassCapacity entry;
    Set(c.String("hardwareClass"), entry.hardware_class);
    Set(c.Integer("nodes", 0, kCount), entry.nodes);
    Set(c.Integer("scheduled", 0, kCount), entry.scheduled);
    Set(c.Integer("placeable", 0, kCount), entry.placeable);
    Set(c.String("full"), entry.full_reason);
    c.Get("limit");  // scheduled + placeable: written for a person, not read
    out.push_back(std::move(entry));
  });
  return out;
}

std::vector<model::Unschedulable> ReadUnschedulable(Fields& f) {
  std::vector<model::Unschedulable> out;
  EachObject(f, "unschedulable", [&](Fields& u) {
    model::Unschedulable entry;
    Set(u.String("deployment"), entry.deployment);
    Set(u.Integer("pods", 0, kCount), entry.pods);
    Set(u.String("message"), entry.message);
    out.push_back(std::move(entry));
  });
  return out;
}

// ----- memory

// The stabilization steps: at most model::kMaxRecommendations, each at a finite time after the
// one before (steps out of order were not written by the operator), replicas within what a
// Deployment may ask for.
std::vector<model::Recommendation> ReadRecommendations(Fields& f) {
  std::vector<model::Recommendation> out;
  EachObject(f, "recommendations", [&](Fields& step) {
    const auto since = step.Number("since");
    const json* replicas = step.Get("replicas");
    if (out.size() == model::kMaxRecommendations) {
      step.drops().Add(step.path(), "beyond the steps kept");
      return;
    }
    if (!since || replicas == nullptr || !replicas->is_object()) {
      step.drops().Add(step.path(), "no since or no replicas");
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
        step.drops().Add(step.Path("replicas") + "." + name, "not an integer");
      }
    }
    if (!out.empty() && r.since < out.back().since) {
      step.drops().Add(step.path(), "before the step it follows");
      return;
    }
    out.push_back(std::move(r));
  });
  return out;
}

// The adopted query-size mix, whole or not at all: a malformed one is forgotten, and the spec's
// mix stands in until the router's measurement settles again.
void ReadQueryMix(Fields& f, model::StatusMemory& out) {
  const json* mix = f.Array("queryMix");
  const auto for_spec = f.String("queryMixFor");
  if (mix == nullptr && !for_spec) return;
  std::vector<model::QuerySize> sizes;
  std::set<long long> seen;
  bool whole = mix != nullptr && for_spec && !mix->empty() && mix->size() <= limits::kMaxQuerySizes;
  Drops ignored;  // one line says the mix is forgotten, not one per entry
  for (size_t i = 0; whole && i < mix->size(); ++i) {
    Fields q((*mix)[i], "", ignored);
    const auto size = q.Integer("size", 1, limits::kMaxBatch);
    const auto weight = q.Number("weight");
    whole = q.ok() && size && weight && seen.insert(*size).second && *weight > 0 &&
            *weight <= limits::kMaxWeight;
    if (whole) sizes.push_back({.size = static_cast<int>(*size), .weight = *weight});
  }
  if (!whole) {
    f.drops().Add(f.Path("queryMix"), "malformed: forgotten with queryMixFor");
    return;
  }
  out.query_mix = std::move(sizes);
  out.query_mix_for = *for_spec;
}

std::optional<model::StatusMemory> ReadMemory(const json& value, const std::string& path,
                                              Drops& drops) {
  Fields f(value, path, drops);
  if (!f.ok()) return std::nullopt;
  model::StatusMemory out;
  out.recommendations = ReadRecommendations(f);
  Set(f.Number("guardQuietUntil"), out.guard_quiet_until);
  ReadQueryMix(f, out);
  out.profiles = ReadCorrections(f);
  f.Done();
  return out;
}

model::PipelineStatus Read(const json& status, Drops& drops) {
  model::PipelineStatus out;
  Fields f(status, "status", drops);
  Set(f.Integer("observedGeneration", 0, kGeneration), out.observed_generation);
  out.conditions = ReadConditionList(f.Array("conditions"), f.Path("conditions"), drops);
  if (const json* plan = f.Get("plan")) out.plan = ReadPlan(*plan, f.Path("plan"), drops);
  if (const json* solver = f.Get("solver")) {
    out.solver = ReadSolver(*solver, f.Path("solver"), drops);
  }
  Set(f.Integer("totalReplicas", 0, kCount), out.total_replicas);
  Set(f.Number("costPerHour"), out.cost_per_hour);
  if (const json* observed = f.Get("observed")) {
    out.observed = ReadObserved(*observed, f.Path("observed"), drops);
  }
  if (f.Array("capacity") != nullptr) out.capacity = ReadCapacity(f);
  out.unschedulable = ReadUnschedulable(f);
  if (const json* memory = f.Get("memory")) {
    out.memory = ReadMemory(*memory, f.Path("memory"), drops);
  }
  f.Done();
  return out;
}

// How many dropped fields one log line names.
constexpr size_t kDropsLogged = 10;

}  // namespace

model::PipelineStatus ReadStatus(const json& status, std::string_view pipeline,
                                 std::vector<std::string>* dropped) {
  Drops drops;
  model::PipelineStatus out;
  try {
    out = Read(status, drops);
  } catch (const std::exception& e) {
    // Not expected (every access above checks its type first); a status is not worth a crash.
    drops.Add("status", e.what());
  }
  if (dropped != nullptr) {
    *dropped = std::move(drops.list);
  } else if (!drops.list.empty()) {
    std::string fields;
    for (size_t i = 0; i < drops.list.size() && i < kDropsLogged; ++i) {
      fields += (i > 0 ? "; " : "") + drops.list[i];
    }
    if (const size_t total = drops.list.size() + drops.more; total > kDropsLogged) {
      fields += "; and " + std::to_string(total - kDropsLogged) + " more";
    }
    Log("warning", "status fields dropped: unreadable or unknown",
        {{"pipeline", std::string(pipeline)}, {"fields", fields}});
  }
  return out;
}

std::vector<model::Condition> ReadConditions(const json& conditions) {
  Drops ignored;
  try {
    return ReadConditionList(conditions.is_array() ? &conditions : nullptr, "conditions", ignored);
  } catch (const std::exception&) {
    return {};
  }
}

}  // namespace pipescale::api
