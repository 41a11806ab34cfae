#include "io/stop_signal.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "io/launch_rank.h"

namespace ds {

namespace {

// Lock-free, so reading and writing it in a handler is async-signal-safe.
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);
// set_stop_message_prefix's text for the handler: a fixed buffer, written before the handlers
// can run with it (setup_logging, before any stage's work), read with write(2) only.
char g_prefix[96] = {0};
size_t g_prefix_len = 0;

void on_stop_signal(int signo) {
  int none = 0;
  if (g_signal.compare_exchange_strong(none, signo)) {
    // Said at once (write(2) is async-signal-safe; the logger is not): a training step on a CPU
    // can take half a minute, and a Ctrl-C that nothing acknowledges gets pressed again.
    static const char kInt[] = "downscale: SIGINT: stopping at the next safe point (Ctrl-C again quits at once)\n";
    static const char kTerm[] = "downscale: SIGTERM: stopping at the next safe point\n";
    static const char kUsr1[] = "downscale: SIGUSR1: stopping at the next safe point (train: checkpoint, exit 75 to be requeued; other stages: exit 138)\n";
    static const char kOther[] = "downscale: stop signal received: stopping at the next safe point\n";
    const char* text = kOther;
    size_t len = sizeof kOther - 1;
    if (signo == SIGINT) text = kInt, len = sizeof kInt - 1;
    if (signo == SIGTERM) text = kTerm, len = sizeof kTerm - 1;
    if (signo == SIGUSR1) text = kUsr1, len = sizeof kUsr1 - 1;
    // One write: several ranks' lines do not interleave.
    char line[256];
    size_t n = 0;
    line[n++] = '\n';
    for (size_t i = 0; i < g_prefix_len && n < sizeof line; ++i) line[n++] = g_prefix[i];
    for (size_t i = 0; i < len && n < sizeof line; ++i) line[n++] = text[i];
    const ssize_t ignored = write(STDERR_FILENO, line, n);
    (void)ignored;
  } else if (signo == SIGINT) {
    // Ctrl-C a second time: the user does not want to wait for the safe point.
    signal(SIGINT, SIG_DFL);
    raise(SIGINT);
  }
}

bool pid_alive(long pid) {
  if (pid <= 0) return false;
  // EPERM: alive but someone else's.
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

// When process `pid` started, in seconds since the epoch, from /proc (its start in clock ticks
// after boot, and the boot time); NaN when it cannot be read (no /proc, the process gone).
double process_start_time(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return NAN;
  // Field 2, the command, is in parentheses and may hold spaces or parentheses itself: the
  // fields counted from after its last ')' start at field 3, so starttime (22) is the 20th.
  const auto close = line.rfind(')');
  if (close == std::string::npos) return NAN;
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i)
    if (!(rest >> field)) return NAN;
  std::ifstream proc("/proc/stat");
  std::string key;
  double boot = NAN;
  while (proc >> key && key != "btime") continue;  // "btime <seconds since the epoch>"
  proc >> boot;
  const long ticks = ::sysconf(_SC_CLK_TCK);
  return ticks > 0 && proc ? boot + std::strtod(field.c_str(), nullptr) / double(ticks) : NAN;
}

// Whether the live process `pid` cannot have written `path`: it started more than a minute after
// the file was last modified, so its pid was reused. The minute covers what can make a writer
// look younger than its file: coarse mtimes (2 s on FAT and SMB), a file server's clock ahead
// of this host's, and a step of this host's clock since the writer started (the start is
// derived from the boot time as read now). Pid reuse comes far later than that.
bool started_after(long pid, const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  const double modified = double(st.st_mtim.tv_sec) + 1e-9 * double(st.st_mtim.tv_nsec);
  const double start = process_start_time(pid);
  return !std::isnan(start) && start > modified + 60.0;
}

// The pid of "<name>.tmp-<pid>", or -1 when the name does not end so.
long temp_pid(const std::string& name) {
  const auto at = name.rfind(".tmp-");
  if (at == std::string::npos || at + 5 >= name.size()) return -1;
  long pid = 0;
  for (size_t i = at + 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || pid > 100000000) return -1;
    pid = pid * 10 + (name[i] - '0');
  }
  return pid;
}

}  // namespace

void set_stop_message_prefix(const std::string& prefix) {
  const size_t n = std::min(prefix.size(), sizeof g_prefix - 1);
  g_prefix_len = 0;  // the handler writes no prefix while it changes
  std::copy(prefix.begin(), prefix.begin() + n, g_prefix);
  g_prefix_len = n;
}

std::string stop_message_prefix() { return std::string(g_prefix, g_prefix_len); }

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  // Restart interrupted system calls: libraries (HDF5, netCDF, MPI) need not see EINTR; the
  // stages look at the flag at their safe points.
  sa.sa_flags = SA_RESTART;
  for (int s : {SIGINT, SIGTERM, SIGUSR1}) sigaction(s, &sa, nullptr);
}

bool stop_requested() { return g_signal.load() != 0; }
int stop_signal_number() { return g_signal.load(); }
void set_stop_request(int signo) { g_signal.store(signo); }

std::string signal_name(int signo) {
  switch (signo) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    case SIGHUP: return "SIGHUP";
    default: return "signal " + std::to_string(signo);
  }
}

void test_wait_for_signal(const std::string& what) {
  static const char* const at = std::getenv("DOWNSCALE_TEST_WAIT_AT");
  static bool done = false;
  if (!at || !*at || done || what.find(at) == std::string::npos) return;
  if (const char* rank = std::getenv("DOWNSCALE_TEST_WAIT_RANK"); rank && *rank) {
    const char* mine = launch_rank();
    if (std::string(mine ? mine : "0") != rank) return;
  }
  done = true;
  std::fprintf(stderr, "waiting for a signal at %s\n", what.c_str());
  std::fflush(stderr);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!stop_requested() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

int signal_after_completion(const std::string& stage, int rc, std::string* message) {
  const int sig = stop_signal_number();
  if (rc != 0 || sig == 0) return rc;
  const int code = stage == "train" && sig == SIGUSR1 ? kExitRequeue : 128 + sig;
  if (message)
    *message = "downscale " + stage + ": " + signal_name(sig) +
               " came after the last safe point: the work is complete; exit " + std::to_string(code);
  return code;
}

void throw_if_stop_requested(const std::string& what) {
  test_wait_for_signal(what);
  const int s = g_signal.load();
  if (s) throw Interrupted(s, "interrupted by " + signal_name(s) + " while " + what);
}

size_t remove_stale_temps(const std::string& dir, bool recursive) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return 0;
  size_t removed = 0;
  auto consider = [&](const fs::directory_entry& e) {
    std::error_code ec2;
    if (!e.is_regular_file(ec2)) return;
    const std::string name = e.path().filename().string();
    const long pid = temp_pid(name);
    if (pid < 0) return;
    const bool alive = pid_alive(pid);
    if (alive && !started_after(pid, e.path().string())) return;
    if (fs::remove(e.path(), ec2)) {
      ++removed;
      spdlog::info("removed {}, left by process {} which {}", e.path().string(), pid,
                   alive ? "is no longer running (its pid is another's, started after the file's last change)"
                         : "is no longer running");
    }
  };
  if (recursive) {
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
      consider(*it);
  } else {
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
      consider(*it);
  }
  return removed;
}

}  // namespace ds
