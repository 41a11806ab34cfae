// An environment variable set for a test's scope (the CUDA backend's switches, read when a backend
// is made), shared by the CUDA backend and plugin tests.
#pragma once
#include <cstdlib>
#include <string>

namespace ds::model {

// An environment switch of the CUDA backend (read when a backend is made) set for this scope, and
// the caller's value (or its absence) put back after it, so a switch given to the whole run
// (gpu_check's variants, a user's environment) is neither lost nor leaked between tests.
// value null: unset for the scope.
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

}  // namespace ds::model
