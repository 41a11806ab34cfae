// A watch over requests this process makes itself (the plan's opens of the sources, in the
// parent, before any worker starts): while one is in flight, a log line every few seconds
// ("waiting for <url> (12 s)"), and past the time-out the process ends with "timed out after
// N s waiting for <url>", exit 1, and whether the server still takes a connection (it accepted
// and did not answer) or not (the host hint). A request hung inside netCDF-C/libcurl cannot be interrupted
// from within, and nothing has been written yet at that point. (Chunk downloads run in worker
// processes, which the parent kills and retries instead: fetch/workers.h.)
#pragma once
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace ds {

// A dry run is a check someone waits for: it waits for a request at most kDryRunWaitS, or
// fetch.timeout_s where that is shorter (0, no time-out, is not).
constexpr double kDryRunWaitS = 20;
double dry_run_timeout(double timeout_s);

class RequestWatch {
 public:
  // timeout_s 0: log only, never end the process. `setting` names where the time-out comes from,
  // in the message.
  explicit RequestWatch(double timeout_s, std::string setting = "fetch.timeout_s", double note_every_s = 5);
  ~RequestWatch();
  RequestWatch(const RequestWatch&) = delete;
  RequestWatch& operator=(const RequestWatch&) = delete;

  void begin(const std::string& what);  // a request to `what` (a redacted URL) starts now
  void end();                           // no request in flight

 private:
  void run();
  void say(const std::string& line) const;
  double timeout_s_;
  std::string setting_;
  double note_every_s_;
  int err_fd_ = -1;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false, active_ = false;
  std::string what_;
  std::chrono::steady_clock::time_point since_;
  std::thread thread_;
};

}  // namespace ds
