// io/stop_signal.h and io/run_lock.h: the flag set by a real signal, the Interrupted exit codes,
// stale temporary files of dead processes, one lock per folder and stage.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "io/run_lock.h"
#include "io/stop_signal.h"

using namespace ds;
namespace fs = std::filesystem;

namespace {
fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}
void touch(const fs::path& p) { std::ofstream(p) << "x"; }
// A pid that was alive and is no longer: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}
}  // namespace

TEST(StopSignal, ASignalSetsTheFlagAndSafePointsThrowWith128PlusIt) {
  install_stop_handlers();
  set_stop_request(0);
  EXPECT_NO_THROW(throw_if_stop_requested("nothing"));
  ASSERT_EQ(raise(SIGTERM), 0);  // the process survives: the handler only records it
  EXPECT_TRUE(stop_requested());
  EXPECT_EQ(stop_signal_number(), SIGTERM);
  try {
    throw_if_stop_requested("writing block 3");
    FAIL() << "no Interrupted";
  } catch (const Interrupted& e) {
    EXPECT_EQ(e.code(), 143);
    EXPECT_STREQ(e.what(), "interrupted by SIGTERM while writing block 3");
  }
  EXPECT_EQ(Interrupted(SIGUSR1, "x", kExitRequeue).code(), 75);
  set_stop_request(0);
  signal(SIGTERM, SIG_DFL);
  signal(SIGINT, SIG_DFL);
  signal(SIGUSR1, SIG_DFL);
}

// A signal after a stage's last safe point: its work is complete, and the exit code still says
// the signal came (evaluate, signalled while drawing its last figure, exited 0 after saying
// "stopping at the next safe point"); train's SIGUSR1 is the requeue's 75.
TEST(StopSignal, ASignalAfterTheLastSafePointStillGivesItsExitCode) {
  set_stop_request(0);
  std::string message;
  EXPECT_EQ(signal_after_completion("evaluate", 0, &message), 0);
  EXPECT_EQ(message, "");
  set_stop_request(SIGTERM);
  EXPECT_EQ(signal_after_completion("evaluate", 0, &message), 143);
  EXPECT_EQ(message, "downscale evaluate: SIGTERM came after the last safe point: the work is complete; exit 143");
  EXPECT_EQ(signal_after_completion("evaluate", 3, nullptr), 3);  // a failure keeps its own code
  set_stop_request(SIGUSR1);
  EXPECT_EQ(signal_after_completion("train", 0, nullptr), kExitRequeue);
  EXPECT_EQ(signal_after_completion("predict", 0, nullptr), 138);
  set_stop_request(0);
}

TEST(StopSignal, StaleTempsOfDeadProcessesGoLiveOnesStay) {
  const fs::path d = fresh_dir("ds-stale");
  const std::string dead = std::to_string(dead_pid()), me = std::to_string(::getpid());
  touch(d / ("store.h5.tmp-" + dead));
  touch(d / ("store.h5.tmp-" + me));
  touch(d / "store.h5");
  touch(d / "notes.tmp-abc");
  fs::create_directories(d / "sub");
  touch(d / "sub" / ("x.nc.tmp-" + dead));
  EXPECT_EQ(remove_stale_temps(d.string()), 1u);
  EXPECT_FALSE(fs::exists(d / ("store.h5.tmp-" + dead)));
  EXPECT_TRUE(fs::exists(d / ("store.h5.tmp-" + me)));
  EXPECT_TRUE(fs::exists(d / "store.h5"));
  EXPECT_TRUE(fs::exists(d / "notes.tmp-abc"));
  EXPECT_TRUE(fs::exists(d / "sub" / ("x.nc.tmp-" + dead)));  // not recursive unless asked
  EXPECT_EQ(remove_stale_temps(d.string(), true), 1u);
  EXPECT_EQ(remove_stale_temps((d / "missing").string()), 0u);
  fs::remove_all(d);
}

// A pid reused by a process that started after the temporary file was last changed cannot be its
// writer: the file goes. The same live process with a file changed since it started keeps it
// (it may be writing). Before, any live pid kept its file for good.
TEST(StopSignal, AStaleTempWhosePidWasReusedGoes) {
  const fs::path d = fresh_dir("ds-reused");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::sleep(60);
    ::_exit(0);
  }
  const std::string pid = std::to_string(child);
  touch(d / ("old.h5.tmp-" + pid));
  touch(d / ("new.h5.tmp-" + pid));
  // Last changed an hour ago: before the child (started just now) existed.
  const struct timespec times[2] = {{::time(nullptr) - 3600, 0}, {::time(nullptr) - 3600, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, (d / ("old.h5.tmp-" + pid)).c_str(), times, 0), 0);
  EXPECT_EQ(remove_stale_temps(d.string()), 1u);
  EXPECT_FALSE(fs::exists(d / ("old.h5.tmp-" + pid)));
  EXPECT_TRUE(fs::exists(d / ("new.h5.tmp-" + pid)));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(remove_stale_temps(d.string()), 1u);  // its process gone: the other goes too
  fs::remove_all(d);
}

// A stage refused before it wrote anything leaves no folder behind (user test: `predict` of a
// model never trained left predict/<name>/ holding only its lock); one that wrote keeps it all,
// and a folder that was there before stays.
TEST(RunLock, FoldersItMadeAreRemovedWhenNothingElseWasWritten) {
  const fs::path base = fresh_dir("ds-lock-empty");
  { RunLock lock((base / "run/predict/mnn").string(), "predict"); }
  EXPECT_FALSE(fs::exists(base / "run")) << "an empty run/predict/mnn left behind";
  EXPECT_TRUE(fs::exists(base));
  {
    RunLock lock((base / "run/predict/mnn").string(), "predict");
    std::ofstream(base / "run/predict/mnn/out.nc") << "x";
  }
  EXPECT_TRUE(fs::exists(base / "run/predict/mnn/out.nc"));
  EXPECT_TRUE(fs::exists(base / "run/predict/mnn/.downscale-predict.lock"));
  fs::create_directories(base / "kept");
  { RunLock lock((base / "kept").string(), "train"); }
  EXPECT_TRUE(fs::exists(base / "kept"));
  fs::remove_all(base);
}

// The race RunLock's inode check closes: a process opens the lock file just as its holder, ending
// in a folder its lock made, unlinks it; a third process then creates and locks a new file under
// the name. The first one's flock of the unlinked file succeeds, and without the check two stages
// ran in one folder. Here the holder ends and the third process locks between the open and the
// flock (the seam RunLock::between_open_and_lock), as the scheduler could have it.
namespace {
int third_fd = -1;
void holder_ends_and_third_locks(const std::string& path, int attempt) {
  if (attempt != 0) return;
  ASSERT_EQ(::unlink(path.c_str()), 0);
  third_fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  ASSERT_GE(third_fd, 0);
  ASSERT_EQ(flock(third_fd, LOCK_EX | LOCK_NB), 0);
}
void holder_ends(const std::string& path, int attempt) {
  if (attempt == 0) ASSERT_EQ(::unlink(path.c_str()), 0);
}
}  // namespace

TEST(RunLock, AFileUnlinkedBetweenItsOpenAndItsLockIsNotTheLock) {
  const fs::path d = fresh_dir("ds-lock-race") / "train";
  fs::create_directories(d);
  std::ofstream(d / ".downscale-train.lock") << "1 old-holder\n";  // the holder's file, open as it ends
  RunLock::between_open_and_lock = holder_ends_and_third_locks;
  try {
    RunLock late(d.string(), "train");
    ADD_FAILURE() << "a lock taken on a file no longer under its name while another process held the name's";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another downscale train"), std::string::npos) << e.what();
  }
  ::close(third_fd);
  // The holder ended and nobody took its place: the lock is taken again on a new file, the one
  // the name leads to.
  RunLock::between_open_and_lock = holder_ends;
  {
    RunLock late(d.string(), "train");
    struct stat locked {}, named {};
    ASSERT_EQ(::stat(late.path().c_str(), &named), 0);
    const int probe = ::open(late.path().c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_EQ(::fstat(probe, &locked), 0);
    EXPECT_EQ(locked.st_ino, named.st_ino);
    EXPECT_NE(flock(probe, LOCK_EX | LOCK_NB), 0) << "the file under the name is not the one locked";
    ::close(probe);
  }
  RunLock::between_open_and_lock = nullptr;
  fs::remove_all(d.parent_path());
}

TEST(RunLock, ASecondLockOnTheSameFolderAndStageNamesTheFirst) {
  const fs::path d = fresh_dir("ds-lock") / "train";
  {
    RunLock first(d.string(), "train");
    EXPECT_TRUE(fs::exists(d / ".downscale-train.lock"));
    try {
      RunLock second(d.string(), "train");
      FAIL() << "second lock taken";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), kExitFailure);
      const std::string want = "another downscale train (pid " + std::to_string(::getpid()) + " on host ";
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("is using " + d.string()), std::string::npos) << e.what();
    }
    RunLock other_stage(d.string(), "predict");  // another stage's lock is another file
  }
  RunLock again(d.string(), "train");  // released with the first
  fs::remove_all(d.parent_path());
}
