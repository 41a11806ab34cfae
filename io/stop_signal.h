// Stopping at a safe point on SIGINT, SIGTERM and SIGUSR1 (Slurm sends SIGTERM at the time limit,
// and SIGUSR1 ahead of it with `#SBATCH --signal=B:USR1@120`). The handlers only record the
// signal (async-signal-safe); the stages poll stop_requested() / throw_if_stop_requested() at
// points where stopping leaves nothing half done (a block of days, a training step, a batch of
// predictions). The Interrupted error then unwinds: every AtomicFile not yet committed removes
// its temporary file, and `downscale` prints one line and exits 128 + the signal (130, 143).
#pragma once
#include <string>

#include "io/error.h"

namespace ds {

// `downscale train` stopped by SIGUSR1 after writing checkpoint_last.h5: "run me again with
// --resume" (EX_TEMPFAIL of sysexits.h). slurm/train_forhlr2.sh requeues the job on this code.
constexpr int kExitRequeue = 75;

// Installs the flag-setting handlers for SIGINT, SIGTERM and SIGUSR1 (once, in main). A second
// SIGINT (Ctrl-C pressed again) ends the process at once, as if there were no handler.
void install_stop_handlers();
// True once one of those signals arrived.
bool stop_requested();
// The signal that arrived first (0: none).
int stop_signal_number();
// "SIGTERM", "SIGINT", "SIGUSR1", else "signal N".
std::string signal_name(int signo);

// Under MPI, "[train rank 1] ": put before the handler's "stopping at the next safe point" line
// (written from the handler, outside the logger), so that every line of a rank names it as the
// logger's do. Empty: none (one process). Set by setup_logging.
void set_stop_message_prefix(const std::string& prefix);
std::string stop_message_prefix();

// As if `signo` had arrived (tests; and train, whose ranks agree on one signal); 0 clears it.
void set_stop_request(int signo);

// Stopped by a signal: exit code 128 + signal unless given (train's SIGUSR1: kExitRequeue).
// main prints the message without "error:"; it starts with "interrupted by SIGTERM".
class Interrupted : public Error {
 public:
  Interrupted(int signo, const std::string& what, int exit_code = 0)
      : Error(what, static_cast<ExitCode>(exit_code ? exit_code : 128 + signo)), signo_(signo) {}
  int signal_number() const { return signo_; }

 private:
  int signo_;
};

// The exit code of a stage that returned `rc`: a signal that came after its last safe point
// leaves the work complete, and the code still says the signal came, as a stop at a safe point
// would (a scheduler's TERM is not reported as success): 128 + signal, or for train's SIGUSR1
// kExitRequeue (the requeued job's resume finds the run done). `rc` when no signal came or the
// stage failed. `message`, when the code changes: the line main prints.
int signal_after_completion(const std::string& stage, int rc, std::string* message);

// Throws Interrupted("interrupted by SIGTERM while <what>") when a stop was requested.
void throw_if_stop_requested(const std::string& what);

// Test hook (tests/cli/faults_signals.sh), called at every safe point (throw_if_stop_requested
// calls it): with DOWNSCALE_TEST_WAIT_AT=TEXT in the environment, the first safe point whose
// description contains TEXT prints "waiting for a signal at <what>" on stderr and waits, up to
// 60 s, for one, so that a test signals a stage in the middle of its work without racing it.
// DOWNSCALE_TEST_WAIT_RANK=N limits it to MPI rank N. Without the variable it does nothing.
void test_wait_for_signal(const std::string& what);

// Removes temporary files "<name>.tmp-<pid>" (AtomicFile's) in `dir` (and its subfolders when
// `recursive`) whose pid is not a live process on this host: the leftovers of a run that was
// killed. A pid alive here is kept (it may be a writer) unless its process started more than a
// minute after the file was last changed: the pid was reused, and that process never wrote the
// file. Where its start cannot be read (no /proc), it is kept: keeping a stale file is the safe
// mistake. Returns how many files were removed; a missing folder is not an error.
size_t remove_stale_temps(const std::string& dir, bool recursive = false);

}  // namespace ds
