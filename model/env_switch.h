// The DOWNSCALE_* environment switches (A/B runs of one binary, paths not yet the default): a
// value a switch does not know is an error naming the variable, its value and what each value
// means, never silently read as the default; a run then compares what it says it compares. Such a
// value is a configuration error (UsageError, exit 2), as a mistyped config key is.
// Header-only: the CUDA plugin reads its switches through it too.
#pragma once
#include <cstdlib>
#include <initializer_list>
#include <string>

#include "io/error.h"

namespace ds::model {

// Env `name`'s value when it is one of `allowed`, "" when unset or empty; anything else is an
// error naming the variable and its value and saying what each value means (`expected`).
inline std::string env_choice(const char* name, std::initializer_list<const char*> allowed,
                              const std::string& expected) {
  const char* value = std::getenv(name);
  const std::string v = value ? value : "";
  if (v.empty()) return v;
  for (const char* a : allowed)
    if (v == a) return v;
  throw UsageError(std::string(name) + " is '" + v + "', expected " + expected);
}

// An on/off switch: env `name` 0 (false) or 1 (true), unset or empty for `by_default`; anything
// else is an error naming it and saying what 0 and 1 mean (`expected`).
inline bool on_off_switch(const char* name, bool by_default, const char* expected) {
  const std::string v = env_choice(name, {"0", "1"}, expected);
  return v.empty() ? by_default : v == "1";
}

}  // namespace ds::model
