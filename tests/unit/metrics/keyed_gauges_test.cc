// Gauges kept by owner: each owner's parts are replaced whole and forgotten whole, and a scrape
// renders exactly what is kept.
#include "metrics/keyed_gauges.h"

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <map>
#include <random>
#include <set>

namespace pipescale::metrics {
namespace {

using Sample = KeyedGauges::Sample;

KeyedGauges TwoFamilies() {
  return KeyedGauges({{"pipescale_a", "first"}, {"pipescale_b", "second"}});
}

// (family name, sorted labels, value) of every series a scrape renders.
std::multiset<std::tuple<std::string, std::string, double>> Scraped(const KeyedGauges& g) {
  std::multiset<std::tuple<std::string, std::string, double>> out;
  for (const auto& family : g.Collect()) {
    for (const auto& m : family.metric) {
      std::string labels;
      for (const auto& l : m.label) labels += l.name + "=" + l.value + ",";
      out.insert({family.name, labels, m.gauge.value});
    }
  }
  return out;
}

TEST(KeyedGauges, RendersAsPrometheusTextWithEveryFamilyDeclared) {
  KeyedGauges g = TwoFamilies();
  g.Set("ns/p", "plan", {{0, {{"pipeline", "p"}, {"namespace", "ns"}}, 3}});
  const std::string text = prometheus::TextSerializer().Serialize(g.Collect());
  EXPECT_NE(text.find("pipescale_a{namespace=\"ns\",pipeline=\"p\"} 3"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE pipescale_b gauge"), std::string::npos) << text;
}

// The property, over random sequences of Set and Forget on three owners and two parts: a scrape
// holds exactly the last Set of every (owner, part) not forgotten since.
TEST(KeyedGauges, AScrapeHoldsTheLastSetOfEveryPartNotForgotten) {
  std::mt19937 rng(11);
  const std::vector<std::string> owners = {"ns/a", "ns/b", "other/a"};
  const std::vector<std::string> parts = {"plan", "conditions"};
  for (int run = 0; run < 50; ++run) {
    KeyedGauges g = TwoFamilies();
    std::map<std::pair<std::string, std::string>, std::vector<Sample>> model;
    for (int step = 0; step < 40; ++step) {
      const std::string& owner = owners[rng() % owners.size()];
      if (rng() % 5 == 0) {
        g.Forget(owner);
        std::erase_if(model, [&](const auto& kv) { return kv.first.first == owner; });
        continue;
      }
      const std::string& part = parts[rng() % parts.size()];
      std::vector<Sample> samples;
      for (size_t i = rng() % 4; i > 0; --i) {
        samples.push_back({rng() % 2,
                           {{"owner", owner}, {"i", std::to_string(i)}},
                           static_cast<double>(rng() % 100)});
      }
      g.Set(owner, part, samples);
      model[{owner, part}] = samples;
    }
    std::multiset<std::tuple<std::string, std::string, double>> expected;
    for (const auto& [key, samples] : model) {
      for (const Sample& s : samples) {
        std::string labels;
        for (const auto& [name, value] : s.labels) labels += name + "=" + value + ",";
        expected.insert({s.family == 0 ? "pipescale_a" : "pipescale_b", labels, s.value});
      }
    }
    EXPECT_EQ(Scraped(g), expected);
  }
}

}  // namespace
}  // namespace pipescale::metrics
