#include "api/pipeline_parse.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "api/document.h"
#include "optimizer/fit.h"
#include "optimizer/solve.h"

namespace pipescale::api {
namespace {

using nlohmann::json;

constexpr int kDefaultMaxBatch = 32;
constexpr int kLargestMaxBatch = 4096;

std::string Quote(const std::string& s) { return "\"" + s + "\""; }

std::string Join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

std::string Num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// Typed access to a JSON object that records a FieldError for every problem it meets.
class Reader {
 public:
  explicit Reader(std::vector<FieldError>& errors) : errors_(errors) {}

  void Fail(std::string path, std::string message) {
    errors_.push_back({std::move(path), std::move(message)});
  }

  static std::string At(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }
  static std::string At(const std::string& path, size_t index) {
    return path + "[" + std::to_string(index) + "]";
  }

  // Unknown keys are errors: a typo such as `sloms` must not silently mean "no SLO".
  void OnlyKnown(const json& object, const std::string& path,
                 std::initializer_list<const char*> known) {
    for (const auto& [key, value] : object.items()) {
      if (std::none_of(known.begin(), known.end(), [&](const char* k) { return key == k; })) {
        std::vector<std::string> names(known.begin(), known.end());
        Fail(At(path, key), "unknown field; known fields: " + Join(names, ", "));
      }
    }
  }

  const json* Get(const json& object, const char* key, const std::string& path, bool required) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) {
      if (required) Fail(At(path, key), "required");
      return nullptr;
    }
    return &*it;
  }

  const json* Object(const json& object, const char* key, const std::string& path, bool required) {
    const json* v = Get(object, key, path, required);
    if (v != nullptr && !v->is_object()) {
      Fail(At(path, key), "must be an object");
      return nullptr;
    }
    return v;
  }

  const json* Array(const json& object, const char* key, const std::string& path, bool required) {
    const json* v = Get(object, key, path, required);
    if (v != nullptr && !v->is_array()) {
      Fail(At(path, key), "must be a list");
      return nullptr;
    }
    return v;
  }

  std::optional<std::string> String(const json& object, const char* key, const std::string& path,
                                    bool required) {
    const json* v = Get(object, key, path, required);
    if (v == nullptr) return std::nullopt;
    if (!v->is_string()) {
      Fail(At(path, key), "must be a string");
      return std::nullopt;
    }
    return v->get<std::string>();
  }

  std::optional<double> Number(const json& object, const char* key, const std::string& path,
                               bool required) {
    const json* v = Get(object, key, path, required);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number()) {
      Fail(At(path, key), "must be a number");
      return std::nullopt;
    }
    const double d = v->get<double>();
    if (!std::isfinite(d)) {
      Fail(At(path, key), "must be finite");
      return std::nullopt;
    }
    return d;
  }

  std::optional<std::int64_t> Integer(const json& object, const char* key, const std::string& path,
                                      bool required) {
    const json* v = Get(object, key, path, required);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number_integer()) {
      Fail(At(path, key), "must be an integer");
      return std::nullopt;
    }
    return v->get<std::int64_t>();
  }

  // A number that must be > 0 (strictly) or >= 0.
  std::optional<double> Positive(const json& object, const char* key, const std::string& path,
                                 bool required, bool allow_zero = false) {
    auto v = Number(object, key, path, required);
    if (v && (*v < 0 || (*v == 0 && !allow_zero))) {
      Fail(At(path, key),
           "must be " + std::string(allow_zero ? ">= 0" : "> 0") + ", got " + Num(*v));
      return std::nullopt;
    }
    return v;
  }

  // "10s", "5m", "1h", "250ms", or a number of seconds.
  std::optional<double> Duration(const json& object, const char* key, const std::string& path) {
    const json* v = Get(object, key, path, false);
    if (v == nullptr) return std::nullopt;
    if (v->is_number()) {
      if (v->get<double>() <= 0) {
        Fail(At(path, key), "must be a positive duration");
        return std::nullopt;
      }
      return v->get<double>();
    }
    static const std::regex kDuration(R"(([0-9]+(\.[0-9]+)?)(ms|s|m|h))");
    std::smatch m;
    const std::string s = v->is_string() ? v->get<std::string>() : "";
    if (!std::regex_match(s, m, kDuration)) {
      Fail(At(path, key), "must be a duration such as 500ms, 10s, 5m or 1h");
      return std::nullopt;
    }
    const double n = std::stod(m[1].str());
    const std::string unit = m[3].str();
    const double seconds = unit == "ms"  ? n / 1000
                           : unit == "s" ? n
                           : unit == "m" ? n * 60
                                         : n * 3600;
    if (seconds <= 0) {
      Fail(At(path, key), "must be a positive duration");
      return std::nullopt;
    }
    return seconds;
  }

  // Maps of string-like scalars (resource quantities, node selectors).
  std::map<std::string, std::string> StringMap(const json& object, const char* key,
                                               const std::string& path) {
    std::map<std::string, std::string> out;
    const json* v = Object(object, key, path, false);
    if (v == nullptr) return out;
    for (const auto& [k, value] : v->items()) {
      if (value.is_string()) {
        out[k] = value.get<std::string>();
      } else if (value.is_number()) {
        out[k] = value.dump();
      } else {
        Fail(At(At(path, key), k), "must be a string or a number");
      }
    }
    return out;
  }

 private:
  std::vector<FieldError>& errors_;
};

bool IsDnsLabel(const std::string& s) {
  static const std::regex kLabel("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  return s.size() <= 63 && std::regex_match(s, kLabel);
}

// Names become parts of Deployment names, so they must be DNS labels.
std::optional<std::string> Name(Reader& r, const json& object, const std::string& path) {
  auto name = r.String(object, "name", path, true);
  if (name && !IsDnsLabel(*name)) {
    r.Fail(Reader::At(path, "name"),
           Quote(*name) +
               " is not a valid name: use lower-case letters, digits and '-', "
               "at most 63 characters");
    return std::nullopt;
  }
  return name;
}

void ParseHardwareClasses(Reader& r, const json& spec, model::PipelineSpec& out) {
  const json* classes = r.Array(spec, "hardwareClasses", "spec", true);
  if (classes == nullptr) return;
  if (classes->empty()) r.Fail("spec.hardwareClasses", "needs at least one hardware class");
  std::set<std::string> seen;
  for (size_t i = 0; i < classes->size(); ++i) {
    const std::string path = Reader::At("spec.hardwareClasses", i);
    const json& c = (*classes)[i];
    if (!c.is_object()) {
      r.Fail(path, "must be an object");
      continue;
    }
    r.OnlyKnown(c, path,
                {"name", "resources", "nodeSelector", "tolerations", "costPerHour",
                 "startupSeconds", "maxReplicas", "burst"});
    model::HardwareClass hw;
    if (auto name = Name(r, c, path)) {
      if (!seen.insert(*name).second)
        r.Fail(Reader::At(path, "name"), "duplicate hardware class " + Quote(*name));
      hw.name = *name;
    }
    if (const json* res = r.Object(c, "resources", path, false)) {
      const std::string rpath = Reader::At(path, "resources");
      r.OnlyKnown(*res, rpath, {"requests", "limits"});
      hw.requests = r.StringMap(*res, "requests", rpath);
      hw.limits = r.StringMap(*res, "limits", rpath);
    }
    hw.node_selector = r.StringMap(c, "nodeSelector", path);
    if (const json* t = r.Array(c, "tolerations", path, false)) hw.tolerations_json = t->dump();
    if (auto v = r.Positive(c, "costPerHour", path, false, true)) hw.cost_per_hour = *v;
    if (auto v = r.Positive(c, "startupSeconds", path, false, true)) hw.startup_seconds = *v;
    if (auto v = r.Integer(c, "maxReplicas", path, false)) {
      if (*v < 1) {
        r.Fail(Reader::At(path, "maxReplicas"), "must be >= 1, got " + std::to_string(*v));
      } else {
        hw.max_replicas = static_cast<int>(*v);
      }
    }
    if (const json* burst = r.Object(c, "burst", path, false)) {
      const std::string bpath = Reader::At(path, "burst");
      r.OnlyKnown(*burst, bpath, {"minWarm"});
      hw.burst_min_warm = 1;
      if (auto v = r.Integer(*burst, "minWarm", bpath, false)) {
        if (*v < 0) {
          r.Fail(Reader::At(bpath, "minWarm"), "must be >= 0, got " + std::to_string(*v));
        } else {
          hw.burst_min_warm = static_cast<int>(*v);
        }
      }
    }
    out.hardware_classes.push_back(std::move(hw));
  }
}

// latencyMs: {quadratic: {a, b, c}} or {points: [[batch, ms], ...], model: quadratic|table}.
std::optional<model::LatencyProfile> ParseLatency(Reader& r, const json& profile,
                                                  const std::string& ppath, int max_batch) {
  const json* lat = r.Object(profile, "latencyMs", ppath, true);
  if (lat == nullptr) return std::nullopt;
  const std::string path = Reader::At(ppath, "latencyMs");
  r.OnlyKnown(*lat, path, {"quadratic", "points", "model"});
  const bool has_quadratic = lat->contains("quadratic");
  const bool has_points = lat->contains("points");
  if (has_quadratic == has_points) {
    r.Fail(path, "give exactly one of quadratic {a, b, c} or points [[batch, ms], ...]");
    return std::nullopt;
  }

  model::LatencyProfile out;
  if (has_quadratic) {
    const json* q = r.Object(*lat, "quadratic", path, true);
    if (q == nullptr) return std::nullopt;
    const std::string qpath = Reader::At(path, "quadratic");
    r.OnlyKnown(*q, qpath, {"a", "b", "c"});
    auto a = r.Number(*q, "a", qpath, false);
    auto b = r.Number(*q, "b", qpath, false);
    auto c = r.Number(*q, "c", qpath, false);
    out.kind = model::LatencyProfile::Kind::kQuadratic;
    out.quadratic = {.a = a.value_or(0), .b = b.value_or(0), .c = c.value_or(0)};
  } else {
    const json* pts = r.Array(*lat, "points", path, true);
    if (pts == nullptr) return std::nullopt;
    const std::string ppts = Reader::At(path, "points");
    if (pts->empty()) {
      r.Fail(ppts, "needs at least one [batch, ms] point");
      return std::nullopt;
    }
    std::set<int> batches;
    bool ok = true;
    for (size_t i = 0; i < pts->size(); ++i) {
      const json& p = (*pts)[i];
      const std::string at = Reader::At(ppts, i);
      if (!p.is_array() || p.size() != 2 || !p[0].is_number_integer() || !p[1].is_number()) {
        r.Fail(at, "must be [batch, ms] with an integer batch");
        ok = false;
        continue;
      }
      const std::int64_t batch = p[0].get<std::int64_t>();
      const double ms = p[1].get<double>();
      if (batch < 1) {
        r.Fail(at, "batch must be >= 1, got " + std::to_string(batch));
        ok = false;
      } else if (!(ms > 0) || !std::isfinite(ms)) {
        r.Fail(at, "latency must be > 0 ms, got " + Num(ms));
        ok = false;
      } else if (!batches.insert(static_cast<int>(batch)).second) {
        r.Fail(at, "batch " + std::to_string(batch) + " appears twice");
        ok = false;
      } else {
        out.points.push_back({static_cast<int>(batch), ms});
      }
    }
    if (!ok) return std::nullopt;
    std::sort(out.points.begin(), out.points.end(),
              [](const auto& x, const auto& y) { return x.batch < y.batch; });
    // Default: a quadratic where three or more batch sizes determine one, else the table.
    std::string kind = batches.size() >= 3 ? "quadratic" : "table";
    if (auto m = r.String(*lat, "model", path, false)) kind = *m;
    if (kind == "table") {
      out.kind = model::LatencyProfile::Kind::kTable;
    } else if (kind == "quadratic") {
      auto fit = optimizer::FitQuadratic(out.points);
      if (!fit) {
        r.Fail(ppts, fit.error().message + "; add points or set model: table");
        return std::nullopt;
      }
      out.kind = model::LatencyProfile::Kind::kQuadratic;
      out.quadratic = fit->coefficients;
      out.fitted = true;
      out.fit = fit->quality;
    } else {
      r.Fail(Reader::At(path, "model"), "must be quadratic or table, got " + Quote(kind));
      return std::nullopt;
    }
  }
  // Every batch size the optimizers may pick must have a positive latency.
  const int top = out.MaxBatch(max_batch);
  for (int b = 1; b <= top; ++b) {
    if (!(out.Ms(b) > 0)) {
      r.Fail(path, "latency at batch size " + std::to_string(b) + " is " + Num(out.Ms(b)) +
                       " ms; it must be > 0 for every batch size up to " + std::to_string(top));
      return std::nullopt;
    }
  }
  return out;
}

model::Variant ParseVariant(Reader& r, const json& v, const std::string& path,
                            const std::set<std::string>& classes) {
  model::Variant out;
  r.OnlyKnown(v, path,
              {"name", "accuracy", "multiplicativeFactor", "template", "deploymentName",
               "batchSize", "profiles"});
  if (auto name = Name(r, v, path)) out.name = *name;
  if (auto a = r.Number(v, "accuracy", path, false)) {
    if (*a <= 0 || *a > 1) {
      r.Fail(Reader::At(path, "accuracy"), "must be in (0, 1], got " + Num(*a));
    } else {
      out.accuracy = *a;
    }
  }
  if (auto m = r.Positive(v, "multiplicativeFactor", path, false)) out.multiplicative_factor = *m;
  if (const json* t = r.Object(v, "template", path, false)) out.template_json = t->dump();
  if (auto d = r.String(v, "deploymentName", path, false)) out.deployment_name = *d;
  out.max_batch = kDefaultMaxBatch;
  if (const json* bs = r.Object(v, "batchSize", path, false)) {
    const std::string bpath = Reader::At(path, "batchSize");
    r.OnlyKnown(*bs, bpath, {"env", "max"});
    if (auto env = r.String(*bs, "env", bpath, false)) out.batch_env = *env;
    if (auto max = r.Integer(*bs, "max", bpath, false)) {
      if (*max < 1 || *max > kLargestMaxBatch) {
        r.Fail(Reader::At(bpath, "max"), "must be in [1, " + std::to_string(kLargestMaxBatch) +
                                             "], got " + std::to_string(*max));
      } else {
        out.max_batch = static_cast<int>(*max);
      }
    }
  }
  const json* profiles = r.Array(v, "profiles", path, true);
  if (profiles == nullptr) return out;
  const std::string ppath = Reader::At(path, "profiles");
  if (profiles->empty()) {
    r.Fail(ppath, "no latency profile; add one per hardware class the variant may run on");
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < profiles->size(); ++i) {
    const std::string at = Reader::At(ppath, i);
    const json& p = (*profiles)[i];
    if (!p.is_object()) {
      r.Fail(at, "must be an object");
      continue;
    }
    r.OnlyKnown(p, at, {"hardwareClass", "latencyMs"});
    model::Profile profile;
    if (auto hw = r.String(p, "hardwareClass", at, true)) {
      if (!classes.contains(*hw)) {
        r.Fail(Reader::At(at, "hardwareClass"), "unknown hardware class " + Quote(*hw));
      } else if (!seen.insert(*hw).second) {
        r.Fail(Reader::At(at, "hardwareClass"), "second profile for hardware class " + Quote(*hw));
      }
      profile.hardware_class = *hw;
    }
    if (auto latency = ParseLatency(r, p, at, out.max_batch)) {
      profile.latency = std::move(*latency);
      out.profiles.push_back(std::move(profile));
    }
  }
  return out;
}

void ParseTasks(Reader& r, const json& spec, model::PipelineSpec& out) {
  const json* tasks = r.Array(spec, "tasks", "spec", true);
  if (tasks == nullptr) return;
  if (tasks->empty()) r.Fail("spec.tasks", "needs at least one task");
  std::set<std::string> classes;
  for (const auto& hw : out.hardware_classes) classes.insert(hw.name);

  std::set<std::string> names;
  for (const json& t : *tasks) {
    if (t.is_object() && t.contains("name") && t["name"].is_string()) {
      names.insert(t["name"].get<std::string>());
    }
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < tasks->size(); ++i) {
    const std::string path = Reader::At("spec.tasks", i);
    const json& t = (*tasks)[i];
    if (!t.is_object()) {
      r.Fail(path, "must be an object");
      continue;
    }
    r.OnlyKnown(t, path, {"name", "next", "variants"});
    model::Task task;
    if (auto name = Name(r, t, path)) {
      if (!seen.insert(*name).second)
        r.Fail(Reader::At(path, "name"), "duplicate task " + Quote(*name));
      task.name = *name;
    }
    if (const json* next = r.Array(t, "next", path, false)) {
      std::set<std::string> targets;
      for (size_t j = 0; j < next->size(); ++j) {
        const std::string at = Reader::At(Reader::At(path, "next"), j);
        const json& e = (*next)[j];
        if (!e.is_object()) {
          r.Fail(at, "must be an object {task, ratio}");
          continue;
        }
        r.OnlyKnown(e, at, {"task", "ratio"});
        model::Edge edge;
        if (auto to = r.String(e, "task", at, true)) {
          if (!names.contains(*to)) {
            r.Fail(Reader::At(at, "task"), "unknown task " + Quote(*to));
          } else if (*to == task.name) {
            r.Fail(Reader::At(at, "task"), "a task cannot feed itself");
          } else if (!targets.insert(*to).second) {
            r.Fail(Reader::At(at, "task"), "second edge to " + Quote(*to));
          } else {
            edge.task = *to;
            if (auto ratio = r.Positive(e, "ratio", at, false)) edge.ratio = *ratio;
            task.next.push_back(std::move(edge));
          }
        }
      }
    }
    const json* variants = r.Array(t, "variants", path, true);
    if (variants != nullptr) {
      if (variants->empty()) r.Fail(Reader::At(path, "variants"), "needs at least one variant");
      std::set<std::string> vnames;
      for (size_t j = 0; j < variants->size(); ++j) {
        const std::string at = Reader::At(Reader::At(path, "variants"), j);
        if (!(*variants)[j].is_object()) {
          r.Fail(at, "must be an object");
          continue;
        }
        model::Variant v = ParseVariant(r, (*variants)[j], at, classes);
        if (!v.name.empty() && !vnames.insert(v.name).second) {
          r.Fail(Reader::At(at, "name"), "duplicate variant " + Quote(v.name));
        }
        task.variants.push_back(std::move(v));
      }
    }
    out.tasks.push_back(std::move(task));
  }
}

// Reports one cycle per strongly connected knot, at the edge that closes it.
void CheckAcyclic(Reader& r, const model::PipelineSpec& spec) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < spec.tasks.size(); ++i) index[spec.tasks[i].name] = i;
  std::vector<int> color(spec.tasks.size(), 0);  // 0 new, 1 on stack, 2 done
  std::vector<std::string> stack;
  std::function<bool(size_t)> visit = [&](size_t u) {
    color[u] = 1;
    stack.push_back(spec.tasks[u].name);
    for (size_t j = 0; j < spec.tasks[u].next.size(); ++j) {
      auto it = index.find(spec.tasks[u].next[j].task);
      if (it == index.end()) continue;
      const size_t v = it->second;
      if (color[v] == 1) {
        auto from = std::find(stack.begin(), stack.end(), spec.tasks[v].name);
        std::vector<std::string> cycle(from, stack.end());
        cycle.push_back(spec.tasks[v].name);
        r.Fail(Reader::At(Reader::At(Reader::At("spec.tasks", u), "next"), j),
               "edge closes a cycle: " + Join(cycle, " -> "));
        return true;
      }
      if (color[v] == 0 && visit(v)) return true;
    }
    stack.pop_back();
    color[u] = 2;
    return false;
  };
  for (size_t u = 0; u < spec.tasks.size(); ++u) {
    if (color[u] == 0 && visit(u)) return;
  }
}

void ParsePaths(Reader& r, const json& spec, model::PipelineSpec& out) {
  const json* paths = r.Array(spec, "paths", "spec", false);
  if (paths == nullptr) return;
  std::map<std::string, const model::Task*> tasks;
  for (const auto& t : out.tasks) tasks[t.name] = &t;
  std::set<std::string> seen;
  for (size_t i = 0; i < paths->size(); ++i) {
    const std::string path = Reader::At("spec.paths", i);
    const json& p = (*paths)[i];
    if (!p.is_object()) {
      r.Fail(path, "must be an object");
      continue;
    }
    r.OnlyKnown(p, path, {"name", "tasks", "sloMs", "weight"});
    model::Path out_path;
    if (auto name = Name(r, p, path)) {
      if (!seen.insert(*name).second)
        r.Fail(Reader::At(path, "name"), "duplicate path " + Quote(*name));
      out_path.name = *name;
    }
    if (auto slo = r.Positive(p, "sloMs", path, true)) out_path.slo_ms = *slo;
    if (auto w = r.Positive(p, "weight", path, false)) out_path.weight = *w;
    const json* list = r.Array(p, "tasks", path, true);
    if (list != nullptr) {
      const std::string tpath = Reader::At(path, "tasks");
      if (list->empty()) r.Fail(tpath, "needs at least one task");
      std::set<std::string> visited;
      for (size_t j = 0; j < list->size(); ++j) {
        const std::string at = Reader::At(tpath, j);
        if (!(*list)[j].is_string()) {
          r.Fail(at, "must be a task name");
          continue;
        }
        const std::string name = (*list)[j].get<std::string>();
        if (!tasks.contains(name)) {
          r.Fail(at, "unknown task " + Quote(name));
        } else if (!visited.insert(name).second) {
          r.Fail(at, "task " + Quote(name) + " appears twice on the path");
        } else if (j > 0 && tasks.contains(out_path.tasks.back())) {
          const model::Task& prev = *tasks.at(out_path.tasks.back());
          const bool edge = std::any_of(prev.next.begin(), prev.next.end(),
                                        [&](const model::Edge& e) { return e.task == name; });
          if (!edge) {
            r.Fail(at, "task " + Quote(name) + " does not follow " + Quote(prev.name) +
                           ": no edge " + prev.name + " -> " + name + " in spec.tasks");
          }
        }
        out_path.tasks.push_back(name);
      }
    }
    out.paths.push_back(std::move(out_path));
  }
}

template <typename Enum>
std::optional<Enum> ParseEnum(Reader& r, const json& object, const char* key,
                              const std::string& path,
                              const std::vector<std::pair<const char*, Enum>>& values) {
  auto s = r.String(object, key, path, false);
  if (!s) return std::nullopt;
  for (const auto& [name, value] : values) {
    if (*s == name) return value;
  }
  std::vector<std::string> names;
  for (const auto& [name, value] : values) names.emplace_back(name);
  r.Fail(Reader::At(path, key), "must be one of " + Join(names, ", ") + ", got " + Quote(*s));
  return std::nullopt;
}

void ParseSettings(Reader& r, const json& spec, model::PipelineSpec& out) {
  using model::ForecastMethod;
  using model::Mode;
  using model::OptimizerKind;
  if (auto o = ParseEnum<OptimizerKind>(r, spec, "optimizer", "spec",
                                        {{"fa2", OptimizerKind::kFa2},
                                         {"loki", OptimizerKind::kLoki},
                                         {"kairos", OptimizerKind::kKairos},
                                         {"mark", OptimizerKind::kMark}})) {
    out.optimizer = *o;
  }
  if (auto m = ParseEnum<Mode>(r, spec, "mode", "spec",
                               {{"Apply", Mode::kApply}, {"Recommend", Mode::kRecommend}})) {
    out.mode = *m;
  }
  if (auto i = r.Duration(spec, "interval", "spec")) out.interval_seconds = *i;

  if (const json* slo = r.Object(spec, "slo", "spec", false)) {
    r.OnlyKnown(*slo, "spec.slo", {"latencyMs", "percentile"});
    if (auto l = r.Positive(*slo, "latencyMs", "spec.slo", false)) out.slo.latency_ms = *l;
    if (auto p = r.Positive(*slo, "percentile", "spec.slo", false)) {
      if (*p > 100) {
        r.Fail("spec.slo.percentile", "must be in (0, 100], got " + Num(*p));
      } else {
        out.slo.percentile = *p;
      }
    }
  }
  if (const json* budget = r.Object(spec, "budget", "spec", false)) {
    r.OnlyKnown(*budget, "spec.budget", {"maxReplicas", "costPerHour"});
    if (auto m = r.Integer(*budget, "maxReplicas", "spec.budget", false)) {
      if (*m < 1) {
        r.Fail("spec.budget.maxReplicas", "must be >= 1, got " + std::to_string(*m));
      } else {
        out.budget.max_replicas = static_cast<int>(*m);
      }
    }
    if (auto c = r.Positive(*budget, "costPerHour", "spec.budget", false)) {
      out.budget.cost_per_hour = *c;
    }
  }
  if (const json* metrics = r.Object(spec, "metrics", "spec", false)) {
    for (const auto& [key, value] : metrics->items()) {
      const std::string at = Reader::At("spec.metrics", key);
      if (!value.is_string()) {
        r.Fail(at, "must be a string");
      } else if (key == "prometheusURL") {
        out.metrics.prometheus_url = value.get<std::string>();
      } else {
        out.metrics.queries[key] = value.get<std::string>();
      }
    }
  }
  if (const json* forecast = r.Object(spec, "forecast", "spec", false)) {
    r.OnlyKnown(*forecast, "spec.forecast", {"method", "horizon"});
    if (auto m = ParseEnum<ForecastMethod>(r, *forecast, "method", "spec.forecast",
                                           {{"none", ForecastMethod::kNone},
                                            {"ewma", ForecastMethod::kEwma},
                                            {"holtWinters", ForecastMethod::kHoltWinters},
                                            {"linear", ForecastMethod::kLinear}})) {
      out.forecast.method = *m;
    }
    if (auto h = r.Duration(*forecast, "horizon", "spec.forecast"))
      out.forecast.horizon_seconds = *h;
  }
  if (const json* sizes = r.Array(spec, "querySizes", "spec", false)) {
    std::set<int> seen;
    for (size_t i = 0; i < sizes->size(); ++i) {
      const std::string path = Reader::At("spec.querySizes", i);
      const json& q = (*sizes)[i];
      if (!q.is_object()) {
        r.Fail(path, "must be an object {size, weight}");
        continue;
      }
      r.OnlyKnown(q, path, {"size", "weight"});
      model::QuerySize size;
      if (auto n = r.Integer(q, "size", path, true)) {
        if (*n < 1) {
          r.Fail(Reader::At(path, "size"), "must be >= 1, got " + std::to_string(*n));
          continue;
        }
        if (!seen.insert(static_cast<int>(*n)).second) {
          r.Fail(Reader::At(path, "size"), "duplicate query size " + std::to_string(*n));
        }
        size.size = static_cast<int>(*n);
      }
      if (auto w = r.Positive(q, "weight", path, true)) size.weight = *w;
      out.query_sizes.push_back(size);
    }
  }
  if (const json* behavior = r.Object(spec, "behavior", "spec", false)) {
    r.OnlyKnown(*behavior, "spec.behavior", {"scaleUp", "scaleDown"});
    for (auto [key, target] : {std::pair{"scaleDown", &out.behavior.scale_down_window_seconds},
                               std::pair{"scaleUp", &out.behavior.scale_up_window_seconds}}) {
      if (const json* b = r.Object(*behavior, key, "spec.behavior", false)) {
        const std::string at = Reader::At("spec.behavior", key);
        r.OnlyKnown(*b, at, {"stabilizationWindowSeconds"});
        if (auto w = r.Positive(*b, "stabilizationWindowSeconds", at, false, true)) *target = *w;
      }
    }
  }
}

const char* OptimizerName(model::OptimizerKind kind) {
  return optimizer::AlgorithmName(optimizer::AlgorithmFor(kind));
}

// Kairos and MArk size each task's pool over its most accurate variant's classes; a burst
// class only takes spill, so every task needs a class besides its burst classes, and the
// largest query must fit the batch the model server accepts.
void CheckPoolClasses(Reader& r, const model::PipelineSpec& spec) {
  const bool pool = spec.optimizer == model::OptimizerKind::kKairos ||
                    spec.optimizer == model::OptimizerKind::kMark;
  int largest = 1;
  for (const auto& q : spec.query_sizes) largest = std::max(largest, q.size);
  for (size_t t = 0; t < spec.tasks.size() && pool; ++t) {
    const model::Task& task = spec.tasks[t];
    if (task.variants.empty()) continue;
    const model::Variant& v = task.MostAccurateVariant();
    bool main = false;
    for (const auto& profile : v.profiles) {
      for (const auto& hw : spec.hardware_classes) {
        if (hw.name == profile.hardware_class && !hw.burst_min_warm) main = true;
      }
    }
    const std::string at = Reader::At(Reader::At("spec.tasks", t), "variants");
    if (!main) {
      r.Fail(at, "variant " + Quote(v.name) + " of task " + Quote(task.name) +
                     " has a profile only on burst classes; " + OptimizerName(spec.optimizer) +
                     " needs one on a main class");
    }
    if (largest > v.max_batch) {
      r.Fail("spec.querySizes", "query size " + std::to_string(largest) + " exceeds the batch " +
                                    Quote(v.name) + " of task " + Quote(task.name) +
                                    " accepts (batchSize.max " + std::to_string(v.max_batch) + ")");
    }
  }
}

}  // namespace

ParsedPipeline ParsePipeline(std::string_view text) {
  ParsedPipeline result;
  Reader r(result.errors);
  auto doc = ParseDocument(text);
  if (!doc) {
    r.Fail("", doc.error().message);
    return result;
  }
  const nlohmann::json& root = *doc;
  if (!root.is_object()) {
    r.Fail("", "the document must be an InferencePipeline object");
    return result;
  }
  r.OnlyKnown(root, "", {"apiVersion", "kind", "metadata", "spec", "status"});
  if (auto v = r.String(root, "apiVersion", "", true); v && *v != "pipescale.io/v1alpha1") {
    r.Fail("apiVersion", "must be pipescale.io/v1alpha1, got " + Quote(*v));
  }
  if (auto k = r.String(root, "kind", "", true); k && *k != "InferencePipeline") {
    r.Fail("kind", "must be InferencePipeline, got " + Quote(*k));
  }
  model::Pipeline pipeline;
  if (const json* meta = r.Object(root, "metadata", "", true)) {
    if (auto name = r.String(*meta, "name", "metadata", true)) {
      if (!IsDnsLabel(*name)) {
        r.Fail("metadata.name", Quote(*name) +
                                    " is not a valid name: use lower-case letters, "
                                    "digits and '-', at most 63 characters");
      }
      pipeline.name = *name;
    }
    if (auto ns = r.String(*meta, "namespace", "metadata", false)) pipeline.namespace_name = *ns;
    if (auto g = r.Integer(*meta, "generation", "metadata", false)) pipeline.generation = *g;
  }
  const json* spec = r.Object(root, "spec", "", true);
  if (spec != nullptr) {
    r.OnlyKnown(*spec, "spec",
                {"optimizer", "mode", "interval", "hardwareClasses", "tasks", "paths", "slo",
                 "budget", "metrics", "forecast", "behavior", "querySizes"});
    ParseSettings(r, *spec, pipeline.spec);
    ParseHardwareClasses(r, *spec, pipeline.spec);
    ParseTasks(r, *spec, pipeline.spec);
    CheckAcyclic(r, pipeline.spec);
    ParsePaths(r, *spec, pipeline.spec);
    const auto paths = spec->find("paths");
    const bool no_paths =
        paths == spec->end() || paths->is_null() || (paths->is_array() && paths->empty());
    const model::OptimizerKind kind = pipeline.spec.optimizer;
    if (kind != model::OptimizerKind::kLoki && no_paths) {
      r.Fail("spec.paths", std::string("the ") + OptimizerName(kind) +
                               " optimizer needs at least one execution path with sloMs");
    }
    CheckPoolClasses(r, pipeline.spec);
  }
  if (result.errors.empty()) result.pipeline = std::move(pipeline);
  return result;
}

ParsedPipeline ParsePipelineFile(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return {.pipeline = std::nullopt, .errors = {{"", "cannot read " + file}}};
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return ParsePipeline(buffer.str());
}

}  // namespace pipescale::api
