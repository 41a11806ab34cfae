// The command line of this run, recorded once by main, for the `history` attribute of every
// NetCDF file we write (CF: "a list of the applications that have modified the original data"):
// with each --set override, so a file says how to make it again.
#pragma once
#include <string>

namespace ds {

void record_command_line(int argc, const char* const* argv);
// The recorded arguments joined by spaces, each quoted for a POSIX shell where it needs it and
// with URL credentials removed; "downscale" when none was recorded (tests, library use).
std::string command_line();

}  // namespace ds
