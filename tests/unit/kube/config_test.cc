// The one base64 decoder, for a kubeconfig's *-data and the node agent's Secrets.
#include "kube/config.h"

#include <gtest/gtest.h>

namespace pipescale::kube {
namespace {

TEST(Base64Decode, DecodesWhatTheApiServerWritesAndNamesWhatIsNot) {
  EXPECT_EQ(*Base64Decode("aGVsbG8=", "x"), "hello");
  EXPECT_EQ(*Base64Decode("aGVs\nbG8h ", "x"), "hello!");  // line breaks, as kubeconfigs wrap
  EXPECT_EQ(*Base64Decode("aA==", "x"), "h");
  EXPECT_EQ(*Base64Decode("", "x"), "");
  const auto bad = Base64Decode("not base64!", "client-key-data");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "client-key-data: not valid base64");
}

}  // namespace
}  // namespace pipescale::kube
