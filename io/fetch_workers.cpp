#include "io/fetch_workers.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
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
#include "io/fetch_chunk.h"

namespace ds {

namespace {

volatile sig_atomic_t g_stop_signal = 0;
void on_stop_signal(int sig) { g_stop_signal = sig; }

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

// The child: runs job i, writes "B <bytes>" lines, then "R <result>" or "E <T|P> <code> <msg>".
[[noreturn]] void child_main(size_t i, int fd, const WorkerHooks& hooks) {
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive the parent (a killed fetch stops its children)
  int code = 0;
  try {
    const std::string result = hooks.work(i, [fd](uint64_t n) { write_all(fd, "B " + std::to_string(n) + "\n"); });
    write_all(fd, "R " + one_line(result) + "\n");
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

struct Running {
  size_t job = 0;
  int fd = -1;
  std::string buf, result, error;
  bool transient = false, ok = false;
  int code = 1;
  uint64_t bytes = 0;
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
  std::map<pid_t, Running> running;

  g_stop_signal = 0;
  struct sigaction sa {}, old_int {}, old_term {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  auto restore = [&] {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
  };

  // Stops every child, lets the caller clean up after each, and throws `err`.
  auto abort_all = [&](const Error& err) {
    for (auto& [pid, r] : running) kill(pid, SIGTERM);
    for (auto& [pid, r] : running) {
      while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {}
      ::close(r.fd);
      if (hooks.on_abandon) hooks.on_abandon(r.job, pid);
    }
    running.clear();
    restore();
    throw err;
  };

  while (!pending.empty() || !running.empty()) {
    if (g_stop_signal) abort_all(Error("interrupted by signal " + std::to_string(g_stop_signal) +
                                       "; complete chunks are kept, rerun to resume"));
    // Start what is due while there is room.
    const auto now = Clock::now();
    for (auto it = pending.begin(); it != pending.end() && static_cast<int>(running.size()) < parallel;) {
      if (it->not_before > now) { ++it; continue; }
      int fds[2];
      if (pipe(fds) != 0) abort_all(Error(std::string("cannot create a pipe: ") + std::strerror(errno)));
      std::fflush(nullptr);
      const pid_t pid = fork();
      if (pid < 0) abort_all(Error(std::string("cannot start a worker process: ") + std::strerror(errno)));
      if (pid == 0) {
        ::close(fds[0]);
        child_main(it->job, fds[1], hooks);
      }
      ::close(fds[1]);
      ++attempts[it->job];
      Running r;
      r.job = it->job;
      r.fd = fds[0];
      running[pid] = r;
      it = pending.erase(it);
    }

    // Wait for output from the children (or the next retry falling due).
    std::vector<pollfd> pfds;
    std::vector<pid_t> pids;
    for (auto& [pid, r] : running) {
      pfds.push_back({r.fd, POLLIN, 0});
      pids.push_back(pid);
    }
    int timeout_ms = 200;
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
      Running& r = running[pids[k]];
      char buf[4096];
      const ssize_t got = ::read(r.fd, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got > 0) {
        r.buf.append(buf, static_cast<size_t>(got));
        size_t nl;
        while ((nl = r.buf.find('\n')) != std::string::npos) {
          const std::string line = r.buf.substr(0, nl);
          r.buf.erase(0, nl + 1);
          if (line.rfind("B ", 0) == 0) {
            const uint64_t b = std::stoull(line.substr(2));
            r.bytes += b;
            if (hooks.on_bytes) hooks.on_bytes(r.job, b);
          } else if (line.rfind("R ", 0) == 0) {
            r.ok = true;
            r.result = line.substr(2);
          } else if (line.rfind("E ", 0) == 0 && line.size() > 4) {
            r.transient = line[2] == 'T';
            const size_t sp = line.find(' ', 4);
            r.code = std::atoi(line.substr(4, sp - 4).c_str());
            r.error = sp == std::string::npos ? "" : line.substr(sp + 1);
          }
        }
        continue;
      }
      // End of the pipe: the child is done.
      const pid_t pid = pids[k];
      int status = 0;
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
      ::close(r.fd);
      Running done = r;
      running.erase(pid);
      if (done.ok && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        if (hooks.on_done) hooks.on_done(done.job, done.result);
        continue;
      }
      if (done.error.empty()) {
        // Killed without a word (out of memory, a crash in a library): worth another try.
        done.transient = true;
        done.error = WIFSIGNALED(status) ? "worker process killed by signal " + std::to_string(WTERMSIG(status))
                                         : "worker process exited with status " + std::to_string(WEXITSTATUS(status));
      }
      if (hooks.on_abandon) hooks.on_abandon(done.job, pid);
      const int tried = attempts[done.job];
      if (!done.transient) {
        const ExitCode code = done.code == kExitInput ? kExitInput : done.code == kExitUsage ? kExitUsage : kExitFailure;
        abort_all(Error(done.error, code));
      }
      if (tried >= retry.attempts)
        abort_all(Error(done.error + " (gave up after " + std::to_string(tried) + " attempts)", kExitFailure));
      const double delay = std::min(retry.max_delay_s, retry.delay_s * std::pow(2.0, tried - 1));
      if (hooks.on_retry) hooks.on_retry(done.job, tried, done.error, done.bytes, delay);
      pending.push_back({done.job, Clock::now() + std::chrono::microseconds(static_cast<int64_t>(delay * 1e6))});
    }
  }
  restore();
}

}  // namespace ds
