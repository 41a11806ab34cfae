// One `downscale <stage>` per run folder at a time: two trains in one folder would interleave
// metrics.csv and overwrite each other's checkpoints, two preprocesses each other's store.
// RunLock takes an exclusive, non-blocking flock on <dir>/.downscale-<stage>.lock (creating the
// folder) and writes "pid host" into it, so the second job's error names the first. The kernel
// drops the lock when the process ends however it ends (kill -9 included): a stale lock file is
// harmless. Under MPI only rank 0 takes it, before the other ranks start work (train's driver).
// A stage refused before it wrote anything (a usage error, a missing input) leaves nothing
// behind: the folders the lock created are removed again with its file while they hold nothing
// else.
#pragma once
#include <string>
#include <vector>

namespace ds {

class RunLock {
 public:
  // Throws Error (exit 1): "another downscale train (pid N on host H) is using <dir> (lock <file>)".
  RunLock(const std::string& dir, const std::string& stage);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

  const std::string& path() const { return path_; }

  // Throws the constructor's Error when another process holds <dir>'s lock of `stage`, without
  // creating anything (train --check: a launch would fail on it, though the check itself is fine).
  static void check_free(const std::string& dir, const std::string& stage);

  // Tests only (null otherwise): called with the attempt number between the lock file's open and
  // its flock, where the race the constructor closes lies, so a test can end a holder there.
  static void (*between_open_and_lock)(const std::string& path, int attempt);

 private:
  std::string path_;
  std::vector<std::string> created_;  // the folders make_dirs made for it, deepest first
  int fd_ = -1;
};

}  // namespace ds
