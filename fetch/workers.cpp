#include "fetch/workers.h"

#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>

#include "io/error.h"
#include "io/stop_signal.h"
#include "fetch/chunk.h"

namespace ds {

namespace {

void write_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the parent is gone; nothing to tell
    off += static_cast<size_t>(n);
  }
}

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

// A worker: reads job numbers ("<i>\n") from the socket until the parent shuts it, and for each
// writes "B <bytes>" lines, then "R <result>" (and waits for the next job) or
// "E <T|P> <code> <msg>" (and exits: whatever state the failed job left, an open source, a
// half-read response, goes with the process).
[[noreturn]] void worker_main(int fd, const WorkerHooks& hooks, const sigset_t& unblock) {
  // The parent's handlers only set a flag; a worker stopped by a signal must die. The signals
  // were blocked across fork(), so one sent before this point waits until here, then kills.
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  signal(SIGUSR1, SIG_DFL);
  signal(SIGPIPE, SIG_DFL);
  sigprocmask(SIG_SETMASK, &unblock, nullptr);
  prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive the parent (a killed fetch stops its workers)
  // A worker's jobs allocate buffers of the same sizes again and again (a response, a piece).
  // glibc gives large ones back to the kernel when freed, and the next job faults every page in
  // again (a sixth of a fetch's CPU time, measured with perf): keep them in the process instead.
  // The resident set stays at one job's peak, which piece_mb bounds.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  const auto report = [fd](uint64_t n) { write_all(fd, "B " + std::to_string(n) + "\n"); };
  std::string in;
  for (;;) {
    size_t nl;
    while ((nl = in.find('\n')) == std::string::npos) {
      char buf[64];
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) _exit(0);  // no more work (or no parent)
      in.append(buf, static_cast<size_t>(n));
    }
    const size_t job = std::strtoull(in.c_str(), nullptr, 10);
    in.erase(0, nl + 1);
    int code = 0;
    try {
      write_all(fd, "R " + one_line(hooks.work(job, report)) + "\n");
      continue;
    } catch (const TransientError& e) {
      write_all(fd, "E T 1 " + one_line(e.what()) + "\n");
      code = 1;
    } catch (const Error& e) {
      write_all(fd, "E P " + std::to_string(e.code()) + " " + one_line(e.what()) + "\n");
      code = e.code();
    } catch (const std::exception& e) {
      write_all(fd, "E P 1 " + one_line(e.what()) + "\n");
      code = 1;
    }
    ::close(fd);
    _exit(code);  // no atexit handlers or destructors of the parent's state
  }
}

struct Worker {
  int fd = -1;           // the parent's end of the socket pair
  bool busy = false;     // a job was sent and neither its result nor its failure has come back
  bool closing = false;  // told there is no more work
  size_t job = 0;
  std::string buf, error;
  bool transient = false;
  int code = 1;
  uint64_t bytes = 0;    // reported for the current job
  std::chrono::steady_clock::time_point heard;  // the job's start or its last report
  double next_note = 0;  // seconds of silence at which on_waiting is next called
};

using Clock = std::chrono::steady_clock;

struct Pending {
  size_t job;
  Clock::time_point not_before;
};

}  // namespace

void run_in_processes(const std::vector<size_t>& jobs, int parallel, const RetryPolicy& retry, const WorkerHooks& hooks) {
  parallel = std::max(1, parallel);
  std::deque<Pending> pending;
  for (size_t j : jobs) pending.push_back({j, Clock::now()});
  std::map<size_t, int> attempts;
  std::map<pid_t, Worker> workers;

  // SIGINT, SIGTERM and SIGUSR1 are seen through ds::stop_requested() (io/stop_signal.h: main
  // installs the flag-setting handlers), at least every 200 ms below.

  // Stops every worker, lets the caller clean up after the busy ones, and throws `err` (an
  // Error or an Interrupted: thrown as the type it was given).
  auto abort_all = [&](const auto& err) {
    // Close our ends before waiting, so that a worker that is idle (or somehow outlives the
    // signal) reads the end of its channel and exits rather than wait for a job that never comes
    // while we wait for it.
    for (auto& [pid, w] : workers) {
      kill(pid, SIGTERM);
      ::close(w.fd);
    }
    for (auto& [pid, w] : workers) {
      while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {}
      if (w.busy && hooks.on_abandon) hooks.on_abandon(w.job, pid);
    }
    workers.clear();
    throw err;
  };

  auto start_worker = [&]() -> pid_t {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
      abort_all(Error(std::string("cannot create a socket pair: ") + std::strerror(errno)));
    std::fflush(nullptr);
    // Until worker_main resets them, a new worker has the parent's flag-setting handlers: a
    // SIGTERM from abort_all arriving then would be swallowed and the worker would carry on.
    sigset_t stop, before;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGUSR1);
    sigprocmask(SIG_BLOCK, &stop, &before);
    const pid_t pid = fork();
    if (pid == 0) {
      ::close(sv[0]);
      for (auto& [other, w] : workers) ::close(w.fd);  // the other workers' channels are not ours
      worker_main(sv[1], hooks, before);
    }
    sigprocmask(SIG_SETMASK, &before, nullptr);
    if (pid < 0) abort_all(Error(std::string("cannot start a worker process: ") + std::strerror(errno)));
    ::close(sv[1]);
    workers[pid].fd = sv[0];
    return pid;
  };

  // A busy worker's job failed (the worker is gone): abandon its leftovers, then retry the job
  // later or give up.
  auto job_failed = [&](const Worker& done, pid_t pid, const std::string& error, bool transient) {
    if (hooks.on_abandon) hooks.on_abandon(done.job, pid);
    const int tried = attempts[done.job];
    if (!transient) {
      const ExitCode code = done.code == kExitInput ? kExitInput : done.code == kExitUsage ? kExitUsage : kExitFailure;
      abort_all(Error(error, code));
    }
    if (tried >= retry.attempts)
      abort_all(Error(error + " (gave up after " + std::to_string(tried) + " attempts)", kExitFailure));
    const double delay = std::min(retry.max_delay_s, retry.delay_s * std::pow(2.0, tried - 1));
    if (hooks.on_retry) hooks.on_retry(done.job, tried, error, done.bytes, delay);
    pending.push_back({done.job, Clock::now() + std::chrono::microseconds(static_cast<int64_t>(delay * 1e6))});
  };

  auto busy_count = [&] {
    return std::count_if(workers.begin(), workers.end(), [](const auto& p) { return p.second.busy; });
  };

  while (!pending.empty() || busy_count() > 0) {
    if (stop_requested())
      abort_all(Interrupted(stop_signal_number(), "interrupted by " + signal_name(stop_signal_number()) +
                                                      " while fetching; complete chunks are kept, rerun to resume"));
    // Hand what is due to idle workers, starting new ones while there is room.
    const auto now = Clock::now();
    for (auto it = pending.begin(); it != pending.end();) {
      if (it->not_before > now) { ++it; continue; }
      pid_t pid = -1;
      for (auto& [p, w] : workers)
        if (!w.busy && !w.closing) { pid = p; break; }
      if (pid < 0) {
        if (static_cast<int>(workers.size()) >= parallel) break;
        pid = start_worker();
      }
      Worker& w = workers[pid];
      const std::string line = std::to_string(it->job) + "\n";
      if (send(w.fd, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) {
        // It died while idle: its end of file is read below; the job waits for another worker.
        w.closing = true;
        ++it;
        continue;
      }
      w.busy = true;
      w.job = it->job;
      w.error.clear();
      w.transient = false;
      w.code = 1;
      w.bytes = 0;
      w.heard = Clock::now();
      w.next_note = retry.waiting_note_s;
      ++attempts[it->job];
      it = pending.erase(it);
    }
    // Nothing left to hand out: idle workers may go (a retry still waiting keeps them).
    if (pending.empty())
      for (auto& [pid, w] : workers)
        if (!w.busy && !w.closing) {
          shutdown(w.fd, SHUT_WR);
          w.closing = true;
        }

    // Wait for output from the workers (or the next retry falling due).
    std::vector<pollfd> pfds;
    std::vector<pid_t> pids;
    for (auto& [pid, w] : workers) {
      pfds.push_back({w.fd, POLLIN, 0});
      pids.push_back(pid);
    }
    // At most 200 ms (to see signals), less when a retry falls due sooner and a worker is free
    // for it (with none free, the next event is a worker's output, not the clock).
    int timeout_ms = 200;
    const bool room = static_cast<int>(workers.size()) < parallel ||
                      std::any_of(workers.begin(), workers.end(), [](const auto& p) { return !p.second.busy && !p.second.closing; });
    for (const auto& p : pending) {
      if (!room) break;
      const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(p.not_before - Clock::now()).count();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(wait + 1, 0, timeout_ms));
    }
    if (pfds.empty()) {
      // Only delayed retries left: sleep until the earliest is due (in steps, to see signals).
      poll(nullptr, 0, timeout_ms);
      continue;
    }
    const int n = poll(pfds.data(), pfds.size(), timeout_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      abort_all(Error(std::string("poll failed: ") + std::strerror(errno)));
    }
    for (size_t k = 0; k < pfds.size(); ++k) {
      if (!(pfds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const pid_t pid = pids[k];
      Worker& w = workers[pid];
      char buf[4096];
      const ssize_t got = ::read(w.fd, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got > 0) {
        w.buf.append(buf, static_cast<size_t>(got));
        size_t nl;
        while ((nl = w.buf.find('\n')) != std::string::npos) {
          const std::string line = w.buf.substr(0, nl);
          w.buf.erase(0, nl + 1);
          w.heard = Clock::now();
          w.next_note = retry.waiting_note_s;
          if (line.rfind("B ", 0) == 0) {
            const uint64_t b = std::stoull(line.substr(2));
            w.bytes += b;
            if (hooks.on_bytes) hooks.on_bytes(w.job, b);
          } else if (line.rfind("R ", 0) == 0 && w.busy) {
            w.busy = false;  // ready for the next job
            // The parent's own work on a result (recording it, joining it) can fail too: stop
            // the workers like any other failure rather than leaving them running.
            try {
              if (hooks.on_done) hooks.on_done(w.job, line.substr(2));
            } catch (const Error& e) {
              abort_all(e);
            } catch (const std::exception& e) {
              abort_all(Error(e.what()));
            }
          } else if (line.rfind("E ", 0) == 0 && line.size() > 4) {
            w.transient = line[2] == 'T';
            const size_t sp = line.find(' ', 4);
            w.code = std::atoi(line.substr(4, sp - 4).c_str());
            w.error = sp == std::string::npos ? "" : line.substr(sp + 1);
          }
        }
        continue;
      }
      // End of the channel: the worker exited (after a failure, when told to, or killed).
      int status = 0;
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
      ::close(w.fd);
      const Worker done = w;
      workers.erase(pid);
      if (!done.busy) continue;
      std::string error = done.error;
      bool transient = done.transient;
      if (error.empty()) {
        // Killed without a word (out of memory, a crash in a library): worth another try.
        transient = true;
        error = WIFSIGNALED(status) ? "worker process killed by signal " + std::to_string(WTERMSIG(status))
                                    : "worker process exited with status " + std::to_string(WEXITSTATUS(status));
      }
      job_failed(done, pid, error, transient);
    }

    // Workers silent for too long: a hung request. Killed, the job goes to the back of the
    // queue like any transient failure (other chunks go on meanwhile).
    const auto now_after = Clock::now();
    std::vector<pid_t> hung;
    for (auto& [pid, w] : workers) {
      if (!w.busy) continue;
      const double silent = std::chrono::duration<double>(now_after - w.heard).count();
      if (retry.timeout_s > 0 && silent >= retry.timeout_s) {
        hung.push_back(pid);
      } else if (retry.waiting_note_s > 0 && silent >= w.next_note) {
        if (hooks.on_waiting) hooks.on_waiting(w.job, silent);
        w.next_note += retry.waiting_note_s;
      }
    }
    for (pid_t pid : hung) {
      kill(pid, SIGKILL);
      while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {}
      const Worker done = workers[pid];
      ::close(done.fd);
      workers.erase(pid);
      const std::string what = hooks.describe ? hooks.describe(done.job) : "job " + std::to_string(done.job);
      char secs[32];
      std::snprintf(secs, sizeof secs, "%g", retry.timeout_s);
      const bool last = attempts[done.job] >= retry.attempts;
      job_failed(done, pid, "timed out after " + std::string(secs) + " s waiting for " + what + " (fetch.timeout_s)" +
                                (last && hooks.timeout_hint ? hooks.timeout_hint(done.job) : ""),
                 true);
    }
  }
  // All done: the idle workers were told to go; collect them.
  for (auto& [pid, w] : workers) {
    shutdown(w.fd, SHUT_WR);
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {}
    ::close(w.fd);
  }
}

}  // namespace ds
