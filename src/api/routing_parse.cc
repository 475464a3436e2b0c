#include "api/routing_parse.h"

#include <nlohmann/json.hpp>

#include "api/deployment.h"
#include "api/field_reader.h"

namespace pipescale::api {
namespace {

using nlohmann::json;

constexpr Range kFractionRange{.min = 0, .max = 1, .words = "in [0, 1]"};
constexpr Range kRateRange{.min = 0, .max = 1e12};
constexpr Range kMsRange{.min = 0, .max = 3'600'000};
constexpr std::int64_t kMaxCount = 1'000'000;
constexpr size_t kMaxItems = 100'000;  // tables, pools, members or batches: far beyond any plan

// A required string that is not empty; "" after recording why.
std::string Text(Reader& r, const json& object, const char* key, const std::string& path) {
  std::optional<std::string> text = r.String(object, key, path, true);
  if (text && text->empty()) r.Fail(Reader::At(path, key), "must be a non-empty string");
  return text.value_or("");
}

// Calls `read(item, item_path)` for each object of the list at `key` (absent: none).
template <typename Read>
void ForEachObject(Reader& r, const json& object, const char* key, const std::string& path,
                   Read read) {
  const json* items = r.Array(object, key, path, false, kMaxItems);
  if (items == nullptr) return;
  for (size_t i = 0; i < items->size(); ++i) {
    const std::string at = Reader::At(Reader::At(path, key), i);
    if ((*items)[i].is_object()) {
      read((*items)[i], at);
    } else {
      r.Fail(at, "must be an object");
    }
  }
}

int Count(Reader& r, const json& object, const char* key, const std::string& path, int low) {
  return static_cast<int>(r.Integer(object, key, path, true, low, kMaxCount).value_or(low));
}

model::RoutingTable Table(Reader& r, const json& t, const std::string& path) {
  model::RoutingTable table{.path = Text(r, t, "path", path), .task = Text(r, t, "task", path)};
  table.from_variant = r.String(t, "from", path, false).value_or("");
  ForEachObject(r, t, "to", path, [&](const json& to, const std::string& at) {
    table.to.emplace_back(Text(r, to, "variant", at),
                          r.Number(to, "fraction", at, true, kFractionRange).value_or(0));
  });
  return table;
}

model::BackupWorker Backup(Reader& r, const json& b, const std::string& path) {
  return {Text(r, b, "task", path), Text(r, b, "variant", path),
          r.Number(b, "spareRps", path, true, kRateRange).value_or(0)};
}

model::PoolMember Member(Reader& r, const json& m, const std::string& path) {
  return {.hardware_class = Text(r, m, "hardwareClass", path),
          .replicas = Count(r, m, "replicas", path, 0),
          .max_query = Count(r, m, "maxQuery", path, 1),
          .coefficient = r.Number(m, "coefficient", path, true, kFractionRange).value_or(0),
          .capacity_rps = r.Number(m, "capacityRps", path, true, kRateRange).value_or(0)};
}

model::Pool Pool(Reader& r, const json& p, const std::string& path) {
  model::Pool pool{.task = Text(r, p, "task", path),
                   .qos_ms = r.Number(p, "qosMs", path, true, kMsRange).value_or(0)};
  ForEachObject(r, p, "members", path, [&](const json& m, const std::string& at) {
    pool.members.push_back(Member(r, m, at));
  });
  if (p.contains("spillClass")) pool.spill_class = Text(r, p, "spillClass", path);
  pool.upper_bound_qps = r.Number(p, "upperBoundQps", path, false, kRateRange).value_or(0);
  return pool;
}

RouterBatch Batch(Reader& r, const json& b, const std::string& path) {
  return {Text(r, b, "task", path), Text(r, b, "variant", path), Count(r, b, "batchSize", path, 1),
          r.Number(b, "waitMs", path, true, kMsRange).value_or(0)};
}

// The document under ConfigMap key `key`, read by `read`; kInvalid naming the key and the first
// field that is wrong ("routing.json: tables[1].to[0].fraction: must be in [0, 1], got 2").
// Fields it does not know are left alone: an older router reads what a newer operator wrote.
template <typename T, typename Read>
Result<T> ReadDocument(std::string_view key, std::string_view text, Read read) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  std::vector<FieldError> errors;
  Reader r(errors);
  T out{};
  if (doc.is_object()) {
    read(r, doc, out);
  } else {
    r.Fail("", "must be a JSON object");
  }
  if (!errors.empty())
    return Error{ErrorKind::kInvalid, std::string(key) + ": " + errors[0].ToString()};
  return out;
}

void ReadPhase(Reader& r, const json& doc, model::AccuracyScalingPlan& plan) {
  const std::string phase = r.String(doc, "phase", "", true).value_or("");
  for (auto p : {model::Phase::kHardwareScaling, model::Phase::kAccuracyScaling,
                 model::Phase::kOverloaded}) {
    if (phase == model::PhaseName(p)) {
      plan.phase = p;
      return;
    }
  }
  r.Fail("phase", "must be HardwareScaling, AccuracyScaling or Overloaded");
}

}  // namespace

Result<std::vector<RouterBatch>> ParseBatching(std::string_view text) {
  return ReadDocument<std::vector<RouterBatch>>(
      kBatchingKey, text, [](Reader& r, const json& doc, std::vector<RouterBatch>& out) {
        ForEachObject(r, doc, "batches", "", [&](const json& b, const std::string& at) {
          out.push_back(Batch(r, b, at));
        });
      });
}

Result<PoolsRouting> ParsePoolsRouting(std::string_view text) {
  return ReadDocument<PoolsRouting>(
      kPoolsRoutingKey, text, [](Reader& r, const json& doc, PoolsRouting& out) {
        out.optimizer = Text(r, doc, "optimizer", "");
        ForEachObject(r, doc, "pools", "", [&](const json& p, const std::string& at) {
          out.plan.pools.push_back(Pool(r, p, at));
        });
      });
}

Result<model::AccuracyScalingPlan> ParseLokiRouting(std::string_view text) {
  return ReadDocument<model::AccuracyScalingPlan>(
      kLokiRoutingKey, text, [](Reader& r, const json& doc, model::AccuracyScalingPlan& plan) {
        ReadPhase(r, doc, plan);
        ForEachObject(r, doc, "tables", "", [&](const json& t, const std::string& at) {
          plan.routing.push_back(Table(r, t, at));
        });
        ForEachObject(r, doc, "backups", "", [&](const json& b, const std::string& at) {
          plan.backups.push_back(Backup(r, b, at));
        });
        // "budgetsMs", which older operators wrote and no router read, is left alone with every
        // other key it does not know.
      });
}

}  // namespace pipescale::api
