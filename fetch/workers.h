// Several chunks in flight, one worker process each. netCDF-C is not thread-safe (its DAP
// client, libcurl handles and caches are global state), so threads would have to serialize
// every nc_* call, which is exactly the network wait we want to overlap. A forked worker has its
// own copy of that state, opens its own connection, and can be killed without corrupting the
// parent.
//
// Workers live for many jobs: a worker that finished a job is handed the next one, so what it
// set up for the first (an open OPeNDAP source: its DDS, DAS and coordinate requests) serves
// the rest. A worker whose job failed exits, taking that state with it; the retry runs in a
// fresh worker that opens the source again (a dropped connection or a damaged response never
// leaks into the next attempt). Workers report progress and results as lines on a socket; the
// parent alone schedules, retries with exponential backoff, and records results.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ds {

struct RetryPolicy {
  int attempts = 5;          // per job, the first try included
  double delay_s = 5;        // before the 2nd attempt; doubled before each further one
  double max_delay_s = 300;  // cap of one wait
  // A worker that reports nothing (no bytes, no result) for this long is killed and its job
  // failed as transient, "timed out after N s": a request that hangs inside netCDF-C/libcurl
  // cannot be interrupted from within. 0: never.
  double timeout_s = 0;
  double waiting_note_s = 5;  // while a worker reports nothing, on_waiting every this many seconds
};

struct WorkerHooks {
  // Runs in a worker: does job i, may call report(bytes) as data arrives, returns a one-line
  // result. Throws TransientError for what is worth retrying; any other Error is permanent.
  // State it keeps between calls (in captured variables) lives on in that worker for its later
  // jobs, and is lost with the worker after a failure.
  std::function<std::string(size_t i, const std::function<void(uint64_t)>& report)> work;
  // The rest run in the parent.
  std::function<void(size_t i, uint64_t bytes)> on_bytes;
  std::function<void(size_t i, const std::string& result)> on_done;
  // A transient failure: `attempt` failed after reporting `bytes`; retried after `delay` s.
  std::function<void(size_t i, int attempt, const std::string& error, uint64_t bytes, double delay)> on_retry;
  // Job i's worker has reported nothing for `seconds` (every RetryPolicy::waiting_note_s).
  std::function<void(size_t i, double seconds)> on_waiting;
  // What job i waits for, for the time-out's message ("http://host/file.nc").
  std::function<std::string(size_t i)> describe;
  // Appended to job i's last time-out, when the job is given up: whether its server still takes
  // connections (fetch's timeout_hint), the advice that differs for a hung server and no network.
  std::function<std::string(size_t i)> timeout_hint;
  // Job i's worker `pid` was stopped or failed (another job failed for good, a signal, its own
  // failure): remove what it left.
  std::function<void(size_t i, pid_t pid)> on_abandon;
};

// Runs the jobs with at most `parallel` workers at a time. Returns when all succeeded; throws
// the first permanent failure (as an Error with the worker's exit code and message) or a
// transient one that used up its attempts, after stopping and cleaning up the other workers.
// SIGINT/SIGTERM to the parent stop everything the same way (Error "interrupted").
void run_in_processes(const std::vector<size_t>& jobs, int parallel, const RetryPolicy& retry, const WorkerHooks& hooks);

}  // namespace ds
