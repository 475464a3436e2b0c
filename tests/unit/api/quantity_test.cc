#include "api/quantity.h"

#include <gtest/gtest.h>

namespace pipescale::api {
namespace {

TEST(Quantity, ReadsTheSuffixesKubernetesWrites) {
  EXPECT_DOUBLE_EQ(*ParseQuantity("4"), 4);
  EXPECT_DOUBLE_EQ(*ParseQuantity("500m"), 0.5);
  EXPECT_DOUBLE_EQ(*ParseQuantity("1.5"), 1.5);
  EXPECT_DOUBLE_EQ(*ParseQuantity("4Gi"), 4.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(*ParseQuantity("128Mi"), 128.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(*ParseQuantity("2k"), 2000);
  EXPECT_DOUBLE_EQ(*ParseQuantity("3M"), 3e6);
  EXPECT_DOUBLE_EQ(*ParseQuantity("1e3"), 1000);
  EXPECT_DOUBLE_EQ(*ParseQuantity("0"), 0);
}

TEST(Quantity, RefusesWhatIsNotAQuantity) {
  for (const char* bad : {"", "Gi", "four", "4 Gi", "-1", "4Gx", "1e400", "nan", "4GiB"}) {
    EXPECT_FALSE(ParseQuantity(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace pipescale::api
