// The status's one JSON form: what the writer renders reads back as it was, and whatever a person
// or an older operator left in a status reads without a crash, keeping what is valid.
#include "api/status_json.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "api/routing_parse.h"
#include "unit/api/status_samples.h"

namespace pipescale::api {
namespace {

using nlohmann::json;

// ReadStatus without its log line: the tests look at what was dropped themselves.
model::PipelineStatus Read(const json& status, std::vector<std::string>* dropped = nullptr) {
  std::vector<std::string> ignored;
  return ReadStatus(status, "", dropped != nullptr ? dropped : &ignored);
}

TEST(StatusJson, ReadsBackEveryStatusItWrites) {
  testing::StatusSampler sampler(25);
  for (int i = 0; i < 500; ++i) {
    const model::PipelineStatus s = sampler.Next();
    const json written = StatusToJson(s);
    std::vector<std::string> dropped;
    EXPECT_EQ(Read(written, &dropped), s) << written.dump() << "\nreads back as\n"
                                          << StatusToJson(Read(written)).dump();
    EXPECT_TRUE(dropped.empty()) << dropped.front();
    // And through the JSON text, as the API server keeps it.
    EXPECT_EQ(Read(json::parse(written.dump())), s) << written.dump();
  }
}

TEST(StatusJson, WritesTheShapeTheCrdDeclares) {
  model::PipelineStatus s;
  s.observed_generation = 3;
  s.conditions = {{.type = "Ready",
                   .status = "True",
                   .reason = "Reconciled",
                   .observed_generation = 3,
                   .last_transition_time = "2026-11-27T09:48:33Z"}};
  s.plan = model::AppliedPlan{
      .plan = {.tasks = {{.task = "detect",
                          .variant = "small",
                          .hardware_class = "cpu",
                          .replicas = 2,
                          .batch_size = 4,
                          .latency_ms = 12.3456,
                          .batch_wait_ms = 7}},
               .paths = {{.name = "p", .slo_ms = 500, .predicted_latency_ms = 99.999}},
               .report = {.optimizer = "fa2", .solve_ms = 3},
               .cost_per_hour = 0.2},
      .deployments = {"shop-detect-small-cpu"}};
  s.total_replicas = 2;
  s.cost_per_hour = 0.20000001;
  s.capacity = std::vector<model::ClassCapacity>{
      {.hardware_class = "cpu", .nodes = 2, .placeable = 0, .scheduled = 3, .full_reason = "cpu"}};
  s.memory = model::StatusMemory{.recommendations = {{.since = 1000, .replicas = {{"d", 2}}}}};
  EXPECT_EQ(StatusToJson(s), json::parse(R"({
    "observedGeneration": 3,
    "conditions": [{"type": "Ready", "status": "True", "reason": "Reconciled",
                    "observedGeneration": 3, "lastTransitionTime": "2026-11-27T09:48:33Z"}],
    "plan": {"costPerHour": 0.2, "servedFraction": 1,
             "tasks": [{"task": "detect", "variant": "small", "hardwareClass": "cpu",
                        "deployment": "shop-detect-small-cpu", "replicas": 2, "batchSize": 4,
                        "latencyMs": 12.35, "queueMs": 0, "loadRps": 0}],
             "paths": [{"name": "p", "sloMs": 500, "predictedLatencyMs": 100}]},
    "totalReplicas": 2,
    "costPerHour": 0.2,
    "capacity": [{"hardwareClass": "cpu", "nodes": 2, "scheduled": 3, "placeable": 0,
                  "limit": 3, "full": "cpu"}],
    "memory": {"recommendations": [{"since": 1000, "replicas": {"d": 2}}]}})"));
}

// A Loki plan's per-task budgetMs, which older operators wrote (a drop budget no router read),
// reads as nothing: not dropped as unknown, and not written back.
TEST(StatusJson, ALegacyDropBudgetIsReadAsNothing) {
  const json status = json::parse(R"({"plan": {"phase": "HardwareScaling", "accuracy": 1,
      "tasks": [{"task": "detect", "variant": "v", "hardwareClass": "gpu", "deployment": "d",
                 "replicas": 2, "batchSize": 4, "latencyMs": 10, "queueMs": 10, "loadRps": 5,
                 "budgetMs": 20}]}})");
  std::vector<std::string> dropped;
  const model::PipelineStatus read = Read(status, &dropped);
  EXPECT_TRUE(dropped.empty()) << dropped.front();
  ASSERT_TRUE(read.plan);
  ASSERT_EQ(read.plan->plan.tasks.size(), 1u);
  EXPECT_EQ(read.plan->plan.tasks[0].replicas, 2);
  EXPECT_FALSE(StatusToJson(read)["plan"]["tasks"][0].contains("budgetMs"));
}

// Every value a field could hold that it should not.
std::vector<json> Garbage() {
  return {json("NaN"),
          json("Infinity"),
          json("-1e999"),
          json(""),
          json(true),
          json(nullptr),
          json::array(),
          json::array({1, "a", nullptr, json::object()}),
          json::object(),
          json{{"a", {{"b", json::array()}}}},
          json(1.5),
          json(-1),
          json(1e308),
          json(std::numeric_limits<double>::infinity()),
          json(std::numeric_limits<double>::quiet_NaN()),
          json::parse("99999999999999999999"),
          json::parse("18446744073709551615"),
          json::parse("-9223372036854775808")};
}

// Every member and item under `value`, as JSON pointers.
void Pointers(const json& value, const json::json_pointer& at,
              std::vector<json::json_pointer>& out) {
  if (value.is_object()) {
    for (const auto& [key, v] : value.items()) {
      out.push_back(at / key);
      Pointers(v, at / key, out);
    }
  } else if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) {
      out.push_back(at / i);
      Pointers(value[i], at / i, out);
    }
  }
}

// Garbage of every kind at every field of varied statuses: the read never throws, keeps every
// other part of the status as it was, and what it writes back reads back the same (so the
// operator rewrites such a status once, not at every reconcile).
TEST(StatusJson, GarbageAtAnyFieldKeepsTheRest) {
  testing::StatusSampler sampler(7);
  int reads = 0;
  for (int i = 0; i < 12; ++i) {
    const json good = StatusToJson(sampler.Next());
    std::vector<json::json_pointer> pointers;
    Pointers(good, json::json_pointer(), pointers);
    for (const json::json_pointer& at : pointers) {
      const std::string top = at.to_string().substr(1, at.to_string().find('/', 1) - 1);
      for (const json& garbage : Garbage()) {
        json bad = good;
        bad[at] = garbage;
        model::PipelineStatus read;
        ASSERT_NO_THROW(read = Read(bad)) << at << " = " << garbage.dump();
        const json rewritten = StatusToJson(read);
        for (const auto& [key, value] : good.items()) {
          if (key != top) {
            EXPECT_EQ(rewritten.value(key, json()), value) << at << ": " << key;
          }
        }
        EXPECT_EQ(StatusToJson(Read(rewritten)), rewritten) << at << " = " << garbage.dump();
        ++reads;
      }
    }
  }
  EXPECT_GT(reads, 1000);
}

TEST(StatusJson, AStatusOfTheWrongShapeReadsAsNone) {
  for (const json& status : {json("text"), json::array(), json(5), json(nullptr), json::object()}) {
    std::vector<std::string> dropped;
    EXPECT_EQ(Read(status, &dropped), model::PipelineStatus{}) << status;
    EXPECT_EQ(dropped.empty(), status.is_null() || status.is_object()) << status;
  }
  // Arrays where objects belong, and objects where arrays do.
  std::vector<std::string> dropped;
  const model::PipelineStatus read = Read(json::parse(R"({
    "plan": [], "solver": 3, "observed": [1], "memory": "x", "conditions": {"type": "Ready"},
    "capacity": {"cpu": 1}, "unschedulable": "d", "observedGeneration": 4})"),
                                          &dropped);
  EXPECT_EQ(read, model::PipelineStatus{.observed_generation = 4});
  EXPECT_EQ(dropped.size(), 7u);
}

TEST(StatusJson, KeepsTheValidPartsOfAMalformedStatus) {
  std::vector<std::string> dropped;
  const model::PipelineStatus read = Read(json::parse(R"({
    "observedGeneration": 1e30,
    "totalReplicas": 99999999999,
    "costPerHour": "NaN",
    "conditions": [{"type": "Ready"}, 7, {"type": "Feasible", "status": "True", "reason": 5}],
    "plan": {"tasks": [{"deployment": "d", "replicas": "3", "batchSize": 8, "extra": 1},
                       1, "two", null,
                       {"deployment": 3, "replicas": 2, "batchSize": 1e300}],
             "phase": "Sideways"},
    "observed": {"pathRates": {"p": 12.5, "q": "fast"}, "arrivalRate": -1},
    "memory": {"recommendations": [{"since": 5, "replicas": {"a": 2}}],
               "queryMix": [{"size": 1, "weight": 1}], "guardQuietUntil": "never",
               "headroom": {"paths": {"p": {"headroom": 1.3, "raisedFrom": "x"}, "q": 4,
                                      "r": {"headroom": 1.1, "why": 1}},
                            "quietUntil": 7, "heldUntil": null}},
    "foo": {"bar": 1}})"),
                                          &dropped);
  EXPECT_EQ(read.observed_generation, 0);
  EXPECT_FALSE(read.total_replicas);
  EXPECT_FALSE(read.cost_per_hour);
  ASSERT_EQ(read.conditions.size(), 1u);
  EXPECT_EQ(read.conditions[0].type, "Feasible");
  EXPECT_EQ(read.conditions[0].reason, "");
  ASSERT_TRUE(read.plan);
  ASSERT_EQ(read.plan->plan.tasks.size(), 2u);
  EXPECT_EQ(read.plan->deployments, (std::vector<std::string>{"d", ""}));
  EXPECT_EQ(read.plan->plan.tasks[0].batch_size, 8);
  EXPECT_EQ(read.plan->plan.tasks[1].replicas, 2);
  EXPECT_EQ(read.plan->Find("d"), &read.plan->plan.tasks[0]);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(read.plan->plan.detail));
  ASSERT_TRUE(read.observed);
  EXPECT_EQ(read.observed->path_rates_rps, (std::map<std::string, double>{{"p", 12.5}}));
  EXPECT_EQ(read.observed->arrival_rate_rps, -1);
  ASSERT_TRUE(read.memory);
  EXPECT_EQ(read.memory->recommendations.size(), 1u);
  EXPECT_TRUE(read.memory->query_mix.empty()) << "a mix without queryMixFor is forgotten";
  EXPECT_FALSE(read.memory->guard_quiet_until);
  // A path's headroom keeps what reads (a missing raisedFrom is 1); a path that is no object goes.
  EXPECT_EQ(read.memory->headroom,
            (model::Headroom{.paths = {{"p", {.headroom = 1.3, .raised_from = 1}},
                                       {"r", {.headroom = 1.1, .raised_from = 1}}},
                             .quiet_until = 7,
                             .held_until = 0}));
  for (const char* expected :
       {"status.observedGeneration: must be an integer, got 1e+30",
        "status.totalReplicas: must be at most 2147483647, got 99999999999",
        "status.costPerHour: must be a number",
        "status.conditions[0]: no type, or a status other than True, False and Unknown",
        "status.conditions[1]: must be an object",
        "status.plan.tasks[0].replicas: must be an integer",
        "status.plan.tasks[0].extra: unknown field",
        "status.plan.phase: must be HardwareScaling, AccuracyScaling or Overloaded",
        "status.observed.pathRates.q: must be a number", "status.foo: unknown field",
        "status.memory.headroom.paths.p.raisedFrom: must be a number",
        "status.memory.headroom.paths.r.why: unknown field"}) {
    // Reported as api::Reader reports any field: the path, then what is wrong with it.
    EXPECT_NE(std::find_if(dropped.begin(), dropped.end(),
                           [&](const std::string& d) { return d.rfind(expected, 0) == 0; }),
              dropped.end())
        << expected;
  }
}

TEST(StatusJson, OneLogLineNamesWhatWasDropped) {
  ::testing::internal::CaptureStderr();
  const model::PipelineStatus read = ReadStatus(json{{"foo", 1}, {"totalReplicas", -3}}, "ns/p");
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(read, model::PipelineStatus{});
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
  EXPECT_NE(log.find("ns/p"), std::string::npos) << log;
  EXPECT_NE(log.find("status.foo: unknown field"), std::string::npos) << log;
  EXPECT_NE(log.find("status.totalReplicas"), std::string::npos) << log;

  ::testing::internal::CaptureStderr();
  (void)ReadStatus(StatusToJson(testing::StatusSampler(1).Next()), "ns/p");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "") << "nothing dropped, nothing said";
}

TEST(StatusJson, ConditionsAloneReadAsInTheStatus) {
  const json conditions = json::parse(R"([{"type": "Ready", "status": "False", "message": ""},
                                         {"status": "True"}, "x"])");
  const std::vector<model::Condition> read = ReadConditions(conditions);
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].status, "False");
  EXPECT_EQ(ConditionsToJson(read), json::parse(R"([{"type": "Ready", "status": "False"}])"));
  EXPECT_TRUE(ReadConditions(json("x")).empty());
}

// A pools plan is read by one reader whether it comes from the status or from the routing
// ConfigMap: the same field is wrong in the same words, and the replica bound is the same.
TEST(StatusJson, APlanIsReadAsTheRoutingConfigMapReadsIt) {
  const json pools = json::parse(R"([{"task": "t", "qosMs": 100, "members": [
      {"hardwareClass": "gpu", "replicas": 10001, "maxQuery": 8, "coefficient": 2,
       "capacityRps": 5}]}])");
  std::vector<std::string> dropped;
  const model::PipelineStatus read = Read({{"plan", {{"pools", pools}}}}, &dropped);
  ASSERT_TRUE(read.plan && read.plan->plan.pools());
  EXPECT_EQ(read.plan->plan.pools()->pools.at(0).members.at(0).hardware_class, "gpu");
  const auto routing = ParsePoolsRouting(json{{"optimizer", "kairos"}, {"pools", pools}}.dump());
  ASSERT_FALSE(routing.ok());
  EXPECT_EQ(routing.error().message,
            "pools.json: pools[0].members[0].replicas: must be at most 10000, got 10001");
  for (const char* expected :
       {"status.plan.pools[0].members[0].replicas: must be at most 10000, got 10001",
        "status.plan.pools[0].members[0].coefficient: must be in [0, 1], got 2"}) {
    EXPECT_NE(std::find(dropped.begin(), dropped.end(), expected), dropped.end()) << expected;
  }
}

}  // namespace
}  // namespace pipescale::api
