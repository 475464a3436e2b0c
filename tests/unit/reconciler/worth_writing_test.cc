// When a decided status is worth a write: measurements within their jitter are not, anything
// else that differs is, and status.memory is compared exactly.
#include "reconciler/worth_writing.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

namespace pipescale::reconciler {
namespace {

using nlohmann::json;

// A status as the operator writes it: a plan, what was observed, and the memory.
json Written() {
  return json::parse(R"({
    "observedGeneration": 3,
    "conditions": [{"type": "Ready", "status": "True", "reason": "Planned",
                    "lastTransitionTime": "2026-12-01T10:00:00Z"},
                   {"type": "Feasible", "status": "False", "reason": "OverCapacity",
                    "message": "hardware class gpu: the SLOs need 2 replicas and it allows 0 now",
                    "lastTransitionTime": "2026-12-01T10:00:00Z"}],
    "plan": {"tasks": [{"task": "detect", "replicas": 4, "batchSize": 8, "latencyMs": 31.5,
                        "queueMs": 12.25, "loadRps": 118.4, "deployment": "shop-detect"}],
             "paths": [{"name": "p", "sloMs": 500, "predictedLatencyMs": 287.5}],
             "costPerHour": 0.4, "servedFraction": 1.0},
    "totalReplicas": 4,
    "costPerHour": 0.4,
    "observed": {"pathRates": {"p": 120.3}, "dataPlane": {"dropsPerSecond": {"budget": 0.0}}},
    "memory": {"recommendations": [{"since": 1764583200.5, "replicas": {"shop-detect": 4}}],
               "guardQuietUntil": 1764583260.25}
  })");
}

// Every floating-point number in `status` outside status.memory and the predictions, as a
// reference to change.
void Measurements(json& value, bool top, std::vector<json*>& out) {
  if (value.is_number_float()) out.push_back(&value);
  if (value.is_array()) {
    for (json& item : value) Measurements(item, false, out);
  }
  if (!value.is_object()) return;
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (!(top && it.key() == "memory") && !IsPrediction(it.key())) {
      Measurements(it.value(), false, out);
    }
  }
}

TEST(WorthWriting, TheSameStatusIsNot) { EXPECT_FALSE(WorthWriting(Written(), Written())); }

// The property: moving every measurement at once by less than the jitter is not worth a write;
// moving any one of them by more than it is. 200 draws.
TEST(WorthWriting, MeasurementsWithinTheirJitterAreNotRewrittenAndBeyondItAre) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> within(-0.9 * kStatusJitter, 0.9 * kStatusJitter);
  for (int draw = 0; draw < 100; ++draw) {
    json decided = Written();
    std::vector<json*> values;
    Measurements(decided, true, values);
    ASSERT_GE(values.size(), 7U);
    for (json* v : values) *v = v->get<double>() * (1 + within(rng) / (1 + kStatusJitter));
    EXPECT_FALSE(WorthWriting(Written(), decided)) << decided.dump();

    json moved = Written();
    values.clear();
    Measurements(moved, true, values);
    json* one = values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng)];
    const double was = one->get<double>();
    *one = was == 0 ? 1.0 : was * (1 + 1.5 * kStatusJitter);
    EXPECT_TRUE(WorthWriting(Written(), moved)) << moved.dump();
  }
}

// A prediction that moved on its own (the queue near saturation: 12 -> 40 ms for a 2% move of the
// rate) is no write; with its rate beyond the jitter, or with the plan, it goes out.
TEST(WorthWriting, APredictionGoesOutOnlyWithWhatItPredictsFrom) {
  json decided = Written();
  decided["plan"]["tasks"][0]["queueMs"] = 40.0;
  decided["plan"]["paths"][0]["predictedLatencyMs"] = 480.5;
  decided["plan"]["tasks"][0]["loadRps"] = 118.4 * 1.02;
  EXPECT_FALSE(WorthWriting(Written(), decided));
  json faster = decided;
  faster["plan"]["tasks"][0]["loadRps"] = 118.4 * 1.2;
  EXPECT_TRUE(WorthWriting(Written(), faster));
  json replanned = decided;
  replanned["plan"]["tasks"][0]["replicas"] = 5;
  EXPECT_TRUE(WorthWriting(Written(), replanned));
  // A prediction where there was none (or the reverse) is a change of shape, written.
  json fresh = Written();
  fresh["plan"]["paths"][0].erase("predictedLatencyMs");
  EXPECT_TRUE(WorthWriting(fresh, Written()));
  EXPECT_TRUE(WorthWriting(Written(), fresh));
}

// A condition's message that differs only in its numbers (a rate that moved 1% across a replica
// boundary) is no write; it goes out with the rate beyond the jitter, or with any other change.
TEST(WorthWriting, ADescriptionGoesOutOnlyWithWhatItDescribes) {
  json decided = Written();
  decided["conditions"][1]["message"] =
      "hardware class gpu: the SLOs need 3 replicas and it allows 0.5 now";
  EXPECT_FALSE(WorthWriting(Written(), decided));
  json faster = decided;
  faster["observed"]["pathRates"]["p"] = 120.3 * 1.2;
  EXPECT_TRUE(WorthWriting(Written(), faster));
  json dropped = decided;
  dropped["conditions"][1]["message"] = "hardware class gpu: the SLOs need 3 replicas";
  EXPECT_TRUE(WorthWriting(Written(), dropped));
}

// SameWords over generated sentences: any numbers in the same places read the same; one word
// changed, a word added, or a number where a word was, does not. 300 draws.
TEST(WorthWriting, SameWordsMasksNumbersAndNothingElse) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> number(0, 1e4);
  const std::vector<std::string> words = {"task", "needs", "replicas", "of", "gpu", "now."};
  for (int draw = 0; draw < 300; ++draw) {
    std::string a;
    std::string b;
    std::string other;
    const int n = std::uniform_int_distribution<int>(1, 8)(rng);
    const int changed = std::uniform_int_distribution<int>(0, n - 1)(rng);
    for (int k = 0; k < n; ++k) {
      const bool is_number = std::bernoulli_distribution(0.4)(rng);
      const std::string& word = words[rng() % words.size()];
      a += (is_number ? std::to_string(number(rng)) : word) + " ";
      b += (is_number ? std::to_string(static_cast<int>(number(rng))) : word) + " ";
      other += k != changed ? (is_number ? "7" : word) : is_number ? "x" : word + "s";
      other += " ";
    }
    EXPECT_TRUE(SameWords(a, b)) << a << " | " << b;
    EXPECT_FALSE(SameWords(a, other)) << a << " | " << other;
    EXPECT_FALSE(SameWords(a, a + "more")) << a;
  }
}

// What is not a measurement is written on any change.
TEST(WorthWriting, AnyOtherChangeIs) {
  const std::vector<std::function<void(json&)>> changes = {
      [](json& s) { s["plan"]["tasks"][0]["replicas"] = 5; },
      [](json& s) { s["plan"]["tasks"][0]["deployment"] = "shop-detect-gpu"; },
      [](json& s) { s["conditions"][0]["status"] = "False"; },
      [](json& s) {
        s["conditions"][1]["message"] = "hardware class cpu: the SLOs need 2 replicas";
      },
      [](json& s) { s["conditions"][1]["reason"] = "Infeasible"; },
      [](json& s) { s["observedGeneration"] = 4; },
      [](json& s) { s["observed"]["pathRates"]["q"] = 1.0; },
      [](json& s) { s["observed"]["pathRates"].erase("p"); },
      [](json& s) { s["plan"]["tasks"].push_back(s["plan"]["tasks"][0]); },
      [](json& s) { s.erase("costPerHour"); },
      // The memory is what a new leader resumes from: exact, to the half second.
      [](json& s) { s["memory"]["recommendations"][0]["since"] = 1764583201.0; },
      [](json& s) { s["memory"]["guardQuietUntil"] = 1764583260.5; },
  };
  for (size_t i = 0; i < changes.size(); ++i) {
    json decided = Written();
    changes[i](decided);
    EXPECT_TRUE(WorthWriting(Written(), decided)) << "change " << i << ": " << decided.dump();
  }
  EXPECT_TRUE(WorthWriting(json(), Written()));  // the first status
}

// The apiserver hands a float that is a whole number back as an integer (and JSON parsers read
// positive integers as unsigned): the same status, not a change.
TEST(WorthWriting, TheServersRenderingOfTheSameNumbersIsNotAChange) {
  json decided = Written();
  decided["plan"]["servedFraction"] = 1.0;
  decided["memory"]["recommendations"][0]["since"] = 1764583200.0;
  json written = json::parse(decided.dump());
  written["plan"]["servedFraction"] = 1;
  written["memory"]["recommendations"][0]["since"] = 1764583200;
  EXPECT_FALSE(WorthWriting(written, decided));
}

// Near zero the floor rules: a drop rate of 0.004/s after none is not news.
TEST(WorthWriting, ValuesNearZeroMoveByTheFloor) {
  json decided = Written();
  decided["observed"]["dataPlane"]["dropsPerSecond"]["budget"] = kStatusJitterFloor / 2;
  EXPECT_FALSE(WorthWriting(Written(), decided));
  decided["observed"]["dataPlane"]["dropsPerSecond"]["budget"] = kStatusJitterFloor * 3;
  EXPECT_TRUE(WorthWriting(Written(), decided));
}

}  // namespace
}  // namespace pipescale::reconciler
