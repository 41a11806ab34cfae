// What a test's code writes to stderr (the CUDA backend's `cuda: conv` lines), for tests that
// check such a line: gtest allows one stderr capture at a time, so one left on by a throw would
// abort the next test that captures. While a StderrCapture lives, stderr is captured; take()
// ends the capture and returns the text; a capture never taken (the code under test threw) ends
// when it goes, its text given back to stderr, where a GPU session's log still has it.
#pragma once
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace ds::test {

class StderrCapture {
 public:
  StderrCapture() { ::testing::internal::CaptureStderr(); }
  ~StderrCapture() {
    if (on_) std::fputs(::testing::internal::GetCapturedStderr().c_str(), stderr);
  }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;
  std::string take() {
    on_ = false;
    return ::testing::internal::GetCapturedStderr();
  }

 private:
  bool on_ = true;
};

}  // namespace ds::test
