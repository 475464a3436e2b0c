// Batches formed in the router: when a batch goes out, which requests may share one, and that
// cutting an answer back gives each request exactly its own rows.
#include "routing/batching.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "support/mutate.h"

namespace pipescale::routing {
namespace {

using nlohmann::json;

TEST(BatchFormer, FullAtTheBatchSizeOrWhenTheFirstHasWaitedItsBudget) {
  BatchFormer f(4, 10);
  f.Add(1, 1, 0);
  f.Add(2, 2, 1);
  EXPECT_TRUE(f.Take(5).empty()) << "3 rows of 4, 5 ms of 10";
  EXPECT_EQ(f.DueMs(), 10);
  f.Add(3, 2, 6);
  EXPECT_EQ(f.Take(6), (std::vector<std::uint64_t>{1, 2})) << "3 fits, 3 + 2 does not";
  EXPECT_EQ(f.DueMs(), 16) << "the next batch's first came at 6";
  EXPECT_TRUE(f.Take(15).empty());
  EXPECT_EQ(f.Take(16), (std::vector<std::uint64_t>{3}));
  f.Add(4, 9, 20);  // larger than a batch: alone, at once
  EXPECT_EQ(f.Take(20), (std::vector<std::uint64_t>{4}));
  f.Add(5, 1, 30);
  EXPECT_TRUE(f.Remove(5));
  EXPECT_FALSE(f.Remove(5));
  EXPECT_TRUE(f.Take(100).empty());
  EXPECT_EQ(f.waiting(), 0u);
}

// Over random arrivals: every request leaves in exactly one batch, in arrival order; no batch
// holds more rows than the batch size unless it is one request; a batch goes out before its
// first request has waited past the budget, given a Take at every event and at each due time.
TEST(BatchFormer, InvariantsOverRandomArrivals) {
  std::mt19937 rng(2);
  BatchFormer f(8, 5);
  std::map<std::uint64_t, std::pair<int, double>> sent;  // id -> rows, arrival
  std::uint64_t next = 0, expected = 0;
  double now = 0;
  const auto take = [&] {
    const auto batch = f.Take(now);
    int rows = 0;
    for (std::uint64_t id : batch) {
      ASSERT_EQ(id, expected++);
      rows += sent[id].first;
    }
    if (batch.size() > 1) {
      ASSERT_LE(rows, 8);
    }
    if (!batch.empty()) {
      ASSERT_LE(now - sent[batch[0]].second, 5 + 1e-9);
    }
  };
  for (int i = 0; i < 20000; ++i) {
    const double arrival = now + std::exponential_distribution<double>(1)(rng);
    while (f.DueMs() <= arrival) {
      now = f.DueMs();
      take();
    }
    now = arrival;
    const int rows = std::uniform_int_distribution<int>(1, 10)(rng);
    sent[next] = {rows, now};
    f.Add(next++, rows, now);
    take();
  }
  while (f.waiting() > 0) {
    now = f.DueMs();
    take();
  }
  EXPECT_EQ(expected, next);
}

json Tensor(const std::string& name, std::vector<int> shape, int first) {
  json data = json::array();
  int n = 1;
  for (int d : shape) n *= d;
  for (int i = 0; i < n; ++i) data.push_back(first + i);
  return {{"name", name}, {"datatype", "INT32"}, {"shape", shape}, {"data", data}};
}

// The numbers of a (possibly nested) array, in order.
std::vector<int> Leaves(const json& data) {
  std::vector<int> out;
  for (const json& e : data) {
    if (e.is_array()) {
      for (int v : Leaves(e)) out.push_back(v);
    } else {
      out.push_back(e.get<int>());
    }
  }
  return out;
}

TEST(BatchKey, SameNamesTypesAndInnerDimensionsShareABatch) {
  const auto key = [](const json& inputs) { return KeyOf(inputs.dump()); };
  const auto a = key({Tensor("x", {2, 3}, 0), Tensor("y", {2}, 0)});
  const auto b = key({Tensor("x", {5, 3}, 0), Tensor("y", {5}, 0)});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->signature, b->signature);
  EXPECT_EQ(a->rows, 2);
  EXPECT_EQ(b->rows, 5);
  EXPECT_NE(key({Tensor("x", {2, 4}, 0), Tensor("y", {2}, 0)})->signature, a->signature);
  EXPECT_NE(key({Tensor("z", {2, 3}, 0), Tensor("y", {2}, 0)})->signature, a->signature);
  EXPECT_FALSE(key({Tensor("x", {2, 3}, 0), Tensor("y", {3}, 0)}).ok()) << "rows disagree";
  EXPECT_FALSE(KeyOf(R"([{"name": "x", "data": [1]}])").ok()) << "no shape";
}

// Stacked, served by an identity model and cut back, each request gets exactly its own data,
// for random rows and inner shapes, with data flat or one element per row.
TEST(StackAndSplit, EachRequestGetsItsOwnRowsBack) {
  std::mt19937 rng(4);
  for (int trial = 0; trial < 300; ++trial) {
    const int inner = std::uniform_int_distribution<int>(1, 4)(rng);
    const int n = std::uniform_int_distribution<int>(1, 6)(rng);
    std::vector<json> requests;
    std::vector<std::string> texts;
    std::vector<std::string_view> views;
    std::vector<int> rows;
    for (int r = 0; r < n; ++r) {
      rows.push_back(std::uniform_int_distribution<int>(1, 5)(rng));
      requests.push_back(json::array({Tensor("x", {rows.back(), inner}, 100 * r)}));
      texts.push_back(requests.back().dump());
    }
    for (const std::string& t : texts) views.push_back(t);
    auto stacked = StackInputs(views);
    ASSERT_TRUE(stacked.ok()) << stacked.error().message;
    json batch = json::parse(*stacked);
    int total = 0;
    for (int r : rows) total += r;
    ASSERT_EQ(batch[0]["shape"], json({total, inner}));
    if (trial % 2 == 1) {  // the model answers with one nested element per row
      json nested = json::array();
      for (int i = 0; i < total; ++i) {
        nested.push_back(json(std::vector<json>(batch[0]["data"].begin() + i * inner,
                                                batch[0]["data"].begin() + (i + 1) * inner)));
      }
      batch[0]["data"] = nested;
    }
    batch.push_back({{"name", "scalar"}, {"shape", {1}}, {"data", {7}}});  // whole to each
    auto split = SplitOutputs(batch.dump(), rows);
    ASSERT_TRUE(split.ok()) << split.error().message;
    ASSERT_EQ(split->size(), rows.size());
    for (int r = 0; r < n; ++r) {
      const json got = json::parse((*split)[r]);
      EXPECT_EQ(got[0]["shape"], requests[r][0]["shape"]);
      EXPECT_EQ(Leaves(got[0]["data"]), Leaves(requests[r][0]["data"]))
          << got.dump() << " vs " << requests[r].dump();
      EXPECT_EQ(got[1]["data"], json({7}));
    }
  }
}

TEST(StackAndSplit, AnAnswerThatDoesNotAddUpIsNamed) {
  const std::vector<int> rows = {1, 2};
  json short_data = json::array({Tensor("y", {3, 2}, 0)});
  short_data[0]["data"].erase(0);
  auto r = SplitOutputs(short_data.dump(), rows);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("outputs[0] has 5 elements"), std::string::npos)
      << r.error().message;
}

// A model's answer comes from outside: 20,000 mutations of a good one never crash the split.
TEST(StackAndSplit, MutatedAnswersNeverCrash) {
  const std::string seed = json::array({Tensor("y", {3, 2}, 0), Tensor("z", {3}, 0)}).dump();
  std::mt19937 rng(9);
  int errors = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string text =
        testing::Mutate(seed, rng, 4, [&] { return "{}[]\",:0-1e"[rng() % 11]; });
    errors += SplitOutputs(text, {1, 2}).ok() ? 0 : 1;
    (void)KeyOf(text);
  }
  EXPECT_GT(errors, 1000);
}

}  // namespace
}  // namespace pipescale::routing
