// The one reader of every binary's numeric flags: the whole text is a number in range, or an
// error naming the flag and quoting what was given.
#include "common/flags.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace pipescale {
namespace {

TEST(Flags, IntegersAreWholeDecimalNumbersInRange) {
  EXPECT_EQ(*ParseInteger("--n", "0", 0, 10), 0);
  EXPECT_EQ(*ParseInteger("--n", "10", 0, 10), 10);
  EXPECT_EQ(*ParseInteger("--n", "-3", -5, 10), -3);
  EXPECT_EQ(*ParseInteger<std::uint64_t>("--seed", "18446744073709551615", 0, UINT64_MAX),
            UINT64_MAX);
  for (const std::string junk : {"", "x", "1x", "x1", " 1", "1 ", "+1", "1.0", "1e3", "0x10", "--1",
                                 "11", "-1", "99999999999999999999", "1\n"}) {
    const auto r = ParseInteger("--max-in-flight", junk, 0, 10);
    ASSERT_FALSE(r.ok()) << junk;
    EXPECT_EQ(r.error().kind, ErrorKind::kInvalid);
    EXPECT_EQ(r.error().message,
              "--max-in-flight: needs an integer in [0, 10], got " + QuoteUserText(junk));
  }
}

TEST(Flags, NumbersAreFiniteDecimalsInRange) {
  EXPECT_DOUBLE_EQ(*ParseNumber("--x", "2", 0, 10), 2);
  EXPECT_DOUBLE_EQ(*ParseNumber("--x", "0.5", 0, 10), 0.5);
  EXPECT_DOUBLE_EQ(*ParseNumber("--x", ".5", 0, 10), 0.5);
  EXPECT_DOUBLE_EQ(*ParseNumber("--x", "+1e-3", 0, 10), 0.001);
  EXPECT_DOUBLE_EQ(*ParseNumber("--x", "-2.5", -3, 10), -2.5);
  for (const std::string junk : {"", "x", "1x", "nan", "inf", "-inf", "infinity", "0x10", "1,5",
                                 " 1", "1 ", "1e400", "11", "-0.1", "++1", "+-1"}) {
    const auto r = ParseNumber("--overhead-ms", junk, 0, 10);
    ASSERT_FALSE(r.ok()) << junk;
    EXPECT_EQ(r.error().message,
              "--overhead-ms: needs a number in [0, 10], got " + QuoteUserText(junk));
  }
  EXPECT_EQ(ParseNumber("--age", "x", 0, 3600).error().message,
            "--age: needs a number in [0, 3600], got \"x\"");
}

TEST(Flags, IntoAValueForReadersThatCollectMessages) {
  int n = 7;
  EXPECT_EQ(ParseFlag("--warmup", "3", 0, 5, n), "");
  EXPECT_EQ(n, 3);
  EXPECT_EQ(ParseFlag("--warmup", "9", 0, 5, n), "--warmup: needs an integer in [0, 5], got \"9\"");
  EXPECT_EQ(n, 3);
  double d = 0;
  EXPECT_EQ(ParseFlag("--factor", "1.5", 0.0, 2.0, d), "");
  EXPECT_DOUBLE_EQ(d, 1.5);
  EXPECT_NE(ParseFlag("--factor", "1.5x", 0.0, 2.0, d), "");
}

TEST(Flags, HostAndPort) {
  const auto a = ParseHostPort("--listen", "127.0.0.1:8080", 0);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 8080);
  EXPECT_EQ(ParseHostPort("--listen", "0.0.0.0:0", 0)->port, 0);
  EXPECT_EQ(ParseHostPort("--listen", "fd00::1:9090", 0)->host, "fd00::1");
  EXPECT_EQ(ParseHostPort("--metrics", ":9090", 0)->host, "");  // every interface
  for (const std::string junk : {"127.0.0.1", "127.0.0.1:", "127.0.0.1:x", "127.0.0.1:65536",
                                 "127.0.0.1:-1", "127.0.0.1:80x", ""}) {
    const auto r = ParseHostPort("--listen", junk, 0);
    ASSERT_FALSE(r.ok()) << junk;
    EXPECT_EQ(r.error().message,
              "--listen: needs HOST:PORT with a port in [0, 65535], got " + QuoteUserText(junk));
  }
  // An upstream's port 0 is no port.
  EXPECT_FALSE(ParseHostPort("address", "10.0.0.1:0", 1).ok());
}

}  // namespace
}  // namespace pipescale
