// Progress of a download: on a terminal (stderr is a tty) one redrawn bar with the bytes, the
// rate and the time left; in a log file (Slurm output, CI) a plain line every few seconds, so
// logs stay readable and greppable.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace ds {

class TransferProgress {
 public:
  // `total_bytes` as estimated by the plan; `chunks` to fetch.
  TransferProgress(uint64_t total_bytes, size_t chunks, double log_interval_s = 5.0);
  void add_bytes(int64_t n);  // negative to take back a failed attempt's bytes
  void chunk_done();
  // Before another log line: clears the bar so the line is not drawn over it.
  void clear_line();
  void finish();

  // "12.3 MB", "1.2 GB": bytes for people.
  static std::string human(double bytes);

 private:
  void draw(bool force);
  uint64_t total_;
  int64_t done_bytes_ = 0;
  size_t chunks_, done_chunks_ = 0;
  double interval_;
  bool tty_;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace ds
