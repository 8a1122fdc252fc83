// For tests only: a file with the given text in the test's temporary
// directory (GoogleTest's TempDir), its path returned.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace tidal::test {

inline std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream out(path);
  EXPECT_TRUE(out.good()) << "cannot write " << path;
  out << text;
  return path;
}

}  // namespace tidal::test
