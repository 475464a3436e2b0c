#include "api/routing_parse.h"

#include <nlohmann/json.hpp>

#include "api/deployment.h"
#include "api/field_reader.h"
#include "api/plan_parts.h"

namespace pipescale::api {
namespace {

using nlohmann::json;

// The document under ConfigMap key `key`, read by `read`; kInvalid naming the key and the first
// field that is wrong ("routing.json: tables[1].to[0].fraction: must be in [0, 1], got 2").
// Fields it does not know are left alone: an older router reads what a newer operator wrote.
template <typename T, typename Read>
Result<T> ReadDocument(std::string_view key, std::string_view text, Read read) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  std::vector<FieldError> errors;
  Reader r(errors);
  PlanParts parts(r, /*report_unknown=*/false);
  T out{};
  if (doc.is_object()) {
    read(r, parts, doc, out);
  } else {
    r.Fail("", "must be a JSON object");
  }
  if (!errors.empty())
    return Error{ErrorKind::kInvalid, std::string(key) + ": " + errors[0].ToString()};
  return out;
}

}  // namespace

Result<std::vector<RouterBatch>> ParseBatching(std::string_view text) {
  return ReadDocument<std::vector<RouterBatch>>(
      kBatchingKey, text,
      [](Reader&, PlanParts& parts, const json& doc, std::vector<RouterBatch>& out) {
        parts.ForEachObject(doc, "batches", "", [&](const json& b, const std::string& at) {
          out.push_back(parts.Batch(b, at));
        });
      });
}

Result<PoolsRouting> ParsePoolsRouting(std::string_view text) {
  return ReadDocument<PoolsRouting>(
      kPoolsRoutingKey, text, [](Reader&, PlanParts& parts, const json& doc, PoolsRouting& out) {
        out.optimizer = parts.Text(doc, "optimizer", "");
        parts.ForEachObject(doc, "pools", "", [&](const json& p, const std::string& at) {
          out.plan.pools.push_back(parts.Pool(p, at));
        });
      });
}

Result<model::AccuracyScalingPlan> ParseLokiRouting(std::string_view text) {
  return ReadDocument<model::AccuracyScalingPlan>(
      kLokiRoutingKey, text,
      [](Reader&, PlanParts& parts, const json& doc, model::AccuracyScalingPlan& plan) {
        plan.phase = parts.Phase(doc, "phase", "", true).value_or(plan.phase);
        parts.ForEachObject(doc, "tables", "", [&](const json& t, const std::string& at) {
          plan.routing.push_back(parts.Table(t, at));
        });
        parts.ForEachObject(doc, "backups", "", [&](const json& b, const std::string& at) {
          plan.backups.push_back(parts.Backup(b, at));
        });
        // "budgetsMs", which older operators wrote and no router read, is left alone with every
        // other key it does not know.
      });
}

}  // namespace pipescale::api
