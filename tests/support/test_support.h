// Helpers shared by the test executables: a scratch directory that is removed afterwards.
#pragma once
#include <string>

namespace ds::test {

// A fresh directory under the system temp folder, deleted (recursively) by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The repository root (for configs/), from DS_SOURCE_DIR set by ctest.
std::string source_dir();

}  // namespace ds::test
