// The one RFC 3339 formatter that conditions, events, leases, log lines and the node agent's pod
// status all write with.
#include "common/time.h"

#include <gtest/gtest.h>

namespace pipescale {
namespace {

TEST(FormatRfc3339, SecondsMillisecondsAndMicrosecondsInUtc) {
  constexpr double kAt = 1795773713.123456;  // 2026-11-27T10:01:53.123456Z
  EXPECT_EQ(FormatRfc3339(kAt), "2026-11-27T10:01:53Z");
  EXPECT_EQ(FormatRfc3339(kAt, 3), "2026-11-27T10:01:53.123Z");
  EXPECT_EQ(FormatRfc3339(kAt, 6), "2026-11-27T10:01:53.123456Z");
  EXPECT_EQ(FormatRfc3339(0, 6), "1970-01-01T00:00:00.000000Z");
  // A fraction is cut, never rounded up into the next second.
  EXPECT_EQ(FormatRfc3339(59.9999999, 3), "1970-01-01T00:00:59.999Z");
}

}  // namespace
}  // namespace pipescale
