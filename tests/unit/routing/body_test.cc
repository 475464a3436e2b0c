// The router's text view of OIP bodies: the scanner agrees with a full JSON parser on what is
// JSON and where each member lies, and the bodies spliced from it are the documents the
// protocol expects.
#include "routing/body.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "routing/graph.h"
#include "support/mutate.h"

namespace pipescale::routing {
namespace {

using nlohmann::json;

// A JSON text's mutations draw from the grammar's characters, and from bytes that lead or
// continue UTF-8 sequences, so most reach deep into the scanner before they fail.
std::string Mutate(const std::string& s, std::mt19937& rng) {
  return testing::Mutate(s, rng, 4, [&] {
    return rng() % 4 == 0 ? static_cast<char>(0x80 + rng() % 0x80)
                          : "{}[]\",:0-.eE\\ u1atfndD8C"[rng() % 25];
  });
}

constexpr const char* kSeed =
    R"({"id": "a\"b\\u0041 é 😀 \ud83d\ude00", "parameters": {"k": [1, -2.5e3, true, null]},
        "outputs": [{"name": "y", "datatype": "FP32", "shape": [1, 2], "data": [0.5, 1E-2]}],
        "nested": {"a": {"b": [[], {}, ""]}},	"data":
        [[1, 2.5], ["a,[b", true]]})";

// The property: on every mutation, the scanner accepts exactly what the parser reads as an
// object, and each member's key and value text parse to the parser's own member.
TEST(Body, TheScannerAgreesWithAFullParserOnMutatedTexts) {
  std::mt19937 rng(7);
  int objects = 0;
  for (int i = 0; i < 30000; ++i) {
    const std::string text = Mutate(kSeed, rng);
    const json parsed = json::parse(text, nullptr, false);
    auto members = ScanObject(text);
    ASSERT_EQ(members.ok(), parsed.is_object()) << text;
    if (!members) {
      const std::string& why = members.error().message;
      EXPECT_TRUE(why.starts_with("is ") || why.starts_with("holds ")) << why;
      continue;
    }
    ++objects;
    json rebuilt = json::object();
    for (const Member& m : *members) {
      rebuilt[json::parse("\"" + std::string(m.key) + "\"").get<std::string>()] =
          json::parse(m.value);
    }
    EXPECT_EQ(rebuilt, parsed) << text;
  }
  EXPECT_GT(objects, 1000);  // both sides of the property were reached
}

// Scalars in a value as a tensor's data counts them, by the parser: -1 for an object or null.
long ParsedScalars(const json& value) {
  if (value.is_object() || value.is_null()) return -1;
  if (!value.is_array()) return 1;
  long n = 0;
  for (const json& item : value) {
    const long inner = ParsedScalars(item);
    if (inner < 0) return -1;
    n += inner;
  }
  return n;
}

// The property: inside every text the scanner accepted, the splitters (which check nothing)
// find the scanner's own members and elements, and count what the parser counts.
TEST(Body, TheSplittersOfCheckedTextAgreeWithTheScanner) {
  std::mt19937 rng(11);
  int containers = 0;
  for (int i = 0; i < 30000; ++i) {
    const std::string text = Mutate(kSeed, rng);
    auto members = ScanObject(text);
    if (!members) continue;
    EXPECT_EQ(MembersOf(text).size(), members->size());
    for (const Member& m : *members) {
      EXPECT_EQ(CountScalars(m.value), ParsedScalars(json::parse(m.value))) << m.value;
      if (m.value.front() == '{') {
        const auto inner = MembersOf(m.value);
        const auto scanned = *ScanObject(m.value);
        ASSERT_EQ(inner.size(), scanned.size()) << m.value;
        for (size_t k = 0; k < inner.size(); ++k) {
          EXPECT_EQ(inner[k].key, scanned[k].key);
          EXPECT_EQ(inner[k].value, scanned[k].value);
        }
        ++containers;
      } else if (m.value.front() == '[') {
        EXPECT_EQ(ElementsOf(m.value), *ScanArray(m.value)) << m.value;
        ++containers;
      }
    }
  }
  EXPECT_GT(containers, 1000);
}

TEST(Body, ATensorsDataIsCountedThroughItsNesting) {
  EXPECT_EQ(CountScalars("[[1, 2], [3]]"), 3);
  EXPECT_EQ(CountScalars("[ ]"), 0);
  EXPECT_EQ(CountScalars("[[], [ 1 ]]"), 1);
  EXPECT_EQ(CountScalars(R"(["a,b", "[c", "\"],[", true])"), 4);  // strings hold no structure
  EXPECT_EQ(CountScalars("7"), 1);
  EXPECT_EQ(CountScalars("[1, null]"), -1);
  EXPECT_EQ(CountScalars(R"([{"a": 1}])"), -1);
  // Past the sixteen bytes a step of the vector path, and across its edges.
  std::string long_data = "[";
  for (int i = 0; i < 1000; ++i) long_data += (i ? ",[0.5," : "[0.5,") + std::to_string(i) + "]";
  EXPECT_EQ(CountScalars(long_data + "]"), 2000);
  EXPECT_EQ(CountScalars(long_data + ",\"x\"]"), 2001);
}

TEST(Body, ArraysAndNestingLimits) {
  auto items = ScanArray(R"( [1, "two", {"three": 3}, [4]] )");
  ASSERT_TRUE(items.ok());
  EXPECT_EQ(*items, (std::vector<std::string_view>{"1", R"("two")", R"({"three": 3})", "[4]"}));
  EXPECT_TRUE(ScanArray("[]")->empty());
  EXPECT_FALSE(ScanArray("[1,]").ok());
  EXPECT_FALSE(ScanArray("[1] [2]").ok());
  EXPECT_FALSE(ScanObject(R"({"a": 01})").ok());
  EXPECT_FALSE(ScanObject("{\"a\": \"tab\there\"}").ok());  // a raw control character
  // UTF-16 surrogates escaped in pairs only, as every JSON parser the router talks to wants.
  EXPECT_TRUE(ScanObject(R"({"a": "\ud83d\ude00"})").ok());
  for (const char* lone : {R"({"a": "\ud83d"})", R"({"a": "\ude00"})", R"({"a": "\ud83dx"})",
                           R"({"a": "\ud83d\u0041"})", R"({"a": "\ud83d\"})"}) {
    EXPECT_FALSE(ScanObject(lone).ok()) << lone;
  }
  std::string deep = std::string(kMaxNesting - 1, '[') + std::string(kMaxNesting - 1, ']');
  EXPECT_TRUE(ScanObject("{\"a\": " + deep + "}").ok());
  EXPECT_FALSE(ScanObject("{\"a\": [" + deep + "]}").ok());
  const std::string very_deep(100000, '[');  // no stack is spent on what is refused
  EXPECT_FALSE(ScanObject("{\"a\": " + very_deep + "}").ok());
}

TEST(Body, TheClientsParametersStayAndTheRoutersAreItsOwn) {
  auto members = ScanObject(
      R"({"inputs": [1], "id": "r", "outputs": [{"name": "y"}],
          "parameters": {"pipescale_path": "forged", "pipescale_deadline_ms": 1, "user": "x"}})");
  ASSERT_TRUE(members.ok());
  auto body = ClientBody(*members, "");
  ASSERT_TRUE(body.ok());
  const json sent = json::parse(
      body->Render({{kDeadlineParameter, "120"}, {kPathParameter, Quoted("cars \"2\"")}}).Joined());
  EXPECT_EQ(sent, json::parse(R"({"inputs": [1], "id": "r", "outputs": [{"name": "y"}],
      "parameters": {"user": "x", "pipescale_deadline_ms": 120, "pipescale_path": "cars \"2\""}})"));
  EXPECT_FALSE(ClientBody(*ScanObject(R"({"id": "r"})"), "").ok());
  EXPECT_FALSE(ClientBody(*ScanObject(R"({"inputs": [1], "parameters": [1]})"), "").ok());
}

TEST(Body, AnAnswersOutputsBecomeTheNextInputs) {
  const std::string reply =
      R"({"model_name": "detect", "outputs": [{"name": "boxes", "shape": [1], "data": [3]}],
          "parameters": {"pipescale_next": {"classify": 2}}})";
  auto answer = ReadAnswer(reply);
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  EXPECT_EQ(answer->parameters["pipescale_next"]["classify"], 2);
  Body previous{.inputs = "[{\"name\": \"image\"}]",
                .id = "\"r\"",
                .others = "\"x\":1",
                .parameters = "\"user\":1"};
  EXPECT_EQ(json::parse(NextBody(*answer, previous).Render({}).Joined()),
            json::parse(R"({"inputs": [{"name": "boxes", "shape": [1], "data": [3]}], "id": "r",
                            "parameters": {}})"));
  // A model that returns no outputs passes its inputs on.
  auto empty = ReadAnswer(R"({"outputs": [ ]})");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(NextBody(*empty, previous).inputs, previous.inputs);
  EXPECT_TRUE(ReadAnswer("{}")->parameters.empty());
  for (const char* bad : {"[1]", "not json", R"({"outputs": 3})", R"({"parameters": [1]})"}) {
    EXPECT_FALSE(ReadAnswer(bad).ok()) << bad;
  }
}

// A binary answer: its outputs' sizes must add up to its binary part, which the next request
// carries on as a view into the answer (and a model that returned no outputs passes the previous
// binary part on with its inputs).
TEST(Body, ABinaryAnswersDataGoesOnWithItsOutputs) {
  const std::string header = R"({"outputs": [{"name": "y", "datatype": "UINT8", "shape": [3],)"
                             R"( "parameters": {"binary_data_size": 3}}]})";
  const std::string reply = header + "abc";
  auto answer = ReadAnswer(reply, std::to_string(header.size()));
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  EXPECT_EQ(answer->binary, "abc");
  const Body previous{.inputs = "[1]", .binary = "old", .id = "\"r\"", .binary_outputs = true};
  const Body next = NextBody(*answer, previous);
  EXPECT_EQ(next.binary.data(), reply.data() + header.size());
  EXPECT_TRUE(next.binary_outputs);
  EXPECT_EQ(next.Render({}).Joined(),
            R"({"inputs":)" + std::string(answer->outputs) +
                R"(,"id":"r","parameters":{"binary_data_output":true}}abc)");
  auto none = ReadAnswer(R"({"outputs": []})", "15");
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_EQ(NextBody(*none, previous).binary, "old");
  EXPECT_FALSE(ReadAnswer(reply, std::to_string(header.size() + 1)).ok());  // 2 bytes, 3 named
  EXPECT_FALSE(ReadAnswer(reply, "-1").ok());
  EXPECT_FALSE(ReadAnswer(reply).ok());  // without the header, the bytes are not JSON
}

// The walk reads only the router's own answer parameters: those are decoded, a model's others
// (however large) are not; every parameter the router reads carries the prefix.
TEST(Body, AnAnswersParametersAreDecodedOnlyWhereTheRouterReadsThem) {
  auto answer = ReadAnswer(
      R"({"parameters": {"sequence_id": 0, "scores": [1, 2, 3], "pipescale_queue_ms": 2.5,)"
      R"( "pipescale_next": {"classify": 1}}})");
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  EXPECT_EQ(answer->parameters,
            json::parse(R"({"pipescale_queue_ms": 2.5, "pipescale_next": {"classify": 1}})"));
  for (std::string_view key : {std::string_view(kQueueParameter), std::string_view(kNextParameter),
                               std::string_view(kBatchRowsParameter)}) {
    EXPECT_TRUE(key.starts_with(kRouterParameterPrefix)) << key;
  }
}

TEST(Body, TheClientsOutputsAreNamedAfterTheirTask) {
  auto named = NamedOutputs("classify",
                            R"([{"name": "label", "data": ["car"]}, {"data": [1]}, {"name": 3}])");
  ASSERT_TRUE(named.ok());
  ASSERT_EQ(named->size(), 3u);
  EXPECT_EQ(json::parse((*named)[0]),
            json::parse(R"({"name": "classify/label", "data": ["car"]})"));
  EXPECT_EQ(json::parse((*named)[1]), json::parse(R"({"name": "classify/output", "data": [1]})"));
  EXPECT_EQ(json::parse((*named)[2]), json::parse(R"({"name": "classify/output"})"));
  EXPECT_TRUE(NamedOutputs("t", "")->empty());
  EXPECT_FALSE(NamedOutputs("t", "[1]").ok());
}

}  // namespace
}  // namespace pipescale::routing
