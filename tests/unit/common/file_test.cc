// ReadFileText: a file's bytes as they are, and an error that names what could not be read.
#include "common/file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace pipescale {
namespace {

TEST(ReadFileText, ReturnsEveryByteOfTheFile) {
  const std::string path = ::testing::TempDir() + "/file_test.bin";
  const std::string bytes("a\0b\r\nc\xff", 7);
  std::ofstream(path, std::ios::binary) << bytes;
  auto text = ReadFileText(path);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(*text, bytes);
}

TEST(ReadFileText, AMissingFileIsNotFoundNamingWhatAndWhere) {
  auto text = ReadFileText("/nonexistent/pipeline.yaml", "the trace");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(text.error().message, "cannot read the trace /nonexistent/pipeline.yaml");
  EXPECT_EQ(ReadFileText("/nonexistent/x").error().message, "cannot read /nonexistent/x");
}

}  // namespace
}  // namespace pipescale
