#include "api/plan_parts.h"

namespace pipescale::api {

using nlohmann::json;

std::string PlanParts::Text(const json& object, const char* key, const std::string& path) {
  std::optional<std::string> text = r_.String(object, key, path, true);
  if (text && text->empty()) r_.Fail(Reader::At(path, key), "must be a non-empty string");
  return text.value_or("");
}

int PlanParts::Count(const json& object, const char* key, const std::string& path, int low,
                     int high) {
  return static_cast<int>(r_.Integer(object, key, path, true, low, high).value_or(low));
}

void PlanParts::Known(const json& object, const std::string& path,
                      std::initializer_list<const char*> keys) {
  if (report_unknown_) r_.OnlyKnown(object, path, keys);
}

std::optional<model::Phase> PlanParts::Phase(const json& object, const char* key,
                                             const std::string& path, bool required) {
  const std::optional<std::string> name = r_.String(object, key, path, required);
  if (!name) return std::nullopt;
  for (auto p : {model::Phase::kHardwareScaling, model::Phase::kAccuracyScaling,
                 model::Phase::kOverloaded}) {
    if (*name == model::PhaseName(p)) return p;
  }
  r_.Fail(Reader::At(path, key), "must be HardwareScaling, AccuracyScaling or Overloaded");
  return std::nullopt;
}

model::VariantRoute PlanParts::Table(const json& t, const std::string& path) {
  Known(t, path, {"path", "task", "from", "to"});
  model::VariantRoute table{.path = Text(t, "path", path), .task = Text(t, "task", path)};
  table.from_variant = r_.String(t, "from", path, false).value_or("");
  ForEachObject(t, "to", path, [&](const json& to, const std::string& at) {
    Known(to, at, {"variant", "fraction"});
    const std::string variant = Text(to, "variant", at);
    const std::optional<double> fraction = r_.Number(to, "fraction", at, true, kFractionRange);
    if (!variant.empty() && fraction) table.to.emplace_back(variant, *fraction);
  });
  return table;
}

model::BackupWorker PlanParts::Backup(const json& b, const std::string& path) {
  Known(b, path, {"task", "variant", "spareRps"});
  return {Text(b, "task", path), Text(b, "variant", path),
          r_.Number(b, "spareRps", path, true, kPlanRateRange).value_or(0)};
}

model::PoolMember PlanParts::Member(const json& m, const std::string& path) {
  Known(m, path, {"hardwareClass", "replicas", "maxQuery", "coefficient", "capacityRps"});
  return {.hardware_class = Text(m, "hardwareClass", path),
          .replicas = Count(m, "replicas", path, 0, limits::kMaxReplicas),
          .max_query = Count(m, "maxQuery", path, 1, limits::kMaxBatch),
          .coefficient = r_.Number(m, "coefficient", path, true, kFractionRange).value_or(0),
          .capacity_rps = r_.Number(m, "capacityRps", path, true, kPlanRateRange).value_or(0)};
}

model::Pool PlanParts::Pool(const json& p, const std::string& path) {
  Known(p, path, {"task", "qosMs", "members", "spillClass", "upperBoundQps"});
  model::Pool pool{.task = Text(p, "task", path),
                   .qos_ms = r_.Number(p, "qosMs", path, true, kPlanMsRange).value_or(0)};
  ForEachObject(p, "members", path, [&](const json& m, const std::string& at) {
    pool.members.push_back(Member(m, at));
  });
  if (const auto spill = p.find("spillClass"); spill != p.end() && !spill->is_null()) {
    pool.spill_class = Text(p, "spillClass", path);
  }
  pool.upper_bound_qps = r_.Number(p, "upperBoundQps", path, false, kPlanRateRange).value_or(0);
  return pool;
}

RouterBatch PlanParts::Batch(const json& b, const std::string& path) {
  Known(b, path, {"task", "variant", "batchSize", "waitMs"});
  return {Text(b, "task", path), Text(b, "variant", path),
          Count(b, "batchSize", path, 1, limits::kMaxBatch),
          r_.Number(b, "waitMs", path, true, kPlanMsRange).value_or(0)};
}

}  // namespace pipescale::api
