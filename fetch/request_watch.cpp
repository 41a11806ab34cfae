#include "fetch/request_watch.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <utility>

#include "fetch/chunk.h"
#include "fetch/server_probe.h"
#include "io/error.h"

namespace ds {

double dry_run_timeout(double timeout_s) { return timeout_s > 0 ? std::min(timeout_s, kDryRunWaitS) : kDryRunWaitS; }

// open_source sends stderr to a pipe while netCDF-C opens a source (fetch/chunk.cpp), exactly
// when a hung open must be reported: write to a copy of the real stderr taken beforehand.
RequestWatch::RequestWatch(double timeout_s, std::string setting, double note_every_s)
    : timeout_s_(timeout_s), setting_(std::move(setting)), note_every_s_(note_every_s), err_fd_(::dup(STDERR_FILENO)), thread_([this] { run(); }) {}

void RequestWatch::say(const std::string& line) const {
  const int fd = err_fd_ >= 0 ? err_fd_ : STDERR_FILENO;
  [[maybe_unused]] const ssize_t n = ::write(fd, line.data(), line.size());
}

RequestWatch::~RequestWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  if (err_fd_ >= 0) ::close(err_fd_);
}

void RequestWatch::begin(const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  active_ = true;
  what_ = what;
  since_ = std::chrono::steady_clock::now();
}

void RequestWatch::end() {
  std::lock_guard<std::mutex> lock(mu_);
  active_ = false;
}

void RequestWatch::run() {
  std::unique_lock<std::mutex> lock(mu_);
  double next_note = note_every_s_;
  std::chrono::steady_clock::time_point seen{};
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(200));
    if (stop_ || !active_) continue;
    if (since_ != seen) seen = since_, next_note = note_every_s_;  // a new request
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - since_).count();
    if (timeout_s_ > 0 && waited >= timeout_s_) {
      char secs[32];
      std::snprintf(secs, sizeof secs, "%g", timeout_s_);
      spdlog::default_logger()->flush();
      const std::string why = what_.find("://") != std::string::npos ? timeout_hint(what_) : "";
      say("downscale fetch: error: timed out after " + std::string(secs) + " s waiting for " + what_ + " (" + setting_ +
          "); nothing was written" + why + "\n");
      _exit(kExitFailure);  // the request cannot be unwound; the lock goes with the process
    }
    if (note_every_s_ > 0 && waited >= next_note) {
      const std::time_t t = std::time(nullptr);
      char clock[16];
      std::strftime(clock, sizeof clock, "%H:%M:%S", std::localtime(&t));
      say(fmt::format("[{}] [fetch] waiting for {} ({:.0f} s)\n", clock, what_, waited));
      next_note += note_every_s_;
    }
  }
}

}  // namespace ds
