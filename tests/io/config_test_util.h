// Helpers the config test files share (test_config*.cpp): each part's keys test in its own file.
#pragma once
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "io/error.h"
#include "support/test_support.h"

namespace ds::test {

// Writes `text` as d/c.yaml and returns its path.
inline std::string write(const TempDir& d, const std::string& text) {
  const std::string p = d / "c.yaml";
  std::ofstream(p) << text;
  return p;
}

// The message of the UsageError the call throws (fails the test if it throws nothing).
template <class F>
std::string usage_error(F f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no UsageError";
  return "";
}

}  // namespace ds::test
