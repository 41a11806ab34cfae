// The worker processes behind `fetch`: a worker serves job after job with what it set up kept
// (the open source), a failed job ends its worker so the retry starts from nothing, a worker
// killed from outside is retried without harm to the parent, and a permanent failure stops
// everything and lets the caller clean up.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "io/error.h"
#include "fetch/chunk.h"
#include "fetch/workers.h"

using namespace ds;

namespace {

// Results are "<pid> <jobs this process did before>" so the parent can see which process did
// what and whether it had done anything before.
struct Recorder {
  std::map<size_t, std::string> results;
  std::vector<std::string> retries;
  std::vector<std::pair<size_t, pid_t>> abandoned;
  WorkerHooks hooks;
  int done_in_this_process = 0;  // the worker's own state: each worker counts in its copy

  Recorder() {
    hooks.on_done = [this](size_t i, const std::string& r) { results[i] = r; };
    hooks.on_retry = [this](size_t, int, const std::string& e, uint64_t, double) { retries.push_back(e); };
    hooks.on_abandon = [this](size_t i, pid_t pid) { abandoned.emplace_back(i, pid); };
  }
  std::string stamp() { return std::to_string(getpid()) + " " + std::to_string(done_in_this_process++); }
};

pid_t pid_of(const std::string& result) { return static_cast<pid_t>(std::stol(result)); }
int before_of(const std::string& result) { return std::stoi(result.substr(result.find(' ') + 1)); }

const RetryPolicy kQuickRetry{3, 0.01, 0.05};

// True the first time it is called with `flag` in any process (workers share no memory).
bool first_time(const std::string& flag) {
  std::FILE* f = std::fopen(flag.c_str(), "wx");
  if (!f) return false;
  std::fclose(f);
  return true;
}

}  // namespace

TEST(FetchWorkers, AWorkerServesJobAfterJobKeepingItsState) {
  Recorder r;
  r.hooks.work = [&](size_t, const std::function<void(uint64_t)>&) { return r.stamp(); };
  run_in_processes({0, 1, 2, 3, 4, 5}, 1, kQuickRetry, r.hooks);
  ASSERT_EQ(r.results.size(), 6u);
  // One worker did all six in turn: job k found k jobs done before it in the same process.
  std::set<pid_t> pids;
  for (const auto& [job, res] : r.results) {
    pids.insert(pid_of(res));
    EXPECT_EQ(before_of(res), static_cast<int>(job)) << res;
  }
  EXPECT_EQ(pids.size(), 1u);
  EXPECT_EQ(pids.count(getpid()), 0u);  // and not the parent
  EXPECT_EQ(r.done_in_this_process, 0);  // the parent's copy of the state is untouched
}

TEST(FetchWorkers, NoMoreWorkersThanParallel) {
  Recorder r;
  r.hooks.work = [&](size_t, const std::function<void(uint64_t)>&) {
    usleep(20000);  // long enough for every worker to be started
    return r.stamp();
  };
  std::vector<size_t> jobs;
  for (size_t i = 0; i < 12; ++i) jobs.push_back(i);
  run_in_processes(jobs, 3, kQuickRetry, r.hooks);
  ASSERT_EQ(r.results.size(), 12u);
  std::set<pid_t> pids;
  for (const auto& [job, res] : r.results) pids.insert(pid_of(res));
  EXPECT_GE(pids.size(), 2u);
  EXPECT_LE(pids.size(), 3u);
}

TEST(FetchWorkers, ATransientFailureEndsItsWorkerAndTheRetryStartsFresh) {
  Recorder r;
  // Job 1 fails, once, in the worker that did job 0 (so it holds state from it).
  const pid_t parent = getpid();
  const std::string flag = "/tmp/ds_test_workers_" + std::to_string(parent);
  std::remove(flag.c_str());
  r.hooks.work = [&](size_t i, const std::function<void(uint64_t)>& report) {
    report(10);
    if (i == 1 && first_time(flag)) throw TransientError("connection dropped");
    return r.stamp();
  };
  run_in_processes({0, 1}, 1, kQuickRetry, r.hooks);
  std::remove(flag.c_str());
  ASSERT_EQ(r.results.size(), 2u);
  ASSERT_EQ(r.retries.size(), 1u);
  EXPECT_NE(r.retries[0].find("connection dropped"), std::string::npos);
  // The retry ran in another process, which had done nothing before it: no state carried over.
  EXPECT_NE(pid_of(r.results[1]), pid_of(r.results[0]));
  EXPECT_EQ(before_of(r.results[1]), 0);
  ASSERT_EQ(r.abandoned.size(), 1u);
  EXPECT_EQ(r.abandoned[0].first, 1u);
  EXPECT_EQ(r.abandoned[0].second, pid_of(r.results[0]));  // the failed worker, for its leftovers
}

TEST(FetchWorkers, AKilledWorkerIsRetriedAndTheParentCarriesOn) {
  Recorder r;
  const std::string flag = "/tmp/ds_test_workers_kill_" + std::to_string(getpid());
  std::remove(flag.c_str());
  r.hooks.work = [&](size_t i, const std::function<void(uint64_t)>&) {
    if (i == 2 && first_time(flag)) raise(SIGKILL);  // as the OOM killer would
    return r.stamp();
  };
  run_in_processes({0, 1, 2, 3}, 2, kQuickRetry, r.hooks);
  std::remove(flag.c_str());
  EXPECT_EQ(r.results.size(), 4u);
  ASSERT_EQ(r.retries.size(), 1u);
  EXPECT_NE(r.retries[0].find("killed by signal 9"), std::string::npos) << r.retries[0];
}

TEST(FetchWorkers, APermanentFailureStopsEverythingWithItsExitCode) {
  Recorder r;
  r.hooks.work = [&](size_t i, const std::function<void(uint64_t)>&) -> std::string {
    if (i == 3) throw InputError("no such variable");
    usleep(200000);  // the others are still running when job 3 fails
    return r.stamp();
  };
  try {
    run_in_processes({0, 1, 2, 3}, 4, kQuickRetry, r.hooks);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitInput);
    EXPECT_NE(std::string(e.what()).find("no such variable"), std::string::npos);
  }
  EXPECT_TRUE(r.retries.empty());
  // Job 3's worker, and the workers stopped in the middle of theirs, were handed to on_abandon.
  std::set<size_t> abandoned;
  for (const auto& [job, pid] : r.abandoned) abandoned.insert(job);
  EXPECT_EQ(abandoned.count(3), 1u);
  EXPECT_EQ(abandoned.size() + r.results.size(), 4u);
}

TEST(FetchWorkers, TransientFailuresGiveUpAfterTheAttempts) {
  Recorder r;
  r.hooks.work = [&](size_t, const std::function<void(uint64_t)>&) -> std::string { throw TransientError("HTTP 500"); };
  try {
    run_in_processes({0}, 2, kQuickRetry, r.hooks);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gave up after 3 attempts"), std::string::npos) << e.what();
  }
  EXPECT_EQ(r.retries.size(), 2u);
}

TEST(FetchWorkers, AFailureInTheParentsHandlerStopsTheWorkers) {
  Recorder r;
  r.hooks.work = [&](size_t i, const std::function<void(uint64_t)>&) {
    if (i > 0) usleep(300000);
    return r.stamp();
  };
  r.hooks.on_done = [&](size_t i, const std::string&) {
    if (i == 0) throw Error("cannot append to the joined file");
  };
  EXPECT_THROW(run_in_processes({0, 1, 2}, 3, kQuickRetry, r.hooks), Error);
  // Jobs 1 and 2 were still running: stopped, and handed to on_abandon.
  EXPECT_EQ(r.abandoned.size(), 2u);
}

// A worker that reports nothing for RetryPolicy::timeout_s (a request hung in the library) is
// killed and its job retried after the others, with "timed out" naming what it waited for;
// a worker that keeps reporting bytes is left alone however long its job takes.
TEST(FetchWorkers, ASilentWorkerTimesOutAndItsJobGoesToTheBack) {
  Recorder r;
  const std::string flag = "/tmp/ds_test_workers_hang_" + std::to_string(getpid());
  std::remove(flag.c_str());
  std::vector<size_t> order;  // jobs in the order they completed
  r.hooks.on_done = [&](size_t i, const std::string& res) { r.results[i] = res, order.push_back(i); };
  std::vector<double> waits;
  r.hooks.on_waiting = [&](size_t, double s) { waits.push_back(s); };
  r.hooks.describe = [](size_t i) { return "http://server/file.nc (job " + std::to_string(i) + ")"; };
  r.hooks.work = [&](size_t i, const std::function<void(uint64_t)>& report) {
    if (i == 0 && first_time(flag)) pause();  // hangs until killed
    if (i == 1)
      for (int k = 0; k < 8; ++k) usleep(100000), report(1);  // 0.8 s, never silent for 0.5 s
    return r.stamp();
  };
  RetryPolicy retry = kQuickRetry;
  retry.timeout_s = 0.5;
  retry.waiting_note_s = 0.2;
  run_in_processes({0, 1, 2}, 1, retry, r.hooks);
  std::remove(flag.c_str());
  EXPECT_EQ(r.results.size(), 3u);
  ASSERT_EQ(r.retries.size(), 1u);
  EXPECT_NE(r.retries[0].find("timed out after 0.5 s waiting for http://server/file.nc (job 0)"), std::string::npos)
      << r.retries[0];
  EXPECT_FALSE(waits.empty());  // "waiting for ..." while job 0 hung
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order.back(), 0u);  // the others went first
}
