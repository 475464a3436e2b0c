// MergePatchFrom against nlohmann's own RFC 7386 implementation: applying the patch to `before`
// gives `after`, for hand-picked cases and random documents.
#include "kube/merge_patch.h"

#include <gtest/gtest.h>

#include <random>

namespace pipescale::kube {
namespace {

using nlohmann::json;

json Applied(json before, const json& patch) {
  before.merge_patch(patch);
  return before;
}

TEST(MergePatchFrom, RemovesWhatTheNewValueLeavesOut) {
  const json before = {{"plan", {{"tasks", {1, 2}}}},
                       {"capacity", {{"gpu", 3}}},
                       {"memory", {{"queryMix", {1}}, {"recommendations", {2}}}}};
  const json after = {{"plan", {{"tasks", {1}}}}, {"memory", {{"recommendations", {2}}}}};
  const json patch = MergePatchFrom(before, after);
  EXPECT_EQ(patch, (json{{"plan", {{"tasks", {1}}}},
                         {"capacity", nullptr},
                         {"memory", {{"queryMix", nullptr}}}}));
  EXPECT_EQ(Applied(before, patch), after);
}

TEST(MergePatchFrom, IsEmptyForEqualDocuments) {
  const json doc = {{"a", {{"b", {1, 2, {{"c", "d"}}}}}}, {"e", 0.5}};
  EXPECT_EQ(MergePatchFrom(doc, doc), json::object());
}

// A random document without nulls (a merge patch cannot write one): objects of up to 4 members
// from a small key set, so documents share keys, arrays, numbers, strings and booleans.
json RandomDoc(std::mt19937& rng, int depth) {
  const int kind = std::uniform_int_distribution<int>(0, depth > 0 ? 5 : 3)(rng);
  switch (kind) {
    case 0:
      return std::uniform_int_distribution<int>(0, 3)(rng);
    case 1:
      return std::string(1, static_cast<char>('a' + std::uniform_int_distribution<int>(0, 2)(rng)));
    case 2:
      return std::uniform_int_distribution<int>(0, 1)(rng) == 1;
    case 3:
      return std::uniform_real_distribution<double>(0, 1)(rng);
    case 4: {
      json array = json::array();
      for (int n = std::uniform_int_distribution<int>(0, 3)(rng); n > 0; --n) {
        array.push_back(RandomDoc(rng, depth - 1));
      }
      return array;
    }
    default: {
      json object = json::object();
      for (int n = std::uniform_int_distribution<int>(0, 4)(rng); n > 0; --n) {
        const std::string key(
            1, static_cast<char>('k' + std::uniform_int_distribution<int>(0, 4)(rng)));
        object[key] = RandomDoc(rng, depth - 1);
      }
      return object;
    }
  }
}

// The property: the patch turns any document into any other, and says nothing when they agree.
TEST(MergePatchFrom, TurnsAnyDocumentIntoAnyOther) {
  std::mt19937 rng(7);
  for (int i = 0; i < 5000; ++i) {
    json before = json::object(), after = json::object();
    before["status"] = RandomDoc(rng, 4);
    after["status"] = i % 5 == 0 ? before["status"] : RandomDoc(rng, 4);
    const json patch = MergePatchFrom(before, after);
    ASSERT_EQ(Applied(before, patch), after) << before << "\n" << after << "\n" << patch;
    if (before == after) {
      EXPECT_EQ(patch, json::object());
    }
  }
}

}  // namespace
}  // namespace pipescale::kube
