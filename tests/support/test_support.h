// Helpers shared by the test executables: a scratch directory that is removed afterwards.
#pragma once
#include <string>
#include <utility>

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

#include <functional>
#include <vector>

namespace ds::test {

// The message of the `E` that `f` throws ("" when it throws none): for tests that check what an
// error says.
template <class E>
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

}  // namespace ds::test

namespace ds::test {

// A small CF NetCDF source like ERA-Interim (with a `plev` level dimension) or EWEMBI (without),
// for fetch and preprocess tests. value(t, level_index, lat_index, lon_index) gives each value;
// a NaN becomes the _FillValue 1e20.
struct SourceSpec {
  std::string variable = "z", units = "m2 s-2";
  std::vector<double> levels;          // hPa; empty: no level dimension
  std::vector<double> lat, lon;        // in file order (lat may descend)
  int first_year = 2000, ndays = 366;  // daily from Jan 1st of first_year
  std::function<double(int, int, int, int)> value;
  std::vector<std::pair<std::string, std::string>> globals{};  // global attributes, as named
};
void write_source(const std::string& path, const SourceSpec& spec);

}  // namespace ds::test
