#include "api/routing_parse.h"

#include <nlohmann/json.hpp>

#include "api/deployment.h"

namespace pipescale::api {
namespace {

using nlohmann::json;

// `field` starts with the ConfigMap key it is in: "routing.json: tables[1].to[0].fraction".
Error Invalid(const std::string& field, const std::string& why) {
  return Error{ErrorKind::kInvalid, field + ": " + why};
}

Result<int> Count(const json& object, const char* key, const std::string& field, int low) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer() || *it < low || *it > 1'000'000) {
    return Invalid(field + "." + key, "must be an integer from " + std::to_string(low));
  }
  return it->get<int>();
}

Result<std::string> Text(const json& object, const char* key, const std::string& field) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string() || it->get<std::string>().empty()) {
    return Invalid(field + "." + key, "must be a non-empty string");
  }
  return it->get<std::string>();
}

Result<double> Number(const json& object, const char* key, const std::string& field, double high) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number() || *it < 0 || *it > high) {
    return Invalid(field + "." + key,
                   high == 1 ? "must be a number in [0, 1]" : "must be a non-negative number");
  }
  return it->get<double>();
}

const json& Array(const json& doc, const char* key) {
  static const json kEmpty = json::array();
  auto it = doc.find(key);
  return it != doc.end() && it->is_array() ? *it : kEmpty;
}

Result<model::RoutingTable> Table(const json& t, const std::string& field) {
  if (!t.is_object()) return Invalid(field, "must be an object");
  model::RoutingTable table;
  for (auto [key, slot] : {std::pair{"path", &table.path}, {"task", &table.task}}) {
    auto v = Text(t, key, field);
    if (!v) return v.error();
    *slot = *v;
  }
  table.from_variant = t.value("from", json()).is_string() ? t["from"].get<std::string>() : "";
  const json& to = Array(t, "to");
  for (size_t i = 0; i < to.size(); ++i) {
    const std::string at = field + ".to[" + std::to_string(i) + "]";
    if (!to[i].is_object()) return Invalid(at, "must be an object");
    auto variant = Text(to[i], "variant", at);
    auto fraction = variant ? Number(to[i], "fraction", at, 1) : Result<double>(variant.error());
    if (!fraction) return fraction.error();
    table.to.emplace_back(*variant, *fraction);
  }
  return table;
}

Result<model::BackupWorker> Backup(const json& b, const std::string& field) {
  if (!b.is_object()) return Invalid(field, "must be an object");
  auto task = Text(b, "task", field);
  auto variant = task ? Text(b, "variant", field) : Result<std::string>(task.error());
  auto spare = variant ? Number(b, "spareRps", field, 1e12) : Result<double>(variant.error());
  if (!spare) return spare.error();
  return model::BackupWorker{*task, *variant, *spare};
}

Result<model::PoolMember> Member(const json& m, const std::string& field) {
  if (!m.is_object()) return Invalid(field, "must be an object");
  model::PoolMember member;
  auto hardware_class = Text(m, "hardwareClass", field);
  if (!hardware_class) return hardware_class.error();
  member.hardware_class = *hardware_class;
  for (auto [key, slot, low] : {std::tuple{"replicas", &member.replicas, 0},
                                std::tuple{"maxQuery", &member.max_query, 1}}) {
    auto v = Count(m, key, field, low);
    if (!v) return v.error();
    *slot = *v;
  }
  auto coefficient = Number(m, "coefficient", field, 1);
  auto capacity =
      coefficient ? Number(m, "capacityRps", field, 1e12) : Result<double>(coefficient.error());
  if (!capacity) return capacity.error();
  member.coefficient = *coefficient;
  member.capacity_rps = *capacity;
  return member;
}

Result<model::Pool> Pool(const json& p, const std::string& field) {
  if (!p.is_object()) return Invalid(field, "must be an object");
  model::Pool pool;
  auto task = Text(p, "task", field);
  auto qos = task ? Number(p, "qosMs", field, 1e9) : Result<double>(task.error());
  if (!qos) return qos.error();
  pool.task = *task;
  pool.qos_ms = *qos;
  const json& members = Array(p, "members");
  for (size_t i = 0; i < members.size(); ++i) {
    auto m = Member(members[i], field + ".members[" + std::to_string(i) + "]");
    if (!m) return m.error();
    pool.members.push_back(std::move(*m));
  }
  if (p.contains("spillClass")) {
    auto spill = Text(p, "spillClass", field);
    if (!spill) return spill.error();
    pool.spill_class = *spill;
  }
  if (p.contains("upperBoundQps")) {
    auto bound = Number(p, "upperBoundQps", field, 1e12);
    if (!bound) return bound.error();
    pool.upper_bound_qps = *bound;
  }
  return pool;
}

Result<RouterBatch> Batch(const json& b, const std::string& field) {
  if (!b.is_object()) return Invalid(field, "must be an object");
  RouterBatch out;
  auto task = Text(b, "task", field);
  auto variant = task ? Text(b, "variant", field) : Result<std::string>(task.error());
  auto size = variant ? Count(b, "batchSize", field, 1) : Result<int>(variant.error());
  auto wait = size ? Number(b, "waitMs", field, 3'600'000) : Result<double>(size.error());
  if (!wait) return wait.error();
  return RouterBatch{*task, *variant, *size, *wait};
}

}  // namespace

Result<std::vector<RouterBatch>> ParseBatching(std::string_view text) {
  const std::string root = std::string(kBatchingKey) + ": ";
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return Invalid(kBatchingKey, "must be a JSON object");
  std::vector<RouterBatch> out;
  const json& batches = Array(doc, "batches");
  for (size_t i = 0; i < batches.size(); ++i) {
    auto b = Batch(batches[i], root + "batches[" + std::to_string(i) + "]");
    if (!b) return b.error();
    out.push_back(std::move(*b));
  }
  return out;
}

Result<PoolsRouting> ParsePoolsRouting(std::string_view text) {
  const std::string root = std::string(kPoolsRoutingKey) + ": ";
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return Invalid(kPoolsRoutingKey, "must be a JSON object");
  PoolsRouting out;
  const json optimizer = doc.value("optimizer", json());
  if (!optimizer.is_string() || optimizer.get<std::string>().empty()) {
    return Invalid(root + "optimizer", "must be a non-empty string");
  }
  out.optimizer = optimizer.get<std::string>();
  const json& pools = Array(doc, "pools");
  for (size_t i = 0; i < pools.size(); ++i) {
    auto pool = Pool(pools[i], root + "pools[" + std::to_string(i) + "]");
    if (!pool) return pool.error();
    out.plan.pools.push_back(std::move(*pool));
  }
  return out;
}

Result<model::AccuracyScalingPlan> ParseLokiRouting(std::string_view text) {
  const std::string root = std::string(kLokiRoutingKey) + ": ";
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return Invalid(kLokiRoutingKey, "must be a JSON object");
  model::AccuracyScalingPlan plan;
  const std::string phase =
      doc.value("phase", json()).is_string() ? doc["phase"].get<std::string>() : "";
  bool known = false;
  for (auto p : {model::Phase::kHardwareScaling, model::Phase::kAccuracyScaling,
                 model::Phase::kOverloaded}) {
    if (phase == model::PhaseName(p)) plan.phase = p, known = true;
  }
  if (!known)
    return Invalid(root + "phase", "must be HardwareScaling, AccuracyScaling or Overloaded");
  const json& tables = Array(doc, "tables");
  for (size_t i = 0; i < tables.size(); ++i) {
    auto t = Table(tables[i], root + "tables[" + std::to_string(i) + "]");
    if (!t) return t.error();
    plan.routing.push_back(std::move(*t));
  }
  const json& backups = Array(doc, "backups");
  for (size_t i = 0; i < backups.size(); ++i) {
    auto b = Backup(backups[i], root + "backups[" + std::to_string(i) + "]");
    if (!b) return b.error();
    plan.backups.push_back(std::move(*b));
  }
  const json budgets = doc.value("budgetsMs", json::object());
  if (!budgets.is_object()) return Invalid(root + "budgetsMs", "must be an object");
  for (const auto& [key, ms] : budgets.items()) {
    if (!ms.is_number() || ms < 0) {
      std::string field = root;
      (field += "budgetsMs.") += key;
      return Invalid(field, "must be a non-negative number");
    }
    plan.drop_budget_ms[key] = ms.get<double>();
  }
  return plan;
}

}  // namespace pipescale::api
