// The running test's own scratch directory, for the tests that start processes of ours on
// loopback and keep their logs, port files and inputs there. Header-only: it needs only gtest.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace pipescale::testing {

// TempDir()/`prefix`-<test name>, emptied and created.
inline std::string FreshTestDir(const std::string& prefix) {
  const std::string dir = ::testing::TempDir() + "/" + prefix + "-" +
                          ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace pipescale::testing
