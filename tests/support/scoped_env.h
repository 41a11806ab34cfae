// Environment variables set for a test's scope (the backends' switches, read when a backend or a
// Net is made), the caller's values (or their absence) put back when the scope ends, also when an
// ASSERT or a throw leaves it early: a switch given to the whole run (gpu_check's variants, a
// user's environment) is neither lost nor leaked into the tests after it.
#pragma once
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ds::test {

// One variable; value null: unset for the scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) had_ = true, old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_.c_str(), old_.c_str(), 1);
    else
      unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_, old_;
  bool had_ = false;
};

// Several (a device-check row's switches), put back in the reverse order they were set.
class ScopedEnvs {
 public:
  explicit ScopedEnvs(const std::vector<std::pair<std::string, std::string>>& vars) {
    for (const auto& [k, v] : vars) set_.push_back(std::make_unique<ScopedEnv>(k.c_str(), v.c_str()));
  }
  ~ScopedEnvs() {
    while (!set_.empty()) set_.pop_back();
  }
  ScopedEnvs(const ScopedEnvs&) = delete;
  ScopedEnvs& operator=(const ScopedEnvs&) = delete;

 private:
  std::vector<std::unique_ptr<ScopedEnv>> set_;
};

}  // namespace ds::test
