// Logging for every stage: spdlog, one line per event, "[time] [stage] message" on stderr.
// Progress on long work is a log line every few seconds, which reads the same on a terminal
// and in a Slurm output file.
#pragma once
#include <spdlog/spdlog.h>

#include <chrono>
#include <string>

namespace ds {

// Sets the global logger: the stage name (and, under MPI, the rank) prefixes every line.
void setup_logging(const std::string& stage, const std::string& level, int rank = -1);

// Rate-limited progress reporting: report() logs at most every `interval` seconds and always
// at the end, with the share done and an estimate of the time left.
class Progress {
 public:
  Progress(std::string what, int64_t total, double interval_seconds = 5.0);
  void advance(int64_t n = 1);
  void done();

 private:
  std::string what_;
  int64_t total_, done_ = 0;
  double interval_;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace ds
