// A structure-aware fuzz test of our own: the shipped examples, read into JSON, mutated the way
// hostile or careless pipelines differ from them (extreme numbers, odd strings, deep nesting,
// long chains, many variants and classes, dropped and repeated fields), plus YAML texts no
// parser should choke on (alias bombs, deep flow nesting, damaged bytes). Every case goes
// through api::ParsePipeline and, when valid, through every optimizer of the registry. A case
// fails when the process would crash (the test dies, and the crash handler names the case),
// when a message carries raw bytes or runs on, when a plan holds a non-finite number, more
// replicas than a plan may ask for or than a class allows, or a batch outside [1,
// batchSize.max] (testing::CheckBounds), or when a solve takes longer than a generous bound.
//
// PIPESCALE_FUZZ_CASES (default 3000), PIPESCALE_FUZZ_FIRST (default 0) and
// PIPESCALE_FUZZ_SEED (default below) choose the run; PIPESCALE_FUZZ_HANG_MS (default kHangMs) is
// how long a solve may take before it counts as a hang; PIPESCALE_FUZZ_WATCHDOG (seconds, default
// 60) is how long one case may run before the process aborts naming it;
// PIPESCALE_FUZZ_ONLY=N runs case N alone and PIPESCALE_FUZZ_DUMP=FILE writes its document,
// to reproduce a failure; PIPESCALE_FUZZ_SKIP=a,b leaves optimizers out (default:
// kDefaultSkip; empty: none). PIPESCALE_FUZZ_VERBOSE=1 prints each case's time and every
// failure. Each case draws from its own generator (seed + case), so a case is the same
// whatever the number of cases.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/document.h"
#include "api/pipeline_parse.h"
#include "api/workload.h"
#include "common/strings.h"
#include "optimizer/problem.h"
#include "optimizer/registry.h"
#include "support/plan_checker.h"

namespace pipescale {
namespace {

using nlohmann::json;

constexpr std::uint64_t kDefaultSeed = 0x5eed'f00d'2024'0010ULL;
constexpr int kDefaultCases = 3000;
// Far beyond any budget: a solve this slow is a hang. The largest budget is Loki's, up to three
// MILPs of 1 s of CPU each, but CBC overruns it on big models: case 325 (the Kairos example
// mutated into a 40-task chain on 4 classes) takes 6.4 s idle and 9.0 s on a loaded 2-core
// machine, in model copies CBC's time limit does not interrupt. The watchdog aborts a case
// stuck longer.
constexpr double kHangMs = 20000;
constexpr int kWatchdogSeconds = 60;
// The longest message a pipeline may cause (a quoted name is cut at 64 characters).
constexpr size_t kLongestMessage = 2048;
// Replaced after serializing by bytes that are not UTF-8: JSON writers refuse to emit them.
constexpr const char* kBadUtf8 = "@@not-utf8@@";
// Replaced after serializing by that many nested lists or maps.
constexpr const char* kDeepLists = "@@deep-lists@@";
constexpr const char* kDeepMaps = "@@deep-maps@@";

// Every optimizer runs on every case unless PIPESCALE_FUZZ_SKIP names it.
constexpr const char* kDefaultSkip = "";

std::int64_t EnvInt(const char* name, std::int64_t fallback) {
  const char* v = std::getenv(name);
  return v == nullptr ? fallback : std::strtoll(v, nullptr, 0);
}

// --- What the crash handler and the watchdog say ---------------------------------------------

char g_current[256] = "no case yet";
std::atomic<std::int64_t> g_case_started_ms{0};

void SetCurrent(std::uint64_t seed, std::int64_t index, const char* what) {
  std::snprintf(g_current, sizeof g_current,
                "fuzz case %lld (PIPESCALE_FUZZ_SEED=%llu PIPESCALE_FUZZ_ONLY=%lld): %s\n",
                static_cast<long long>(index), static_cast<unsigned long long>(seed),
                static_cast<long long>(index), what);
}

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void OnCrash(int signal) {
  const char* prefix = "\n*** crashed in ";
  (void)!write(STDERR_FILENO, prefix, std::strlen(prefix));
  (void)!write(STDERR_FILENO, g_current, std::strlen(g_current));
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

// --- Mutations -------------------------------------------------------------------------------

class Mutator {
 public:
  explicit Mutator(std::uint64_t seed) : rng_(seed) {}

  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  size_t Below(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  template <typename T>
  const T& Pick(const std::vector<T>& items) {
    return items[Below(items.size())];
  }

  // A JSON document: the example with one to five mutations.
  std::string MutateJson(json doc) {
    // At most one mutation that grows the document, so that cases stay quick to make, and
    // some cases keep the document valid to reach the optimizers with new numbers.
    if (Chance(0.4)) Grow(doc);
    const size_t count = Below(4);
    for (size_t i = 0; i < count; ++i) Mutate(doc);
    std::string text = doc.dump();
    for (size_t at; (at = text.find(kBadUtf8)) != std::string::npos;) {
      text.replace(at, std::strlen(kBadUtf8),
                   Pick<std::string>({"\xff\xfe", "\xc0\xaf", "\xed\xa0\x80", "a\x80"}));
    }
    ExpandDeep(text, kDeepLists, "[", "]");
    ExpandDeep(text, kDeepMaps, "{\"a\":", "}");
    return text;
  }

  // Replaces each "<marker><levels>" string of `text` by `levels` nestings of open/close.
  static void ExpandDeep(std::string& text, const char* marker, const char* open,
                         const char* close) {
    const std::string quoted = std::string("\"") + marker;
    std::string out;
    size_t from = 0;
    for (size_t at; (at = text.find(quoted, from)) != std::string::npos;) {
      const size_t end = text.find('"', at + 1);
      size_t levels = std::stoul(text.substr(at + quoted.size(), end - at - quoted.size()));
      // Copies of a marker stay shallow once the text is far past what the parser reads.
      if (out.size() > 2 * api::limits::kMaxDocumentBytes) levels = 1;
      out.append(text, from, at - from);
      for (size_t i = 0; i < levels; ++i) out += open;
      out += "0";
      for (size_t i = 0; i < levels; ++i) out += close;
      from = end + 1;
    }
    out.append(text, from, std::string::npos);
    text = std::move(out);
  }

  // A YAML text: damaged bytes of an example, or a construct aimed at the parser.
  std::string MutateYaml(const std::string& example) {
    switch (Below(7)) {
      case 0:
        return AliasBomb();
      case 1:
        return std::string(1 + Below(5000), '[') + "1" + std::string(Below(5000), ']');
      case 2:
        return DeepBlock();
      case 3:
        return std::string(
                   "apiVersion: pipescale.io/v1alpha1\nkind: InferencePipeline\n"
                   "metadata: {name: ") +
               std::string(1 + Below(2'000'000), '9') + "}\n";
      case 4:
        return example + "\n# " + std::string(limits_bytes_ + Below(100), 'x') + "\n";
      default:
        return DamageBytes(example);
    }
  }

 private:
  static constexpr size_t limits_bytes_ = api::limits::kMaxDocumentBytes;

  // Every value of the document with its parent, so that one can be replaced.
  struct Slot {
    json* value;
    int depth;
  };
  std::vector<Slot> Slots(json& doc) {
    std::vector<Slot> out;
    std::vector<Slot> stack = {{&doc, 0}};
    while (!stack.empty()) {
      const Slot s = stack.back();
      stack.pop_back();
      out.push_back(s);
      if (s.value->is_structured()) {
        for (auto& child : *s.value) stack.push_back({&child, s.depth + 1});
      }
    }
    return out;
  }

  json ExtremeNumber() {
    static const std::vector<json> kNumbers = {0,
                                               -1,
                                               1,
                                               1e-310,
                                               -1e-310,
                                               1e308,
                                               -1e308,
                                               2147483647,
                                               2147483648LL,
                                               4294967296LL,
                                               INT64_MAX,
                                               INT64_MIN,
                                               UINT64_MAX,
                                               9223372036854775808ULL,
                                               0.5,
                                               1e-5,
                                               1e-3,
                                               4096,
                                               4097,
                                               10000,
                                               10001,
                                               86400,
                                               86401,
                                               3.6e6,
                                               3.6e6 + 1,
                                               1e12,
                                               1e9,
                                               1e-300,
                                               63,
                                               64,
                                               65,
                                               1e6};
    return Pick(kNumbers);
  }

  json WeirdString() {
    switch (Below(9)) {
      case 0:
        return std::string(1 + Below(200'000), 'a');
      case 1:
        return "\x01\x1b[31mred\n\t\x7f";
      case 2:
        return kBadUtf8;
      case 3:
        return "";
      case 4:
        return std::string(64, 'a');
      case 5:
        return "\u202egnp.exe";
      case 6:
        return Pick<std::string>({"NaN", "nan", "inf", "-inf", ".nan", ".inf", "1e400",
                                  "99999999999999999999999999", "0x10", "10s", "1e-310"});
      case 7:
        return Pick<std::string>({"fa2", "loki", "kairos", "mark", "exact", "table", "quadratic",
                                  "ewma", "holtWinters", "linear", "Recommend", "0ms", "1ms",
                                  "999999h", "24h", "1s", "3600s"});
      default:
        return "x";
    }
  }

  json OtherType(const json& v) {
    std::vector<json> kinds = {json::object(), json::array(), nullptr, true, 0, "x", 1.5};
    kinds.erase(std::remove_if(kinds.begin(), kinds.end(),
                               [&](const json& k) { return k.type() == v.type(); }),
                kinds.end());
    return Pick(kinds);
  }

  // A placeholder the text stage turns into `levels` nested lists or maps: building them as
  // json would copy the tree once per level.
  json Deep() {
    const size_t levels = Pick<size_t>({10, 63, 64, 65, 100, 1000, 20000, 500000});
    return std::string(Chance(0.5) ? kDeepLists : kDeepMaps) + std::to_string(levels);
  }

  void Grow(json& doc) {
    if (!doc.is_object() || !doc.contains("spec") || !doc["spec"].is_object()) return;
    json& spec = doc["spec"];
    switch (Below(5)) {
      case 0:
        return LongChain(spec);
      case 1:
        return ManyVariants(spec);
      case 2:
        return ManyClasses(spec);
      case 3:
        return ShortOddTables(spec);
      default:
        return BigBatches(spec);
    }
  }

  // Some profiles become short tables whose latency falls or zigzags with the batch: valid at
  // every batch they list, and asked about far past their last point by batches and query
  // sizes (a Kairos class on one aborted the planner, issue 25).
  void ShortOddTables(json& spec) {
    if (!spec.contains("tasks") || !spec["tasks"].is_array()) return;
    for (json& t : spec["tasks"]) {
      if (!t.is_object() || !t.contains("variants") || !t["variants"].is_array()) continue;
      for (json& v : t["variants"]) {
        if (!v.is_object() || !v.contains("profiles") || !v["profiles"].is_array()) continue;
        for (json& p : v["profiles"]) {
          if (!p.is_object() || Chance(0.5)) continue;
          const double top = Pick<double>({0.01, 1.0, 90.0, 5000.0});
          json points = json::array();
          const int n = Pick<int>({1, 2, 3, 5});
          for (int b = 1; b <= n; ++b) {
            const double falling = top * (n + 1 - b) / n;
            points.push_back({b, b % 2 == 0 && Chance(0.5) ? top * 2 : falling});
          }
          p["latencyMs"] = {{"points", points}, {"model", "table"}};
        }
      }
    }
  }

  void Mutate(json& doc) {
    if (!doc.is_object() || !doc.contains("spec") || !doc["spec"].is_object()) {
      return MutateAnywhere(doc);
    }
    json& spec = doc["spec"];
    switch (Below(8)) {
      case 0:
      case 1:
        return SetKnownField(spec);
      case 2:
        spec["optimizer"] = Pick<std::string>({"fa2", "loki", "kairos", "mark"});
        return;
      case 3:
        return ScaleNumber(doc);
      default:
        return MutateAnywhere(doc);
    }
  }

  // A number of the document times a factor: mostly still valid, and new to the optimizers.
  void ScaleNumber(json& doc) {
    std::vector<json*> numbers;
    for (const Slot& s : Slots(doc)) {
      if (s.value->is_number()) numbers.push_back(s.value);
    }
    if (numbers.empty()) return;
    json& v = *Pick(numbers);
    const double factor = Pick<double>({0.01, 0.1, 0.5, 2, 10, 100, 1e4});
    v = v.is_number_integer()
            ? json(std::max<std::int64_t>(1, static_cast<std::int64_t>(v.get<double>() * factor)))
            : json(v.get<double>() * factor);
  }

  void MutateAnywhere(json& doc) {
    std::vector<Slot> slots = Slots(doc);
    Slot s = Pick(slots);
    json& v = *s.value;
    switch (Below(9)) {
      case 0:
      case 1:
        v = v.is_number() || Chance(0.3) ? ExtremeNumber() : v;
        return;
      case 2:
        if (v.is_string() || Chance(0.2)) v = WeirdString();
        return;
      case 3:
        if (v.is_object() && !v.empty()) {
          auto it = v.begin();
          std::advance(it, static_cast<long>(Below(v.size())));
          v.erase(it);
        } else if (v.is_array() && !v.empty()) {
          v.erase(v.begin() + static_cast<long>(Below(v.size())));
        }
        return;
      case 4:
        if (v.is_array() && !v.empty()) {
          const json item = v[Below(v.size())];
          // Many copies of a small item (points, query sizes), fewer of a large one.
          const size_t copies = item.is_structured() && item.size() > 4
                                    ? Pick<size_t>({1, 2, 10, 70})
                                    : Pick<size_t>({1, 2, 10, 100, 2000});
          for (size_t i = 0; i < copies; ++i) v.push_back(item);
        } else if (v.is_object() && !v.empty()) {
          v[Pick<std::string>({"name", "sloMs", "tasks", "next", "variants", "extra", "a"})] =
              v.begin().value();
        }
        return;
      case 5:
        if (v.is_array()) std::shuffle(v.begin(), v.end(), rng_);
        return;
      case 6:
        v = Deep();
        return;
      default:
        v = OtherType(v);
        return;
    }
  }

  // Copies of the first task, chained, with a path through all of them.
  void LongChain(json& spec) {
    if (!spec.contains("tasks") || !spec["tasks"].is_array() || spec["tasks"].empty()) return;
    const json first = spec["tasks"][0];
    if (!first.is_object()) return;
    const size_t n = Pick<size_t>({2, 8, 16, 40, 64, 65, 200});
    json tasks = json::array();
    json names = json::array();
    for (size_t i = 0; i < n; ++i) {
      json t = first;
      t["name"] = "chain-" + std::to_string(i);
      t.erase("next");
      if (i + 1 < n) t["next"] = json::array({{{"task", "chain-" + std::to_string(i + 1)}}});
      tasks.push_back(t);
      names.push_back(t["name"]);
    }
    spec["tasks"] = tasks;
    const double slo = Pick<double>({100.0, 1000.0, 3.6e6, 0.001, 1e5});
    spec["paths"] = json::array({{{"name", "chain"}, {"tasks", names}, {"sloMs", slo}}});
  }

  void ManyVariants(json& spec) {
    if (!spec.contains("tasks") || !spec["tasks"].is_array()) return;
    for (json& t : spec["tasks"]) {
      if (!t.is_object() || !t.contains("variants") || !t["variants"].is_array() ||
          t["variants"].empty() || !t["variants"][0].is_object()) {
        continue;
      }
      const json base = t["variants"][0];
      const size_t n = Pick<size_t>({3, 5, 16, 17, 40});
      t["variants"] = json::array();
      for (size_t i = 0; i < n; ++i) {
        json v = base;
        v["name"] = "v" + std::to_string(i);
        v["accuracy"] = 0.5 + 0.5 * static_cast<double>(i + 1) / static_cast<double>(n);
        t["variants"].push_back(v);
      }
    }
  }

  // More hardware classes, each with a profile wherever the first class has one.
  void ManyClasses(json& spec) {
    if (!spec.contains("hardwareClasses") || !spec["hardwareClasses"].is_array() ||
        spec["hardwareClasses"].empty() || !spec["hardwareClasses"][0].is_object()) {
      return;
    }
    const json base = spec["hardwareClasses"][0];
    const size_t n = Pick<size_t>({4, 12, 16, 17, 40});
    for (size_t i = 0; i < n; ++i) {
      json c = base;
      c["name"] = "class-" + std::to_string(i);
      c["costPerHour"] = 0.1 * static_cast<double>(i + 1);
      spec["hardwareClasses"].push_back(c);
    }
    if (!spec.contains("tasks") || !spec["tasks"].is_array()) return;
    for (json& t : spec["tasks"]) {
      if (!t.is_object() || !t.contains("variants") || !t["variants"].is_array()) continue;
      for (json& v : t["variants"]) {
        if (!v.is_object() || !v.contains("profiles") || !v["profiles"].is_array() ||
            v["profiles"].empty()) {
          continue;
        }
        const json profile = v["profiles"][0];
        for (size_t i = 0; i < n && profile.is_object(); ++i) {
          json p = profile;
          p["hardwareClass"] = "class-" + std::to_string(i);
          v["profiles"].push_back(p);
        }
      }
    }
  }

  void BigBatches(json& spec) {
    if (!spec.contains("tasks") || !spec["tasks"].is_array()) return;
    const int max = Pick<int>({256, 1000, 4096});
    for (json& t : spec["tasks"]) {
      if (!t.is_object() || !t.contains("variants") || !t["variants"].is_array()) continue;
      for (json& v : t["variants"]) {
        if (!v.is_object()) continue;
        v["batchSize"] = {{"max", max}};
        if (Chance(0.3) && v.contains("profiles") && v["profiles"].is_array()) {
          json points = json::array();
          for (int b = 1; b <= max; b += 1 + static_cast<int>(Below(4))) {
            points.push_back({b, 1.0 + 0.5 * b});
          }
          for (json& p : v["profiles"]) {
            if (p.is_object()) p["latencyMs"] = {{"points", points}, {"model", "table"}};
          }
        }
      }
    }
  }

  void SetKnownField(json& spec) {
    switch (Below(8)) {
      case 0:
        spec["interval"] = WeirdString();
        return;
      case 1:
        spec["forecast"] = {{"method", Pick<std::string>({"linear", "ewma", "holtWinters"})},
                            {"horizon", Pick<std::string>({"1h", "24h", "10m", "0s", "25h"})}};
        return;
      case 2:
        spec["budget"] = {{"maxReplicas", ExtremeNumber()}, {"costPerHour", ExtremeNumber()}};
        return;
      case 3:
        spec["querySizes"] = json::array({{{"size", ExtremeNumber()}, {"weight", 1}}});
        return;
      default:
        break;
    }
    std::vector<json*> targets;
    for (const char* list : {"hardwareClasses", "paths"}) {
      if (!spec.contains(list) || !spec[list].is_array()) continue;
      for (json& item : spec[list]) {
        if (item.is_object()) targets.push_back(&item);
      }
    }
    if (targets.empty()) return;
    json& target = *Pick(targets);
    const char* key = Pick<const char*>(
        {"sloMs", "weight", "maxReplicas", "startupSeconds", "costPerHour", "burst"});
    target[key] =
        std::string(key) == "burst" ? json{{"minWarm", ExtremeNumber()}} : ExtremeNumber();
  }

  std::string AliasBomb() {
    const size_t levels = 3 + Below(12);
    std::string out = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
    for (size_t i = 1; i < levels; ++i) {
      const std::string p = "*a" + std::to_string(i - 1);
      out += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + p + ", " + p + ", " + p +
             ", " + p + ", " + p + ", " + p + ", " + p + ", " + p + ", " + p + ", " + p + "]\n";
    }
    return out;
  }

  std::string DeepBlock() {
    std::string out;
    const size_t levels = Pick<size_t>({65, 600, 3000});
    for (size_t i = 0; i < levels; ++i) out += std::string(i, ' ') + "k:\n";
    return out;
  }

  std::string DamageBytes(std::string text) {
    const size_t edits = 1 + Below(8);
    for (size_t i = 0; i < edits && !text.empty(); ++i) {
      const size_t at = Below(text.size());
      switch (Below(5)) {
        case 0:
          text[at] = static_cast<char>(Below(256));
          break;
        case 1:
          text.insert(at, Pick<std::string>({"&x ", "*x", "[", "{", "]", "\"", "'", ": ", "- ",
                                             "!!binary ", "? ", "\t", "\xff"}));
          break;
        case 2:
          text.erase(at, Below(64));
          break;
        case 3:
          text.resize(at);
          break;
        default: {
          const size_t end = std::min(text.size(), at + Below(200));
          text.insert(at, text.substr(at, end - at));
        }
      }
    }
    return text;
  }

  std::mt19937_64 rng_;
};

// --- Checks ----------------------------------------------------------------------------------

bool IsCleanText(const std::string& s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return IsValidUtf8(s);
}

std::vector<std::string> MessageProblems(const api::ParsedPipeline& parsed) {
  std::vector<std::string> out;
  if (parsed.errors.size() > api::limits::kMaxErrors + 1) {
    out.push_back("more errors than the limit: " + std::to_string(parsed.errors.size()));
  }
  for (const api::FieldError& e : parsed.errors) {
    const std::string text = e.ToString();
    if (!IsCleanText(text)) out.push_back("raw bytes in " + QuoteUserText(text, 200));
    if (text.size() > kLongestMessage) {
      out.push_back("a message of " + std::to_string(text.size()) +
                    " bytes: " + QuoteUserText(text, 200));
    }
  }
  return out;
}

struct PlanCheck {
  int max_replicas = 0;
  std::vector<std::string> problems;

  void Finite(double v, const std::string& what) {
    if (!std::isfinite(v)) problems.push_back(what + " is " + std::to_string(v));
  }
  void Replicas(int v, const std::string& what) {
    if (v < 0 || v > max_replicas) {
      problems.push_back(what + " has " + std::to_string(v) + " replicas");
    }
  }
};

void CheckAccuracyScaling(const model::AccuracyScalingPlan& loki, PlanCheck& c);
void CheckPools(const model::PoolPlan& pools, PlanCheck& c);

std::vector<std::string> PlanProblems(const model::Plan& plan, int max_replicas) {
  PlanCheck c{.max_replicas = max_replicas};
  for (const model::TaskPlan& t : plan.tasks) {
    const std::string at = "task " + t.task + "/" + t.hardware_class;
    c.Replicas(t.replicas, at);
    c.Finite(t.latency_ms, at + " latencyMs");
    c.Finite(t.queue_ms, at + " queueMs");
    c.Finite(t.load_rps, at + " loadRps");
  }
  for (const model::PathPlan& p : plan.paths) c.Finite(p.predicted_latency_ms, "path " + p.name);
  c.Finite(plan.report.objective.value, "objective");
  c.Finite(plan.served_fraction, "servedFraction");
  c.Finite(plan.cost_per_hour, "costPerHour");
  if (const auto* loki = plan.accuracy_scaling()) CheckAccuracyScaling(*loki, c);
  if (const auto* pools = plan.pools()) CheckPools(*pools, c);
  if (plan.report.status == model::SolveStatus::kInfeasible && plan.report.reasons.empty()) {
    c.problems.push_back("Infeasible without a reason");
  }
  return c.problems;
}

void CheckAccuracyScaling(const model::AccuracyScalingPlan& loki, PlanCheck& c) {
  c.Finite(loki.accuracy, "accuracy");
  for (const model::VariantPath& v : loki.variant_paths) {
    c.Finite(v.share, "variant path share");
    c.Finite(v.latency_ms, "variant path latency");
  }
  for (const model::VariantRoute& r : loki.routing) {
    for (const auto& [variant, fraction] : r.to) c.Finite(fraction, "routing to " + variant);
  }
  for (const model::BackupWorker& b : loki.backups) c.Finite(b.spare_rps, "backup spare");
}

void CheckPools(const model::PoolPlan& pools, PlanCheck& c) {
  if (pools.upper_bound_qps) c.Finite(*pools.upper_bound_qps, "upperBoundQps");
  for (const model::Pool& pool : pools.pools) {
    c.Finite(pool.qos_ms, "pool " + pool.task + " qosMs");
    c.Finite(pool.upper_bound_qps, "pool " + pool.task + " upperBoundQps");
    for (const model::PoolMember& m : pool.members) {
      c.Replicas(m.replicas, "pool " + pool.task + "/" + m.hardware_class);
      c.Finite(m.capacity_rps, "pool member capacity");
      c.Finite(m.coefficient, "pool member coefficient");
    }
  }
  for (double f : pools.forecast_rps) c.Finite(f, "forecast");
}

// --- The run ---------------------------------------------------------------------------------

struct Corpus {
  std::vector<json> documents;
  std::vector<std::string> yaml_texts;
};

Corpus LoadExamples() {
  Corpus corpus;
  const std::filesystem::path dir = std::filesystem::path(PIPESCALE_SOURCE_DIR) / "deploy/examples";
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());  // the same order on every machine
  for (const auto& file : files) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    auto doc = api::ParseDocument(text.str());
    EXPECT_TRUE(doc.ok()) << file;
    if (!doc.ok()) continue;
    corpus.documents.push_back(*doc);
    corpus.yaml_texts.push_back(text.str());
  }
  return corpus;
}

struct Stats {
  std::int64_t cases = 0;
  std::int64_t valid = 0;
  std::int64_t solves = 0;
  double generate_ms = 0;  // where the time goes: making cases, parsing, solving
  double parse_ms = 0;
  double solve_ms = 0;
  double slowest_ms = 0;
  std::string slowest;
  std::vector<std::string> failures;
};

optimizer::PlannerInput RandomInput(Mutator& m, const model::Pipeline& pipeline) {
  optimizer::PlannerInput input;
  if (m.Chance(0.5)) return input;
  const size_t steps = m.Pick<size_t>({1, 10, 100, 3000});
  for (const model::Path& p : pipeline.spec.paths) {
    std::vector<double>& series = input.history[p.name];
    for (size_t i = 0; i < steps; ++i) series.push_back(m.Pick<double>({0, 1, 50, 1e4, 1e9}));
    if (m.Chance(0.3)) input.late_paths.insert(p.name);
  }
  return input;
}

void SolveAll(Mutator& m, const model::Pipeline& pipeline, std::uint64_t seed, std::int64_t index,
              Stats& stats) {
  const double total = m.Pick<double>({0, 1e-9, 0.5, 1, 27, 400, 1e5, 1e7, 1e9});
  std::map<std::string, double> per_path;
  for (const model::Path& p : pipeline.spec.paths) {
    if (m.Chance(0.2)) per_path[p.name] = m.Pick<double>({0, 1e-6, 3, 1e9});
  }
  auto workload = api::MakeWorkload(pipeline, total, per_path);
  ASSERT_TRUE(workload.ok()) << workload.error().message;
  const optimizer::PlannerInput input = RandomInput(m, pipeline);
  const char* skip_env = std::getenv("PIPESCALE_FUZZ_SKIP");
  const std::string skip = "," + std::string(skip_env != nullptr ? skip_env : kDefaultSkip) + ",";
  for (const optimizer::Descriptor& d : optimizer::Optimizers()) {
    // What the CLI refuses to plan.
    if (d.needs_paths && pipeline.spec.paths.empty()) continue;
    if (!api::CheckPlannableBy(pipeline, d.name).empty()) continue;
    if (skip.find("," + std::string(d.name) + ",") != std::string::npos) continue;
    SetCurrent(seed, index, std::string(d.name).c_str());
    const auto start = std::chrono::steady_clock::now();
    g_case_started_ms = NowMs();
    const model::Plan plan = d.solve(pipeline, *workload, input);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ++stats.solves;
    stats.solve_ms += ms;
    const std::string where = "case " + std::to_string(index) + " " + std::string(d.name);
    if (ms > stats.slowest_ms) {
      stats.slowest_ms = ms;
      stats.slowest = where;
    }
    static const double hang_ms = static_cast<double>(EnvInt("PIPESCALE_FUZZ_HANG_MS", kHangMs));
    if (ms > hang_ms) stats.failures.push_back(where + ": took " + std::to_string(ms) + " ms");
    for (const std::string& p : PlanProblems(plan, optimizer::kMaxReplicas)) {
      stats.failures.push_back(where + ": " + p);
    }
    for (const std::string& p : testing::CheckBounds(pipeline, plan)) {
      stats.failures.push_back(where + ": " + p);
    }
  }
}

void RunCase(const Corpus& corpus, std::uint64_t seed, std::int64_t index, Stats& stats) {
  SetCurrent(seed, index, "generate");
  g_case_started_ms = NowMs();
  Mutator m(seed + static_cast<std::uint64_t>(index));
  const size_t example = m.Below(corpus.documents.size());
  const bool yaml = m.Chance(0.15);
  const std::string text =
      yaml ? m.MutateYaml(corpus.yaml_texts[example]) : m.MutateJson(corpus.documents[example]);
  if (const char* dump = std::getenv("PIPESCALE_FUZZ_DUMP")) std::ofstream(dump) << text;
  SetCurrent(seed, index, "parse");
  const std::int64_t parse_start = NowMs();
  stats.generate_ms += static_cast<double>(parse_start - g_case_started_ms);
  g_case_started_ms = parse_start;
  const api::ParsedPipeline parsed = api::ParsePipeline(text);
  stats.parse_ms += static_cast<double>(NowMs() - parse_start);
  if (std::getenv("PIPESCALE_FUZZ_VERBOSE") != nullptr) {
    std::fprintf(stderr, "case %lld parse: %lld ms, %zu bytes, %s\n", static_cast<long long>(index),
                 static_cast<long long>(NowMs() - parse_start), text.size(),
                 yaml ? "yaml" : "json");
  }
  ++stats.cases;
  for (const std::string& p : MessageProblems(parsed)) {
    stats.failures.push_back("case " + std::to_string(index) + ": " + p);
  }
  if (!parsed.pipeline) return;
  ++stats.valid;
  SolveAll(m, *parsed.pipeline, seed, index, stats);
}

// Aborts a case that runs longer than any budget allows, naming it, instead of a silent CI
// timeout.
void Watchdog(const std::atomic<bool>& done) {
  const std::int64_t limit_seconds = EnvInt("PIPESCALE_FUZZ_WATCHDOG", kWatchdogSeconds);
  while (!done) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const std::int64_t started = g_case_started_ms;
    if (started > 0 && NowMs() - started > limit_seconds * 1000) {
      std::fprintf(stderr, "\n*** hung for %lld s in %s", static_cast<long long>(limit_seconds),
                   g_current);
      std::abort();
    }
  }
}

TEST(PipelineFuzz, NoCrashHangOrAbsurdPlan) {
  const std::uint64_t seed = static_cast<std::uint64_t>(
      EnvInt("PIPESCALE_FUZZ_SEED", static_cast<std::int64_t>(kDefaultSeed)));
  const std::int64_t cases = EnvInt("PIPESCALE_FUZZ_CASES", kDefaultCases);
  const std::int64_t only = EnvInt("PIPESCALE_FUZZ_ONLY", -1);
  const std::int64_t first = EnvInt("PIPESCALE_FUZZ_FIRST", 0);
  const Corpus corpus = LoadExamples();
  ASSERT_FALSE(corpus.documents.empty());
  for (int signal : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) std::signal(signal, OnCrash);
  std::atomic<bool> done{false};
  std::thread watchdog(Watchdog, std::cref(done));

  Stats stats;
  const auto start = std::chrono::steady_clock::now();
  const bool verbose = std::getenv("PIPESCALE_FUZZ_VERBOSE") != nullptr;
  for (std::int64_t i = only >= 0 ? only : first; i < (only >= 0 ? only + 1 : first + cases); ++i) {
    const std::int64_t case_start = NowMs();
    RunCase(corpus, seed, i, stats);
    if (verbose)
      std::fprintf(stderr, "case %lld: %lld ms\n", static_cast<long long>(i),
                   static_cast<long long>(NowMs() - case_start));
  }
  done = true;
  watchdog.join();
  for (int signal : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) std::signal(signal, SIG_DFL);

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "%lld cases (%lld valid, %lld solves) in %.1f s (generating %.1f s, parsing %.1f s, "
      "solving %.1f s); slowest solve %.0f ms (%s)\n",
      static_cast<long long>(stats.cases), static_cast<long long>(stats.valid),
      static_cast<long long>(stats.solves), seconds, stats.generate_ms / 1000,
      stats.parse_ms / 1000, stats.solve_ms / 1000, stats.slowest_ms, stats.slowest.c_str());
  const size_t kShown = verbose ? stats.failures.size() : 30;
  for (size_t i = 0; i < std::min(kShown, stats.failures.size()); ++i) {
    ADD_FAILURE() << stats.failures[i];
  }
  EXPECT_TRUE(stats.failures.empty()) << stats.failures.size() << " failures (seed " << seed << ")";
}

}  // namespace
}  // namespace pipescale
