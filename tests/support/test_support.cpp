#include "support/test_support.h"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace ds::test {

TempDir::TempDir() {
  std::string templ = (std::filesystem::temp_directory_path() / "downscale-test-XXXXXX").string();
  if (!mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed");
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string source_dir() {
  const char* s = std::getenv("DS_SOURCE_DIR");
  return s ? s : ".";
}

}  // namespace ds::test
