// Reading a plan's parts back from JSON (Loki's phase, tables and backups, Kairos's and MArk's
// pools, the batches the router forms), for both places a plan is read: the routing ConfigMap
// (routing_parse.h, which refuses a document with any problem) and the status (status_json.h,
// which drops what is wrong and keeps the rest). One reader per part, so that both read it
// alike and report a bad field the same way (api::Reader). Internal to api/.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

#include "api/field_reader.h"
#include "api/plan_json.h"
#include "model/limits.h"
#include "model/plan.h"

namespace pipescale::api {

inline constexpr Range kFractionRange{.min = 0, .max = 1, .words = "in [0, 1]"};
inline constexpr Range kPlanRateRange{.min = 0, .max = limits::kMaxMagnitude};
inline constexpr Range kPlanMsRange{.min = 0, .max = limits::kMaxMs};

class PlanParts {
 public:
  // `report_unknown`: whether a field a part does not know is a problem (the status, which one
  // operator writes and reads) or left alone (the routing ConfigMap: an older router reads
  // what a newer operator wrote).
  PlanParts(Reader& r, bool report_unknown) : r_(r), report_unknown_(report_unknown) {}

  // A required string that is not empty; "" after recording why.
  std::string Text(const nlohmann::json& object, const char* key, const std::string& path);

  // Calls read(item, item_path) for each object of the list at `key` (absent: none; longer
  // than limits::kMaxPlanItems: reported and not read).
  template <typename Read>
  void ForEachObject(const nlohmann::json& object, const char* key, const std::string& path,
                     Read read) {
    const nlohmann::json* items = r_.Array(object, key, path, false, limits::kMaxPlanItems);
    if (items == nullptr) return;
    for (size_t i = 0; i < items->size(); ++i) {
      const std::string at = Reader::At(Reader::At(path, key), i);
      if ((*items)[i].is_object()) {
        read((*items)[i], at);
      } else {
        r_.Fail(at, "must be an object");
      }
    }
  }

  // Loki's phase at `key`; nullopt after recording why when it is not one.
  std::optional<model::Phase> Phase(const nlohmann::json& object, const char* key,
                                    const std::string& path, bool required);
  model::VariantRoute Table(const nlohmann::json& t, const std::string& path);
  model::BackupWorker Backup(const nlohmann::json& b, const std::string& path);
  model::Pool Pool(const nlohmann::json& p, const std::string& path);
  RouterBatch Batch(const nlohmann::json& b, const std::string& path);

 private:
  model::PoolMember Member(const nlohmann::json& m, const std::string& path);
  int Count(const nlohmann::json& object, const char* key, const std::string& path, int low,
            int high);
  void Known(const nlohmann::json& object, const std::string& path,
             std::initializer_list<const char*> keys);

  Reader& r_;
  bool report_unknown_;
};

}  // namespace pipescale::api
