#include "model/pipeline.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "common/check.h"

namespace pipescale::model {

PassThroughJson::PassThroughJson(nlohmann::json value)
    : value_(std::make_shared<const nlohmann::json>(std::move(value))) {}

const nlohmann::json& PassThroughJson::get() const {
  static const nlohmann::json kNone;
  return value_ != nullptr ? *value_ : kNone;
}

bool PassThroughJson::operator==(const PassThroughJson& other) const {
  return value_ == other.value_ || get() == other.get();
}

const Variant* Task::FindVariant(const std::string& variant_name) const {
  for (const Variant& v : variants) {
    if (v.name == variant_name) return &v;
  }
  return nullptr;
}

const Profile* Variant::FindProfile(const std::string& hardware_class) const {
  for (const Profile& p : profiles) {
    if (p.hardware_class == hardware_class) return &p;
  }
  return nullptr;
}

const Variant& Task::MostAccurateVariant() const {
  PIPESCALE_CHECK(!variants.empty());
  const Variant* best = &variants.front();
  for (const Variant& v : variants) {
    if (v.accuracy > best->accuracy) best = &v;
  }
  return *best;
}

int Pipeline::TaskIndex(const std::string& task) const {
  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    if (spec.tasks[i].name == task) return static_cast<int>(i);
  }
  return -1;
}

const Variant* Pipeline::FindVariant(const std::string& task, const std::string& variant) const {
  const int t = TaskIndex(task);
  return t < 0 ? nullptr : spec.tasks[t].FindVariant(variant);
}

bool Pipeline::RouterBatches() const {
  for (const Task& t : spec.tasks) {
    for (const Variant& v : t.variants) {
      if (v.RouterBatches()) return true;
    }
  }
  return false;
}

double Pipeline::ColdHoldMs(size_t path) const {
  if (path >= spec.paths.size()) return 0;
  if (spec.scale_to_zero && spec.scale_to_zero->hold_seconds > 0) {
    return 1000 * spec.scale_to_zero->hold_seconds;
  }
  return 1000 * WakeSeconds(path) + spec.paths[path].slo_ms;
}

double RouterFinishSeconds(double longest_hold_ms) {
  return std::max(20.0, std::ceil(longest_hold_ms / 1000) + 1);
}

double Pipeline::LongestColdHoldMs() const {
  double longest = 0;
  for (size_t p = 0; p < spec.paths.size(); ++p) longest = std::max(longest, ColdHoldMs(p));
  return longest;
}

double Pipeline::RouterFinishSeconds() const {
  return model::RouterFinishSeconds(LongestColdHoldMs());
}

double Pipeline::WakeSeconds(size_t path) const {
  const auto on_path = [&](const Task& task) {
    if (path >= spec.paths.size()) return true;  // every task's
    const std::vector<std::string>& tasks = spec.paths[path].tasks;
    return std::ranges::find(tasks, task.name) != tasks.end();
  };
  double startup = 0;
  for (const Task& task : spec.tasks) {
    if (!on_path(task)) continue;
    for (const Variant& v : task.variants) {
      for (const Profile& p : v.profiles) {
        if (const int c = HardwareClassIndex(p.hardware_class); c >= 0) {
          startup = std::max(startup, spec.hardware_classes[c].startup_seconds);
        }
      }
    }
  }
  return startup + kWakeAllowanceSeconds;
}

int Pipeline::HardwareClassIndex(const std::string& hardware_class) const {
  for (size_t i = 0; i < spec.hardware_classes.size(); ++i) {
    if (spec.hardware_classes[i].name == hardware_class) return static_cast<int>(i);
  }
  return -1;
}

std::optional<DropPolicy> ParseDropPolicy(std::string_view name) {
  for (const auto& [policy, n] : kDropPolicyNames) {
    if (name == n) return policy;
  }
  return std::nullopt;
}

}  // namespace pipescale::model
