// The MILP text the operator hands its solver process: exact both ways, and what it did not
// write is refused, never a crash.
#include "optimizer/milp_text.h"

#include <gtest/gtest.h>

#include <random>

namespace pipescale::optimizer {
namespace {

// A random MILP with awkward numbers: infinities, negative zero, subnormals, ranged rows.
Milp RandomMilp(std::mt19937& rng) {
  std::uniform_real_distribution<double> real(-1e6, 1e6);
  Milp milp;
  const int vars = std::uniform_int_distribution(1, 12)(rng);
  for (int v = 0; v < vars; ++v) {
    const double lower = v % 3 == 0 ? -kInfinity : v % 3 == 1 ? -0.0 : real(rng) - 1e6;
    const double upper = v % 4 == 0 ? kInfinity : std::max(lower, 0.0) + 4.9e-324 + v;
    milp.AddVar(lower, upper, real(rng) / 3, rng() % 2 == 0);
  }
  for (int r = 0; r < std::uniform_int_distribution(0, 8)(rng); ++r) {
    std::vector<MilpTerm> terms;
    for (int t = 0; t < 3; ++t) terms.push_back({static_cast<int>(rng() % vars), real(rng) / 7});
    const double lower = real(rng);
    milp.AddRow(terms, r % 2 == 0 ? lower : -kInfinity, lower + 1.0 / 3);
  }
  for (int a = 0; a < std::uniform_int_distribution(0, 3)(rng); ++a) {
    std::vector<Milp::Bound> bounds;
    for (int b = 0; b < a; ++b) {
      const double lower = b == 0 ? -kInfinity : real(rng);
      bounds.push_back({static_cast<int>(rng() % vars), lower, b == 1 ? kInfinity : lower + 0.1});
    }
    milp.AddAlternative(std::move(bounds));
  }
  milp.set_sense(rng() % 2 == 0 ? Milp::Sense::kMinimize : Milp::Sense::kMaximize);
  return milp;
}

TEST(MilpText, ReadsBackExactlyWhatItWrote) {
  std::mt19937 rng(7);
  for (int i = 0; i < 200; ++i) {
    const Milp milp = RandomMilp(rng);
    const MilpOptions options{
        .time_limit_seconds = 0.1 * i, .relative_gap = 1.0 / 3, .cuts = i % 2 == 1};
    const std::string text = WriteMilp(milp, options);
    auto read = ReadMilp(text);
    ASSERT_TRUE(read.ok()) << read.error().message << "\n" << text;
    EXPECT_EQ(WriteMilp(read->first, read->second), text);
    ASSERT_EQ(read->first.vars().size(), milp.vars().size());
    ASSERT_EQ(read->first.rows().size(), milp.rows().size());
    for (size_t v = 0; v < milp.vars().size(); ++v) {
      EXPECT_EQ(read->first.vars()[v].lower, milp.vars()[v].lower);
      EXPECT_EQ(std::signbit(read->first.vars()[v].lower), std::signbit(milp.vars()[v].lower));
      EXPECT_EQ(read->first.vars()[v].upper, milp.vars()[v].upper);
      EXPECT_EQ(read->first.vars()[v].objective, milp.vars()[v].objective);
    }
    ASSERT_EQ(read->first.alternatives().size(), milp.alternatives().size());
    for (size_t a = 0; a < milp.alternatives().size(); ++a) {
      const auto &got = read->first.alternatives()[a], &want = milp.alternatives()[a];
      ASSERT_EQ(got.size(), want.size());
      for (size_t b = 0; b < want.size(); ++b) {
        EXPECT_EQ(got[b].var, want[b].var);
        EXPECT_EQ(got[b].lower, want[b].lower);
        EXPECT_EQ(got[b].upper, want[b].upper);
      }
    }
    EXPECT_EQ(read->second.time_limit_seconds, options.time_limit_seconds);
    EXPECT_EQ(read->second.cuts, options.cuts);
  }
}

TEST(MilpText, ASolutionReadsBackExactly) {
  const MilpSolution solution{
      .status = MilpStatus::kFeasible, .objective = 1.0 / 3, .values = {0.1, -0.0, 1e300, 3}};
  auto read = ReadMilpSolution(WriteMilpSolution(solution), 4);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->status, MilpStatus::kFeasible);
  EXPECT_EQ(read->objective, solution.objective);
  EXPECT_EQ(read->values, solution.values);
  auto none = ReadMilpSolution(WriteMilpSolution({.status = MilpStatus::kInfeasible}), 4);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->HasSolution());
  EXPECT_FALSE(ReadMilpSolution(WriteMilpSolution(solution), 3).ok()) << "a value too many";
}

// Every prefix and every one-byte change of valid texts: refused or read, never a crash.
TEST(MilpText, RefusesWhatItDidNotWrite) {
  std::mt19937 rng(11);
  const std::string milp = WriteMilp(RandomMilp(rng), {});
  const std::string solution =
      WriteMilpSolution({.status = MilpStatus::kOptimal, .values = {1, 2}});
  for (const std::string& text : {milp, solution}) {
    for (size_t n = 0; n + 4 < text.size(); ++n) {
      EXPECT_FALSE(ReadMilp(text.substr(0, n)).ok());
      EXPECT_FALSE(ReadMilpSolution(text.substr(0, n), 2).ok());
    }
    for (size_t at = 0; at < text.size(); ++at) {
      for (const char c : {'x', '9', ' ', '-', '\0'}) {
        std::string changed = text;
        changed[at] = c;
        (void)ReadMilp(changed);
        (void)ReadMilpSolution(changed, 2);
      }
    }
  }
  const std::string one_var = "milp 2 sense min options 1 0 0 vars 1 0 1 0 0 ";
  EXPECT_TRUE(ReadMilp(one_var + "rows 0 alternatives 1 1 0 0 0 end").ok());
  EXPECT_FALSE(
      ReadMilp("milp 2 sense min options 1 0 0 vars 1 5 1 0 0 rows 0 alternatives 0 end").ok())
      << "lower above upper";
  EXPECT_FALSE(ReadMilp(one_var + "rows 1 0 1 1 3 1 alternatives 0 end").ok())
      << "a term of a variable that does not exist";
  EXPECT_FALSE(ReadMilp(one_var + "rows 0 alternatives 1 1 0 1 0 end").ok())
      << "an alternative's lower bound above its upper";
  EXPECT_FALSE(ReadMilp(one_var + "rows 0 alternatives 1 1 1 0 0 end").ok())
      << "an alternative narrowing a variable that does not exist";
  EXPECT_FALSE(ReadMilp(one_var + "rows 0 end").ok()) << "the version 1 text, without alternatives";
}

}  // namespace
}  // namespace pipescale::optimizer
