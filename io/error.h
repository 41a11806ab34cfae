// Errors that reach the user. Each kind maps to one exit code so scripts (and Slurm) can tell a
// typo in a config from a missing input file from a failure inside the computation.
#pragma once
#include <stdexcept>
#include <string>

namespace ds {

enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,  // a computation or output failed
  kExitUsage = 2,    // bad command line or configuration
  kExitInput = 3,    // an input file, variable, date or value is missing or wrong
};

// Base of every error the `downscale` command reports as one line and turns into an exit code.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what, ExitCode code = kExitFailure)
      : std::runtime_error(what), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

// A wrong or unknown configuration key, option or value.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& what) : Error(what, kExitUsage) {}
};

// Input data that is missing, unreadable or inconsistent (names the file and variable).
class InputError : public Error {
 public:
  explicit InputError(const std::string& what) : Error(what, kExitInput) {}
};

}  // namespace ds
