// read_file: a file's bytes whole (NUL bytes and a last line without its newline included); a
// missing file or a folder is an Error with the caller's exit code naming the path and the cause.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <utility>

#include "io/read_file.h"
#include "support/test_support.h"

namespace {

using ds::Error;
using ds::read_file;

// The Error `f` throws (its message and exit code); "" and 0 when it throws none.
std::pair<std::string, int> error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return {e.what(), e.code()};
  }
  return {"", 0};
}

TEST(ReadFile, BytesWholeAndFailuresNamed) {
  ds::test::TempDir d;
  const std::string path = d / "bytes.bin";
  static const char with_nul[] = "a\0b\nlast line without a newline";
  std::string bytes(with_nul, sizeof with_nul - 1);  // the NUL inside kept, the literal's own not
  bytes += std::string(200000, 'x');  // more than one read's buffer
  std::ofstream(path, std::ios::binary) << bytes;
  EXPECT_EQ(read_file(path), bytes);
  std::ofstream(d / "empty");
  EXPECT_EQ(read_file(d / "empty"), "");

  const auto [missing, missing_code] = error_of([&] { read_file(d / "none.csv"); });
  EXPECT_EQ(missing, (d / "none.csv") + ": cannot be opened: No such file or directory");
  EXPECT_EQ(missing_code, ds::kExitInput);
  std::filesystem::create_directories(d / "folder.csv");
  const auto [folder, folder_code] = error_of([&] { read_file(d / "folder.csv", ds::kExitFailure); });
  EXPECT_EQ(folder, (d / "folder.csv") + ": cannot be read: Is a directory");
  EXPECT_EQ(folder_code, ds::kExitFailure);
}

}  // namespace
