#include "api/pipeline_parse.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <map>
#include <set>
#include <sstream>

#include "api/document.h"
#include "api/field_reader.h"
#include "api/pod_template.h"
#include "api/workload.h"
#include "common/strings.h"
#include "optimizer/fit.h"
#include "optimizer/problem.h"
#include "optimizer/registry.h"

namespace pipescale::api {
namespace {

using nlohmann::json;

constexpr int kDefaultMaxBatch = 32;

constexpr Range kMsRange{.min = limits::kMinMs, .max = limits::kMaxMs};
constexpr Range kCostRange{.min = 0, .max = limits::kMaxCostPerHour};
constexpr Range kStartupRange{.min = 0, .max = limits::kMaxStartupSeconds};
constexpr Range kRatioRange{.min = 0, .max = limits::kMaxRatio, .above_min = true};
constexpr Range kWeightRange{.min = 0, .max = limits::kMaxWeight, .above_min = true};
constexpr Range kCoefficientRange{.min = -limits::kMaxCoefficient, .max = limits::kMaxCoefficient};
constexpr Range kAccuracyRange{.min = 0, .max = 1, .above_min = true, .words = "in (0, 1]"};
constexpr Range kPercentileRange{.min = 0, .max = 100, .above_min = true, .words = "in (0, 100]"};
constexpr Range kBudgetRange{.min = 0, .max = limits::kMaxBudgetPerHour, .above_min = true};
constexpr Range kWindowRange{.min = 0, .max = limits::kMaxWindowSeconds};
constexpr Range kBurstRange{.min = 0, .max = limits::kMaxBurstAllowance};
constexpr Range kMinRateRange{.min = 0, .max = limits::kMaxRateRps};
constexpr Range kIdleRange{.min = 1, .max = limits::kMaxHorizonSeconds};
constexpr Range kPeriodRange{.min = 60, .max = 28 * 86400.0};
constexpr int kMaxConfirmations = 14;
constexpr Range kHoldRange{.min = 0, .max = limits::kMaxIntervalSeconds, .above_min = true};

bool IsDnsLabel(std::string_view s) {
  const auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (s.empty() || s.size() > 63 || !alnum(s.front()) || !alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alnum(c) || c == '-'; });
}

// A Kubernetes object name such as a PriorityClass's: DNS labels joined by '.', at most 253.
bool IsDnsSubdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  for (size_t from = 0;;) {
    const size_t dot = s.find('.', from);
    if (!IsDnsLabel(s.substr(from, dot == std::string_view::npos ? dot : dot - from))) return false;
    if (dot == std::string_view::npos) return true;
    from = dot + 1;
  }
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

model::HardwareClass ParseHardwareClass(Reader& r, const json& c, const std::string& path) {
  r.OnlyKnown(c, path,
              {"name", "resources", "nodeSelector", "tolerations", "costPerHour", "startupSeconds",
               "maxReplicas", "guaranteedReplicas", "burst"});
  model::HardwareClass hw;
  if (auto name = Name(r, c, path)) hw.name = *name;
  if (const json* res = r.Object(c, "resources", path, false)) {
    const std::string rpath = Reader::At(path, "resources");
    r.OnlyKnown(*res, rpath, {"requests", "limits"});
    hw.requests = r.StringMap(*res, "requests", rpath);
    hw.limits = r.StringMap(*res, "limits", rpath);
  }
  hw.node_selector = r.StringMap(c, "nodeSelector", path);
  if (const json* t = r.Array(c, "tolerations", path, false, limits::kMaxMapEntries)) {
    hw.tolerations = model::PassThroughJson(*t);
  }
  if (auto v = r.Number(c, "costPerHour", path, false, kCostRange)) hw.cost_per_hour = *v;
  if (auto v = r.Number(c, "startupSeconds", path, false, kStartupRange)) hw.startup_seconds = *v;
  if (auto v = r.Integer(c, "maxReplicas", path, false, 1, limits::kMaxReplicas)) {
    hw.max_replicas = static_cast<int>(*v);
  }
  if (auto v = r.Integer(c, "guaranteedReplicas", path, false, 0, limits::kMaxReplicas)) {
    hw.guaranteed_replicas = static_cast<int>(*v);
    if (hw.max_replicas && *hw.max_replicas < *v) {
      r.Fail(Reader::At(path, "guaranteedReplicas"),
             "must not exceed maxReplicas (" + std::to_string(*hw.max_replicas) + ")");
    }
  }
  if (const json* burst = r.Object(c, "burst", path, false)) {
    const std::string bpath = Reader::At(path, "burst");
    r.OnlyKnown(*burst, bpath, {"minWarm"});
    hw.burst_min_warm = 1;
    if (auto v = r.Integer(*burst, "minWarm", bpath, false, 0, limits::kMaxReplicas)) {
      hw.burst_min_warm = static_cast<int>(*v);
    }
  }
  return hw;
}

void ParseHardwareClasses(Reader& r, const json& spec, model::PipelineSpec& out) {
  const json* classes = r.Array(spec, "hardwareClasses", "spec", true, limits::kMaxHardwareClasses);
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
    model::HardwareClass hw = ParseHardwareClass(r, c, path);
    if (!hw.name.empty() && !seen.insert(hw.name).second) {
      r.Fail(Reader::At(path, "name"), "duplicate hardware class " + Quote(hw.name));
    }
    out.hardware_classes.push_back(std::move(hw));
  }
}

// latencyMs: {quadratic: {a, b, c}} or {points: [[batch, ms], ...], model: quadratic|table}.
std::optional<model::QuadraticLatency> ParseQuadratic(Reader& r, const json& lat,
                                                      const std::string& path) {
  const json* q = r.Object(lat, "quadratic", path, true);
  if (q == nullptr) return std::nullopt;
  const std::string qpath = Reader::At(path, "quadratic");
  r.OnlyKnown(*q, qpath, {"a", "b", "c"});
  auto a = r.Number(*q, "a", qpath, false, kCoefficientRange);
  auto b = r.Number(*q, "b", qpath, false, kCoefficientRange);
  auto c = r.Number(*q, "c", qpath, false, kCoefficientRange);
  const auto given = [&](const char* key, const std::optional<double>& v) {
    return v.has_value() || !q->contains(key) || (*q)[key].is_null();
  };
  if (!given("a", a) || !given("b", b) || !given("c", c)) return std::nullopt;
  return model::QuadraticLatency{.a = a.value_or(0), .b = b.value_or(0), .c = c.value_or(0)};
}

// What is wrong with one [batch, ms] point, or "".
std::string PointProblem(const json& p) {
  if (!p.is_array() || p.size() != 2 || !p[0].is_number_integer() || !p[1].is_number()) {
    return "must be [batch, ms] with an integer batch";
  }
  const bool huge = p[0].is_number_unsigned() &&
                    p[0].get<std::uint64_t>() > static_cast<std::uint64_t>(limits::kMaxBatch);
  if (!huge && p[0].get<std::int64_t>() < 1) return "batch must be >= 1, got " + Num(p[0]);
  if (huge || p[0].get<std::int64_t>() > limits::kMaxBatch) {
    return "batch must be at most " + std::to_string(limits::kMaxBatch) + ", got " + Num(p[0]);
  }
  const double ms = p[1].get<double>();
  if (!(ms > 0) || !std::isfinite(ms)) return "latency must be > 0 ms, got " + Num(p[1]);
  if (const std::string problem = RangeProblem(ms, kMsRange); !problem.empty()) {
    return "latency " + problem + " ms, got " + Num(p[1]);
  }
  return "";
}

// The points sorted by batch, or nullopt after reporting every bad one.
std::optional<std::vector<model::LatencyPoint>> ParsePoints(Reader& r, const json& lat,
                                                            const std::string& path) {
  const json* pts = r.Array(lat, "points", path, true, limits::kMaxPoints);
  if (pts == nullptr) return std::nullopt;
  const std::string ppts = Reader::At(path, "points");
  if (pts->empty()) {
    r.Fail(ppts, "needs at least one [batch, ms] point");
    return std::nullopt;
  }
  std::vector<model::LatencyPoint> points;
  std::set<int> batches;
  bool ok = true;
  for (size_t i = 0; i < pts->size(); ++i) {
    const json& p = (*pts)[i];
    std::string problem = PointProblem(p);
    if (problem.empty() && !batches.insert(p[0].get<int>()).second) {
      problem = "batch " + Num(p[0]) + " appears twice";
    }
    if (!problem.empty()) {
      r.Fail(Reader::At(ppts, i), problem);
      ok = false;
    } else {
      points.push_back({p[0].get<int>(), p[1].get<double>()});
    }
  }
  if (!ok) return std::nullopt;
  std::sort(points.begin(), points.end(),
            [](const auto& x, const auto& y) { return x.batch < y.batch; });
  return points;
}

// Points become a table or a fitted quadratic (the default where three or more batch sizes
// determine one).
std::optional<model::LatencyProfile> FromPoints(Reader& r, const json& lat,
                                                const std::string& path) {
  auto points = ParsePoints(r, lat, path);
  if (!points) return std::nullopt;
  model::LatencyProfile out;
  out.points = std::move(*points);
  std::string kind = out.points.size() >= 3 ? "quadratic" : "table";
  if (auto m = r.String(lat, "model", path, false)) kind = *m;
  if (kind == "table") {
    out.kind = model::LatencyProfile::Kind::kTable;
  } else if (kind == "quadratic") {
    auto fit = optimizer::FitQuadratic(out.points);
    if (!fit) {
      r.Fail(Reader::At(path, "points"), fit.error().message + "; add points or set model: table");
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
  return out;
}

// Every batch size the optimizers may pick must have a latency they can count with: positive,
// and within the same range as a measured point.
bool CheckEveryBatch(Reader& r, const model::LatencyProfile& profile, const std::string& path,
                     int max_batch) {
  const int top = profile.MaxBatch(max_batch);
  for (int b = 1; b <= top; ++b) {
    const double ms = profile.Ms(b);
    if (ms > 0 && RangeProblem(ms, kMsRange).empty()) continue;
    std::string message = "latency at batch size " + std::to_string(b) + " is " + Num(ms) + " ms";
    const std::string rule =
        ms > 0 ? "in [" + Bound(limits::kMinMs) + ", " + Bound(limits::kMaxMs) + "] ms" : "> 0";
    message += "; it must be " + rule + " for every batch size up to " + std::to_string(top);
    r.Fail(path, std::move(message));
    return false;
  }
  return true;
}

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
  std::optional<model::LatencyProfile> out;
  if (has_quadratic) {
    if (auto q = ParseQuadratic(r, *lat, path)) {
      out.emplace();
      out->kind = model::LatencyProfile::Kind::kQuadratic;
      out->quadratic = *q;
    }
  } else {
    out = FromPoints(r, *lat, path);
  }
  if (out && !CheckEveryBatch(r, *out, path, max_batch)) return std::nullopt;
  return out;
}

void ParseBatchSize(Reader& r, const json& v, const std::string& path, model::Variant& out) {
  out.max_batch = kDefaultMaxBatch;
  const json* bs = r.Object(v, "batchSize", path, false);
  if (bs == nullptr) return;
  const std::string bpath = Reader::At(path, "batchSize");
  r.OnlyKnown(*bs, bpath, {"env", "max", "formedBy"});
  if (auto env = r.String(*bs, "env", bpath, false)) out.batch_env = *env;
  if (auto by = r.String(*bs, "formedBy", bpath, false)) {
    if (*by == "router") {
      out.batch_env.clear();  // the env var (the CRD defaults it) is not set
    } else if (*by != "server") {
      r.Fail(Reader::At(bpath, "formedBy"), "must be server or router, got " + Quote(*by));
    }
  }
  if (auto max = r.Integer(*bs, "max", bpath, false, 1, limits::kMaxBatch)) {
    out.max_batch = static_cast<int>(*max);
  }
}

void ParseProfiles(Reader& r, const json& v, const std::string& path,
                   const std::set<std::string>& classes, model::Variant& out) {
  const json* profiles = r.Array(v, "profiles", path, true, limits::kMaxProfiles);
  if (profiles == nullptr) return;
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
}

model::Variant ParseVariant(Reader& r, const json& v, const std::string& path,
                            const std::set<std::string>& classes) {
  model::Variant out;
  r.OnlyKnown(v, path,
              {"name", "accuracy", "multiplicativeFactor", "template", "deploymentName",
               "batchSize", "profiles"});
  if (auto name = Name(r, v, path)) out.name = *name;
  if (auto a = r.Number(v, "accuracy", path, false, kAccuracyRange)) out.accuracy = *a;
  if (auto m = r.Number(v, "multiplicativeFactor", path, false, kRatioRange)) {
    out.multiplicative_factor = *m;
  }
  if (auto t = ParsePodTemplate(r, v, path)) out.pod_template = model::PassThroughJson(*t);
  if (auto d = r.String(v, "deploymentName", path, false)) out.deployment_name = *d;
  ParseBatchSize(r, v, path, out);
  ParseProfiles(r, v, path, classes, out);
  return out;
}

void ParseEdges(Reader& r, const json& t, const std::string& path,
                const std::set<std::string>& names, model::Task& task) {
  const json* next = r.Array(t, "next", path, false, limits::kMaxEdges);
  if (next == nullptr) return;
  std::set<std::string> targets;
  for (size_t j = 0; j < next->size(); ++j) {
    const std::string at = Reader::At(Reader::At(path, "next"), j);
    const json& e = (*next)[j];
    if (!e.is_object()) {
      r.Fail(at, "must be an object {task, ratio}");
      continue;
    }
    r.OnlyKnown(e, at, {"task", "ratio"});
    auto to = r.String(e, "task", at, true);
    if (!to) continue;
    if (!names.contains(*to)) {
      r.Fail(Reader::At(at, "task"), "unknown task " + Quote(*to));
    } else if (*to == task.name) {
      r.Fail(Reader::At(at, "task"), "a task cannot feed itself");
    } else if (!targets.insert(*to).second) {
      r.Fail(Reader::At(at, "task"), "second edge to " + Quote(*to));
    } else {
      model::Edge edge{.task = *to};
      if (auto ratio = r.Number(e, "ratio", at, false, kRatioRange)) edge.ratio = *ratio;
      task.next.push_back(std::move(edge));
    }
  }
}

void ParseVariants(Reader& r, const json& t, const std::string& path,
                   const std::set<std::string>& classes, model::Task& task) {
  const json* variants = r.Array(t, "variants", path, true, limits::kMaxVariants);
  if (variants == nullptr) return;
  if (variants->empty()) r.Fail(Reader::At(path, "variants"), "needs at least one variant");
  std::set<std::string> names;
  for (size_t j = 0; j < variants->size(); ++j) {
    const std::string at = Reader::At(Reader::At(path, "variants"), j);
    if (!(*variants)[j].is_object()) {
      r.Fail(at, "must be an object");
      continue;
    }
    model::Variant v = ParseVariant(r, (*variants)[j], at, classes);
    if (!v.name.empty() && !names.insert(v.name).second) {
      r.Fail(Reader::At(at, "name"), "duplicate variant " + Quote(v.name));
    }
    task.variants.push_back(std::move(v));
  }
}

void ParseTasks(Reader& r, const json& spec, model::PipelineSpec& out) {
  const json* tasks = r.Array(spec, "tasks", "spec", true, limits::kMaxTasks);
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
    r.OnlyKnown(t, path, {"name", "next", "variants", "minReplicas"});
    model::Task task;
    if (auto n = r.Integer(t, "minReplicas", path, false, 0, limits::kMaxReplicas)) {
      task.min_replicas = static_cast<int>(*n);
    }
    if (auto name = Name(r, t, path)) {
      if (!seen.insert(*name).second) {
        r.Fail(Reader::At(path, "name"), "duplicate task " + Quote(*name));
      }
      task.name = *name;
    }
    ParseEdges(r, t, path, names, task);
    ParseVariants(r, t, path, classes, task);
    out.tasks.push_back(std::move(task));
  }
}

// A task's minReplicas keeps it warm, as spec.minRate keeps the pipeline: neither with scaleToZero.
void CheckTaskFloors(Reader& r, const model::PipelineSpec& spec) {
  if (!spec.scale_to_zero) return;
  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    if (spec.tasks[i].min_replicas > 0) {
      r.Fail(Reader::At(Reader::At("spec.tasks", i), "minReplicas"),
             "cannot be above 0 (" + std::to_string(spec.tasks[i].min_replicas) +
                 ") with spec.scaleToZero: a task kept warm cannot sleep at zero; keep one");
    }
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

// The path's tasks: known, each once, each following the one before along an edge.
std::vector<std::string> ParsePathTasks(Reader& r, const json& p, const std::string& path,
                                        const std::map<std::string, const model::Task*>& tasks) {
  std::vector<std::string> out;
  const json* list = r.Array(p, "tasks", path, true, limits::kMaxPathTasks);
  if (list == nullptr) return out;
  const std::string tpath = Reader::At(path, "tasks");
  if (list->empty()) r.Fail(tpath, "needs at least one task");
  std::set<std::string> visited;
  for (size_t j = 0; j < list->size(); ++j) {
    const std::string at = Reader::At(tpath, j);
    if (!(*list)[j].is_string()) {
      r.Fail(at, "must be a task name");
      continue;
    }
    const auto& name = (*list)[j].get_ref<const std::string&>();
    if (!tasks.contains(name)) {
      r.Fail(at, "unknown task " + Quote(name));
    } else if (!visited.insert(name).second) {
      r.Fail(at, "task " + Quote(name) + " appears twice on the path");
    } else if (!out.empty() && tasks.contains(out.back())) {
      const model::Task& prev = *tasks.at(out.back());
      const bool edge = std::any_of(prev.next.begin(), prev.next.end(),
                                    [&](const model::Edge& e) { return e.task == name; });
      if (!edge) {
        r.Fail(at, "task " + Quote(name) + " does not follow " + Quote(prev.name) + ": no edge " +
                       prev.name + " -> " + name + " in spec.tasks");
      }
    }
    out.push_back(name);
  }
  return out;
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
  names.reserve(values.size());
  for (const auto& [name, value] : values) names.emplace_back(name);
  r.Fail(Reader::At(path, key), "must be one of " + Join(names, ", ") + ", got " + Quote(*s));
  return std::nullopt;
}

void ParsePaths(Reader& r, const json& spec, model::PipelineSpec& out) {
  const json* paths = r.Array(spec, "paths", "spec", false, limits::kMaxPaths);
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
    r.OnlyKnown(p, path, {"name", "tasks", "sloMs", "weight", "priority"});
    model::Path out_path;
    if (auto name = Name(r, p, path)) {
      if (!seen.insert(*name).second) {
        r.Fail(Reader::At(path, "name"), "duplicate path " + Quote(*name));
      }
      out_path.name = *name;
    }
    if (auto slo = r.Number(p, "sloMs", path, true, kMsRange)) out_path.slo_ms = *slo;
    if (auto w = r.Number(p, "weight", path, false, kWeightRange)) out_path.weight = *w;
    if (auto priority = ParseEnum<model::Priority>(r, p, "priority", path,
                                                   {{"critical", model::Priority::kCritical},
                                                    {"standard", model::Priority::kStandard},
                                                    {"sheddable", model::Priority::kSheddable}})) {
      out_path.priority = *priority;
    }
    out_path.tasks = ParsePathTasks(r, p, path, tasks);
    out.paths.push_back(std::move(out_path));
  }
}

void ParseSlo(Reader& r, const json& spec, model::PipelineSpec& out) {
  const json* slo = r.Object(spec, "slo", "spec", false);
  if (slo == nullptr) return;
  r.OnlyKnown(*slo, "spec.slo", {"latencyMs", "percentile", "latencyModel"});
  if (auto l = r.Number(*slo, "latencyMs", "spec.slo", false, kMsRange)) out.slo.latency_ms = *l;
  if (auto p = r.Number(*slo, "percentile", "spec.slo", false, kPercentileRange)) {
    out.slo.percentile = *p;
  }
  if (auto m = ParseEnum(r, *slo, "latencyModel", "spec.slo", LatencyModelNames())) {
    out.slo.model = *m;
  }
}

void ParseBudget(Reader& r, const json& spec, model::PipelineSpec& out) {
  const json* budget = r.Object(spec, "budget", "spec", false);
  if (budget == nullptr) return;
  r.OnlyKnown(*budget, "spec.budget", {"maxReplicas", "costPerHour"});
  if (auto m = r.Integer(*budget, "maxReplicas", "spec.budget", false, 1, limits::kMaxReplicas)) {
    out.budget.max_replicas = static_cast<int>(*m);
  }
  if (auto c = r.Number(*budget, "costPerHour", "spec.budget", false, kBudgetRange)) {
    out.budget.cost_per_hour = *c;
  }
}

void ParseRouter(Reader& r, const json& spec, model::PipelineSpec& out) {
  const json* router = r.Object(spec, "router", "spec", false);
  if (router == nullptr) return;
  const std::string at = "spec.router";
  r.OnlyKnown(*router, at,
              {"image", "minReplicas", "maxReplicas", "requestsPerSecondPerReplica", "threads",
               "dropPolicy", "maxBodyBytes"});
  model::RouterSpec& o = out.router.emplace();
  if (auto image = r.String(*router, "image", at, false)) o.image = *image;
  if (auto n = r.Integer(*router, "minReplicas", at, false, 0, limits::kMaxReplicas)) {
    o.min_replicas = static_cast<int>(*n);
  }
  if (auto n = r.Integer(*router, "maxReplicas", at, false, 1, limits::kMaxReplicas)) {
    o.max_replicas = static_cast<int>(*n);
    // A maxReplicas below the default's two, alone, caps the default rather than clash with it.
    if (!router->contains("minReplicas")) o.min_replicas = std::min(o.min_replicas, o.max_replicas);
  }
  if (o.min_replicas > o.max_replicas) {
    r.Fail(at + ".minReplicas", "must not exceed maxReplicas (" + std::to_string(o.max_replicas) +
                                    "), got " + std::to_string(o.min_replicas));
  }
  if (auto rps = r.Number(*router, "requestsPerSecondPerReplica", at, false,
                          {.min = 0, .max = 1e7, .above_min = true})) {
    o.requests_per_second_per_replica = *rps;
  }
  if (auto n = r.Integer(*router, "threads", at, false, 1, 64)) o.threads = static_cast<int>(*n);
  if (auto policy = r.String(*router, "dropPolicy", at, false)) {
    if (model::ParseDropPolicy(*policy)) {
      o.drop_policy = *policy;
    } else {
      r.Fail(at + ".dropPolicy",
             "must be none, last-task, per-task or reroute, got " + Quote(*policy));
    }
  }
  if (auto n = r.Integer(*router, "maxBodyBytes", at, false, limits::kMinBodyBytes,
                         limits::kMaxBodyBytes)) {
    o.max_body_bytes = *n;
  }
}

void ParseMetrics(Reader& r, const json& spec, model::PipelineSpec& out) {
  const json* metrics = r.Object(spec, "metrics", "spec", false);
  if (metrics == nullptr) return;
  if (metrics->size() > limits::kMaxMapEntries) {
    r.Fail("spec.metrics", "has " + std::to_string(metrics->size()) + " entries; at most " +
                               std::to_string(limits::kMaxMapEntries) + " are allowed");
    return;
  }
  for (const auto& [key, value] : metrics->items()) {
    auto s = r.String(*metrics, key.c_str(), "spec.metrics", true);
    if (!s) continue;
    if (key == "prometheusURL") {
      out.metrics.prometheus_url = *s;
    } else {
      out.metrics.queries[key] = *s;
    }
  }
}

void ParseForecast(Reader& r, const json& spec, model::PipelineSpec& out) {
  using model::ForecastMethod;
  const json* forecast = r.Object(spec, "forecast", "spec", false);
  if (forecast == nullptr) return;
  r.OnlyKnown(*forecast, "spec.forecast", {"method", "horizon"});
  if (auto m = ParseEnum<ForecastMethod>(r, *forecast, "method", "spec.forecast",
                                         {{"none", ForecastMethod::kNone},
                                          {"ewma", ForecastMethod::kEwma},
                                          {"holtWinters", ForecastMethod::kHoltWinters},
                                          {"linear", ForecastMethod::kLinear}})) {
    out.forecast.method = *m;
  }
  if (auto h = r.Duration(*forecast, "horizon", "spec.forecast", limits::kMaxHorizonSeconds)) {
    out.forecast.horizon_seconds = *h;
  }
}

void ParseQuerySizes(Reader& r, const json& spec, model::PipelineSpec& out) {
  const json* sizes = r.Array(spec, "querySizes", "spec", false, limits::kMaxQuerySizes);
  if (sizes == nullptr) return;
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
    auto n = r.Integer(q, "size", path, true, 1, limits::kMaxBatch);
    if (!n && q.contains("size")) continue;
    if (n) {
      if (!seen.insert(static_cast<int>(*n)).second) {
        r.Fail(Reader::At(path, "size"), "duplicate query size " + std::to_string(*n));
      }
      size.size = static_cast<int>(*n);
    }
    if (auto w = r.Number(q, "weight", path, true, kWeightRange)) size.weight = *w;
    out.query_sizes.push_back(size);
  }
}

void ParseBehavior(Reader& r, const json& spec, model::PipelineSpec& out) {
  const json* behavior = r.Object(spec, "behavior", "spec", false);
  if (behavior == nullptr) return;
  r.OnlyKnown(*behavior, "spec.behavior", {"scaleUp", "scaleDown"});
  model::Behavior& o = out.behavior;
  const auto window = [&](const json& b, const std::string& at, double& target) {
    if (auto w = r.Number(b, "stabilizationWindowSeconds", at, false, kWindowRange)) target = *w;
  };
  if (const json* down = r.Object(*behavior, "scaleDown", "spec.behavior", false)) {
    const std::string at = "spec.behavior.scaleDown";
    r.OnlyKnown(*down, at, {"stabilizationWindowSeconds"});
    window(*down, at, o.scale_down_window_seconds);
  }
  if (const json* up = r.Object(*behavior, "scaleUp", "spec.behavior", false)) {
    const std::string at = "spec.behavior.scaleUp";
    r.OnlyKnown(*up, at, {"stabilizationWindowSeconds", "burstAllowance"});
    window(*up, at, o.scale_up_window_seconds);
    if (auto z = r.Number(*up, "burstAllowance", at, false, kBurstRange)) o.burst_allowance = *z;
  }
}

// spec.scaleToZero. Run after minRate is read: a warm floor and sleeping at zero contradict.
void ParseScaleToZero(Reader& r, const json& spec, model::PipelineSpec& out) {
  const json* stz = r.Object(spec, "scaleToZero", "spec", false);
  if (stz == nullptr) return;
  const std::string at = "spec.scaleToZero";
  r.OnlyKnown(*stz, at, {"afterIdleSeconds", "wake", "holdSeconds", "wakeAhead"});
  model::ScaleToZero o;
  if (auto a = r.Number(*stz, "afterIdleSeconds", at, true, kIdleRange)) o.after_idle_seconds = *a;
  if (auto w = ParseEnum<model::WakeScope>(
          r, *stz, "wake", at,
          {{"Path", model::WakeScope::kPath}, {"Pipeline", model::WakeScope::kPipeline}})) {
    o.wake = *w;
  }
  if (auto h = r.Number(*stz, "holdSeconds", at, false, kHoldRange)) o.hold_seconds = *h;
  if (const json* ahead = r.Object(*stz, "wakeAhead", at, false)) {
    const std::string wat = at + ".wakeAhead";
    r.OnlyKnown(*ahead, wat, {"periodSeconds", "confirmations"});
    if (auto p = r.Number(*ahead, "periodSeconds", wat, false, kPeriodRange)) {
      o.wake_ahead.period_seconds = *p;
    }
    if (auto n = r.Integer(*ahead, "confirmations", wat, false, 0, kMaxConfirmations)) {
      o.wake_ahead.confirmations = static_cast<int>(*n);
    }
  }
  if (out.min_rate_rps > 0) {
    r.Fail(at, "cannot be set with spec.minRate above 0 (" + Num(out.min_rate_rps) +
                   "): minRate keeps capacity warm at every load, scaleToZero removes it when "
                   "idle; keep one");
  }
  if (!out.router) {
    r.Fail(at,
           "needs spec.router: the router holds the requests that arrive while the pods "
           "start, and its count of them wakes the pipeline");
  }
  out.scale_to_zero = o;
}

// spec.profiles: learning the profiles from what the router measures. Run after ParseRouter.
void ParseProfileLearning(Reader& r, const json& spec, model::PipelineSpec& out) {
  using model::ProfileLearning;
  const json* profiles = r.Object(spec, "profiles", "spec", false);
  if (profiles == nullptr) return;
  const std::string at = "spec.profiles";
  r.OnlyKnown(*profiles, at, {"learn", "tolerance", "minBatches", "window"});
  model::ProfilesSpec& o = out.profiles;
  if (auto l = ParseEnum<ProfileLearning>(r, *profiles, "learn", at,
                                          {{"Off", ProfileLearning::kOff},
                                           {"Report", ProfileLearning::kReport},
                                           {"Plan", ProfileLearning::kPlan}})) {
    o.learn = *l;
  }
  if (auto t =
          r.Number(*profiles, "tolerance", at, false, {.min = 0, .max = 10, .above_min = true})) {
    o.tolerance = *t;
  }
  if (auto n = r.Integer(*profiles, "minBatches", at, false, 1, limits::kMaxMinBatches)) {
    o.min_batches = static_cast<int>(*n);
  }
  if (auto w = r.Duration(*profiles, "window", at, limits::kMaxHorizonSeconds)) {
    if (*w < limits::kMinProfileWindowSeconds) {
      r.Fail(at + ".window", "must be at least " + Bound(limits::kMinProfileWindowSeconds) +
                                 " s (Prometheus needs two scrapes in it), got " + Num(*w));
    } else {
      o.window_seconds = *w;
    }
  }
  if (o.learn == ProfileLearning::kPlan && !out.router) {
    r.Fail(at + ".learn", "Plan needs spec.router: the router measures the batch times");
  }
}

void ParseSettings(Reader& r, const json& spec, model::PipelineSpec& out) {
  using model::Mode;
  if (auto o = r.String(spec, "optimizer", "spec", false)) {
    const optimizer::Descriptor* d = optimizer::FindOptimizer(*o);
    if (d != nullptr && d->in_spec) {
      out.optimizer = *o;
    } else {
      r.Fail("spec.optimizer",
             "must be one of " + optimizer::OptimizerNames(true) + ", got " + Quote(*o));
    }
  }
  if (auto m = ParseEnum<Mode>(r, spec, "mode", "spec",
                               {{"Apply", Mode::kApply}, {"Recommend", Mode::kRecommend}})) {
    out.mode = *m;
  }
  if (auto m = r.Number(spec, "minRate", "spec", false, kMinRateRange)) out.min_rate_rps = *m;
  if (auto i = r.Duration(spec, "interval", "spec", limits::kMaxIntervalSeconds)) {
    if (*i < limits::kMinIntervalSeconds) {
      r.Fail("spec.interval",
             "must be at least " + Bound(limits::kMinIntervalSeconds) + " s, got " + Num(*i));
    } else {
      out.interval_seconds = *i;
    }
  }
  ParseSlo(r, spec, out);
  ParseBudget(r, spec, out);
  ParseRouter(r, spec, out);
  ParseMetrics(r, spec, out);
  ParseForecast(r, spec, out);
  ParseQuerySizes(r, spec, out);
  ParseBehavior(r, spec, out);
  ParseProfileLearning(r, spec, out);
  ParseScaleToZero(r, spec, out);
  if (auto p = r.String(spec, "priorityClassName", "spec", false)) {
    if (IsDnsSubdomain(*p)) {
      out.priority_class_name = *p;
    } else {
      r.Fail("spec.priorityClassName",
             Quote(*p) +
                 " is not a PriorityClass name: lower-case letters, digits, '-' and '.', "
                 "at most 253 characters");
    }
  }
}

// MArk plans one step per interval up to its forecast horizon and the slowest startup; both
// must stay a bounded number of steps ahead, whatever the interval.
void CheckPlanningSteps(Reader& r, const model::PipelineSpec& spec) {
  const double step = spec.interval_seconds;
  const auto steps = [&](double seconds) { return std::ceil(seconds / step - 1e-9); };
  const auto problem = [&](double seconds) {
    return "is " + Num(steps(seconds)) + " intervals of " + Num(step) + " s; at most " +
           std::to_string(limits::kMaxPlanningSteps) +
           " are planned ahead (lengthen spec.interval)";
  };
  if (steps(spec.forecast.horizon_seconds) > limits::kMaxPlanningSteps) {
    r.Fail("spec.forecast.horizon", problem(spec.forecast.horizon_seconds));
  }
  for (size_t i = 0; i < spec.hardware_classes.size(); ++i) {
    const double startup = spec.hardware_classes[i].startup_seconds;
    if (steps(startup) > limits::kMaxPlanningSteps) {
      r.Fail(Reader::At(Reader::At("spec.hardwareClasses", i), "startupSeconds"), problem(startup));
    }
  }
}

// Kairos and MArk size each task's pool over its most accurate variant's classes; a burst
// class only takes spill, so every task needs a class besides its burst classes.
void CheckPoolClasses(Reader& r, const model::PipelineSpec& spec,
                      const optimizer::Descriptor& planner) {
  if (planner.placement != optimizer::Placement::kPerClass) return;
  for (size_t t = 0; t < spec.tasks.size(); ++t) {
    const model::Task& task = spec.tasks[t];
    if (task.variants.empty()) continue;
    const model::Variant& v = task.MostAccurateVariant();
    bool main = false;
    for (const auto& profile : v.profiles) {
      for (const auto& hw : spec.hardware_classes) {
        if (hw.name == profile.hardware_class && !hw.burst_min_warm) main = true;
      }
    }
    if (!main) {
      r.Fail(Reader::At(Reader::At("spec.tasks", t), "variants"),
             "variant " + Quote(v.name) + " of task " + Quote(task.name) +
                 " has a profile only on burst classes; " + std::string(planner.name) +
                 " needs one on a main class");
    }
  }
}

// A query is one batch on every task, whichever optimizer plans it (HPA sizes replicas by the
// mix too), so the largest must fit the batch each model server accepts: latencies are
// validated up to batchSize.max and nothing past it.
void CheckQuerySizesFit(Reader& r, const model::PipelineSpec& spec) {
  int largest = 1;
  for (const auto& q : spec.query_sizes) largest = std::max(largest, q.size);
  for (const model::Task& task : spec.tasks) {
    if (task.variants.empty()) continue;
    const model::Variant& v = task.MostAccurateVariant();
    if (largest > v.max_batch) {
      r.Fail("spec.querySizes", "query size " + std::to_string(largest) + " exceeds the batch " +
                                    Quote(v.name) + " of task " + Quote(task.name) +
                                    " accepts (batchSize.max " + std::to_string(v.max_batch) + ")");
    }
  }
}

// Kubernetes' own names: a namespace is a DNS label too.
void ParseMetadata(Reader& r, const json& meta, model::Pipeline& pipeline) {
  for (auto [key, target] :
       {std::pair{"name", &pipeline.name}, std::pair{"namespace", &pipeline.namespace_name}}) {
    auto name = r.String(meta, key, "metadata", key == std::string_view("name"));
    if (!name) continue;
    if (!IsDnsLabel(*name)) {
      r.Fail(Reader::At("metadata", key), Quote(*name) +
                                              " is not a valid name: use lower-case letters, "
                                              "digits and '-', at most 63 characters");
    }
    *target = *name;
  }
  if (auto g = r.Integer(meta, "generation", "metadata", false, 0, INT64_MAX)) {
    pipeline.generation = *g;
  }
}

}  // namespace

const std::vector<std::pair<const char*, model::LatencyModel>>& LatencyModelNames() {
  static const std::vector<std::pair<const char*, model::LatencyModel>> kNames = {
      {"tail", model::LatencyModel::kTail}, {"mean", model::LatencyModel::kMean}};
  return kNames;
}

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
  if (const json* meta = r.Object(root, "metadata", "", true)) ParseMetadata(r, *meta, pipeline);
  const json* spec = r.Object(root, "spec", "", true);
  if (spec != nullptr) {
    r.OnlyKnown(*spec, "spec",
                {"optimizer", "mode", "interval", "minRate", "hardwareClasses", "tasks", "paths",
                 "slo", "budget", "metrics", "forecast", "behavior", "querySizes", "router",
                 "profiles", "scaleToZero", "priorityClassName"});
    ParseSettings(r, *spec, pipeline.spec);
    ParseHardwareClasses(r, *spec, pipeline.spec);
    ParseTasks(r, *spec, pipeline.spec);
    CheckTaskFloors(r, pipeline.spec);
    CheckAcyclic(r, pipeline.spec);
    ParsePaths(r, *spec, pipeline.spec);
    const auto paths = spec->find("paths");
    const bool no_paths =
        paths == spec->end() || paths->is_null() || (paths->is_array() && paths->empty());
    // One rule for what an optimizer cannot plan, read from its descriptor.
    if (optimizer::OptimizerOf(pipeline.spec).needs_paths && no_paths) {
      r.Fail("spec.paths", "the " + pipeline.spec.optimizer +
                               " optimizer needs at least one execution path with sloMs");
    }
    CheckPoolClasses(r, pipeline.spec, optimizer::OptimizerOf(pipeline.spec));
    CheckQuerySizesFit(r, pipeline.spec);
    CheckPlanningSteps(r, pipeline.spec);
  }
  r.Finish();
  if (result.errors.empty()) result.pipeline = std::move(pipeline);
  return result;
}

std::vector<FieldError> CheckPlannableBy(const model::Pipeline& pipeline,
                                         std::string_view optimizer) {
  std::vector<FieldError> errors;
  Reader r(errors);
  if (const optimizer::Descriptor* d = optimizer::FindOptimizer(optimizer)) {
    CheckPoolClasses(r, pipeline.spec, *d);
  }
  return errors;
}

ParsedPipeline ParsePipelineFile(const std::string& file) {
  const std::string shown = EscapeUserText(file, kQuotedChars * 4);
  std::ifstream in(file, std::ios::binary);
  if (!in) return {.pipeline = std::nullopt, .errors = {{"", "cannot read " + shown}}};
  // No more than the parser reads: a device such as /dev/zero never ends.
  std::string text(limits::kMaxDocumentBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return {.pipeline = std::nullopt, .errors = {{"", "cannot read " + shown}}};
  text.resize(static_cast<size_t>(in.gcount()));
  return ParsePipeline(text);
}

}  // namespace pipescale::api
