// A file read whole, every failure named: the files the stages read back in one piece (a
// checkpoint copied to the best one, metrics.csv on resume, a layer profile, a config as
// load_config parses and records it). A short or failed read is an error, never an empty or
// partial text taken as the file's.
#pragma once
#include <string>

#include "io/error.h"

namespace ds {

// The bytes of `path`. Throws Error with `code` naming the file and the cause (strerror) where it
// cannot be opened or read, a folder included.
std::string read_file(const std::string& path, ExitCode code = kExitInput);

}  // namespace ds
