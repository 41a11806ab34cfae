// train/run_history.h: what a resume does with a folder whose checkpoint_best.h5 is missing or
// another run's, in each case the trainer can leave (the CLI side, with real runs stopped by a
// failed write, is tests/cli/faults_durable.sh).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "io/atomic_file.h"
#include "io/hdf5_file.h"
#include "support/test_support.h"
#include "train/metrics_csv.h"
#include "train/run_history.h"

using namespace ds;
using namespace ds::test;

namespace {

// A stand-in checkpoint: run_history reads nothing from it but its run_id and epoch attributes.
void checkpoint_of(const std::string& path, const std::string& run_id, const std::string& payload = "weights",
                   int epoch = 0) {
  H5File f = H5File::create(path);
  if (!run_id.empty()) f.set_attr("/", "run_id", run_id);
  if (epoch > 0) f.set_attr("/", "epoch", int64_t{epoch});
  f.set_attr("/", "payload", payload);
  f.close();
}

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TrainState state_at(int epoch, int64_t step_in_epoch, int without_improvement, const std::string& run_id = "run-a") {
  TrainState s;
  s.epoch = epoch;
  s.step_in_epoch = step_in_epoch;
  s.epochs_without_improvement = without_improvement;
  s.best_val_loss = 1.5;
  s.run_id = run_id;
  return s;
}

}  // namespace

TEST(RunHistory, RunIdsDiffer) {
  EXPECT_EQ(new_run_id().size(), 16u);
  EXPECT_NE(new_run_id(), new_run_id());
}

TEST(RunHistory, ThisRunsBestOrAnOlderVersionsCheckpointChangeNothing) {
  TempDir d;
  checkpoint_of(d / "checkpoint_best.h5", "run-a");
  EXPECT_FALSE(plan_history_settlement(d.path(), state_at(4, 0, 2)).any());
  EXPECT_FALSE(plan_history_settlement(d.path(), state_at(1, 0, 0)).any());
  // No run id in the last checkpoint: nothing to go by, whatever the best model is.
  std::filesystem::remove(d / "checkpoint_best.h5");
  EXPECT_FALSE(plan_history_settlement(d.path(), state_at(3, 0, 0, "")).any());
}

TEST(RunHistory, WithinTheFirstEpochTheHistoryBeginsAgainUnsaid) {
  TempDir d;
  const HistorySettlement p = plan_history_settlement(d.path(), state_at(0, 5, 0));
  EXPECT_TRUE(p.restart_history);
  EXPECT_FALSE(p.remove_best || p.copy_last_to_best || p.forget_best_loss);
  EXPECT_EQ(p.best_problem, "");  // a resume within the first epoch has no best model yet
}

// The end of an epoch that improved, and no best model: the last checkpoint is it.
TEST(RunHistory, TheLastCheckpointOfAnImprovingEpochBecomesTheBest) {
  TempDir d;
  checkpoint_of(d / "checkpoint_last.h5", "run-a", "this run's epoch 1");
  write_file_atomically(d / "metrics.csv", std::string(kMetricsHeader) + "\n1,9,9,1,1\n2,8,8,1,1\n3,7,7,1,1\n");
  write_file_atomically(d / "train_report.json", "{}");
  TrainState s = state_at(1, 0, 0);
  const HistorySettlement p = plan_history_settlement(d.path(), s);
  EXPECT_EQ(p.best_problem, "is missing");
  EXPECT_TRUE(p.copy_last_to_best && p.restart_history);
  EXPECT_FALSE(p.forget_best_loss || p.remove_best);
  settle_history(p, d.path(), "the summary", s, true);
  EXPECT_EQ(bytes_of(d / "checkpoint_best.h5"), bytes_of(d / "checkpoint_last.h5"));
  EXPECT_EQ(bytes_of(d / "metrics.csv"), std::string(kMetricsHeader) + "\n");  // the resume restores line 1
  EXPECT_EQ(bytes_of(d / "model_summary.txt"), "the summary");
  EXPECT_FALSE(path_exists(d / "train_report.json"));
  EXPECT_EQ(s.best_val_loss, 1.5);
  EXPECT_FALSE(plan_history_settlement(d.path(), s).any());  // settled: a second resume finds it whole
}

// Another run's best model beside a mid-epoch checkpoint (which is no best model): removed, the
// best loss forgotten so that the next epoch's end writes one, on every rank; files on root only.
TEST(RunHistory, AnotherRunsBestIsRemovedAndTheBestLossForgotten) {
  TempDir d;
  checkpoint_of(d / "checkpoint_best.h5", "run-b");
  checkpoint_of(d / "checkpoint_last.h5", "run-a");
  TrainState s = state_at(1, 7, 0);
  const HistorySettlement p = plan_history_settlement(d.path(), s);
  EXPECT_EQ(p.best_problem, "is another run's (run id run-b; this run's is run-a)");
  EXPECT_TRUE(p.remove_best && p.restart_history && p.forget_best_loss);
  EXPECT_FALSE(p.copy_last_to_best);
  TrainState other_rank = s;
  settle_history(p, d.path(), "", other_rank, false);
  EXPECT_TRUE(path_exists(d / "checkpoint_best.h5"));  // rank 0's to remove
  EXPECT_EQ(other_rank.best_val_loss, TrainState{}.best_val_loss);
  settle_history(p, d.path(), "", s, true);
  EXPECT_FALSE(path_exists(d / "checkpoint_best.h5"));
  EXPECT_EQ(s.best_val_loss, TrainState{}.best_val_loss);
}

// Later epochs: the history is the run's own (it was taken over at the first); only the best
// model is settled. An epoch's end that did not improve is no best model either.
TEST(RunHistory, AfterTheSecondEpochOnlyTheBestModelIsSettled) {
  TempDir d;
  const HistorySettlement p = plan_history_settlement(d.path(), state_at(5, 0, 2));
  EXPECT_EQ(p.best_problem, "is missing");
  EXPECT_TRUE(p.forget_best_loss);
  EXPECT_FALSE(p.restart_history || p.copy_last_to_best || p.remove_best);
}

TEST(RunHistory, AnUnreadableBestModelIsNotThisRuns) {
  TempDir d;
  write_file_atomically(d / "checkpoint_best.h5", "not HDF5");
  const HistorySettlement p = plan_history_settlement(d.path(), state_at(2, 0, 0));
  EXPECT_NE(p.best_problem.find("cannot be read ("), std::string::npos) << p.best_problem;
  EXPECT_TRUE(p.remove_best && p.copy_last_to_best);
  EXPECT_FALSE(p.restart_history);
}

// A run's history begun (a fresh run taking the folder over, or a resume restarting it): every
// file of an earlier run goes but the checkpoint_last.h5 that committed this one.
TEST(RunHistory, BeginningAHistoryKeepsOnlyTheLastCheckpoint) {
  TempDir d;
  checkpoint_of(d / "checkpoint_last.h5", "run-a", "this run's");
  checkpoint_of(d / "checkpoint_best.h5", "run-b");
  write_file_atomically(d / "metrics.csv", std::string(kMetricsHeader) + "\n1,9,9,1,1\n");
  write_file_atomically(d / "train_report.json", "{}");
  write_file_atomically(d / "model_summary.txt", "run-b's summary");
  std::filesystem::create_directories(d / "tensorboard/train");
  std::filesystem::create_directories(d / "tensorboard/validation");
  write_file_atomically(d / "tensorboard/train/events.out.tfevents.1.host", "x");
  write_file_atomically(d / "tensorboard/validation/events.out.tfevents.1.host", "x");
  write_file_atomically(d / "tensorboard/train/notes.txt", "the user's");  // not an event file: kept
  const std::string last = bytes_of(d / "checkpoint_last.h5");
  begin_history(d.path(), "run-a's summary");
  EXPECT_EQ(bytes_of(d / "checkpoint_last.h5"), last);
  EXPECT_FALSE(path_exists(d / "checkpoint_best.h5"));
  EXPECT_FALSE(path_exists(d / "train_report.json"));
  EXPECT_FALSE(path_exists(d / "tensorboard/train/events.out.tfevents.1.host"));
  EXPECT_FALSE(path_exists(d / "tensorboard/validation/events.out.tfevents.1.host"));
  EXPECT_TRUE(path_exists(d / "tensorboard/train/notes.txt"));
  EXPECT_EQ(bytes_of(d / "metrics.csv"), std::string(kMetricsHeader) + "\n");
  EXPECT_EQ(bytes_of(d / "model_summary.txt"), "run-a's summary");
  begin_history(d.path(), "run-a's summary");  // again (a run stopped in here and resumed): the same
  EXPECT_EQ(bytes_of(d / "metrics.csv"), std::string(kMetricsHeader) + "\n");
}

// train --check's `settle:` line for a finished run: only what a resume changes (the best model
// copied or removed, the history begun again, metrics.csv's last epoch put back), nothing for a
// settled folder or a best model lost for good.
TEST(RunHistory, AFinishedRunsFolderToSettleIsWhatAResumeChanges) {
  TempDir d;
  const auto settle = [&](const TrainState& state) {
    return finished_folder_to_settle(plan_history_settlement(d.path(), state), d.path(), state);
  };
  const std::string header = std::string(kMetricsHeader) + "\n";
  TrainState done = state_at(3, 0, 0);
  done.epoch_metrics = "3,0.5,0.6,1,2";
  checkpoint_of(d / "checkpoint_best.h5", "run-a");
  std::ofstream(d / "metrics.csv") << header << "1,1,1,1,1\n2,1,1,1,1\n3,0.5,0.6,1,2\n";
  EXPECT_EQ(settle(done), "");
  // Killed after its last checkpoint: the epoch's line and its best model lost.
  std::ofstream(d / "metrics.csv") << header << "1,1,1,1,1\n2,1,1,1,1\n3,0.";
  std::filesystem::remove(d / "checkpoint_best.h5");
  EXPECT_EQ(settle(done),
            "checkpoint_best.h5 is missing: copied from checkpoint_last.h5, whose epoch was the best; metrics.csv "
            "lacks epoch 3 (put back from the checkpoint)");
  EXPECT_EQ(bytes_of(d / "metrics.csv"), header + "1,1,1,1,1\n2,1,1,1,1\n3,0.");  // read only
  EXPECT_FALSE(std::filesystem::exists(d / "checkpoint_best.h5"));
  // The last epoch not the best: the best model is lost for good, and a resume changes nothing;
  // the same in a one-epoch run (stopped early at epoch 1, no best model): settling it again and
  // again would begin its history anew at every requeue.
  std::ofstream(d / "metrics.csv") << header << "1,1,1,1,1\n2,1,1,1,1\n3,0.5,0.6,1,2\n";
  EXPECT_EQ(settle(state_at(3, 0, 1)), "");
  TrainState one = state_at(1, 0, 1);
  one.epoch_metrics = "1,1,1,1,1";
  std::ofstream(d / "metrics.csv") << header << "1,1,1,1,1\n";
  EXPECT_EQ(settle(one), "");
  // Another run's best model beside a one-epoch run: removed, and the history begun again.
  checkpoint_of(d / "checkpoint_best.h5", "run-b");
  EXPECT_EQ(settle(state_at(1, 0, 1)),
            "checkpoint_best.h5 is another run's (run id run-b; this run's is run-a): removed; metrics.csv and the "
            "TensorBoard events begun again as this run's");
}

// An older checkpoint_last.h5 put back (epoch 2) under this run's best model of epoch 4, from the
// epochs trained since and now abandoned: the best model is of no epoch the run now has, and was
// kept (predict took it); it is removed, or replaced by the last where that was the best.
TEST(RunHistory, ABestModelOfALaterEpochIsNotKept) {
  TempDir d;
  checkpoint_of(d / "checkpoint_best.h5", "run-a", "weights", 4);
  checkpoint_of(d / "checkpoint_last.h5", "run-a", "epoch 2 weights", 2);
  HistorySettlement plan = plan_history_settlement(d.path(), state_at(2, 0, 0));
  EXPECT_TRUE(plan.remove_best && plan.best_after_last && plan.copy_last_to_best && !plan.restart_history);
  EXPECT_EQ(plan.best_problem, "is of epoch 4, after checkpoint_last.h5's epoch 2 (an older checkpoint_last.h5 put back?)");
  TrainState state = state_at(2, 0, 0);
  settle_history(plan, d.path(), "summary", state, true);
  EXPECT_EQ(bytes_of(d / "checkpoint_best.h5"), bytes_of(d / "checkpoint_last.h5"));
  // The same epoch, or an earlier one: this run's, kept.
  checkpoint_of(d / "checkpoint_best.h5", "run-a", "weights", 2);
  EXPECT_FALSE(plan_history_settlement(d.path(), state_at(2, 0, 0)).any());
  EXPECT_FALSE(plan_history_settlement(d.path(), state_at(3, 0, 1)).any());
  // A stop between an improving epoch's two writes (the last checkpoint is written first): that
  // epoch's last checkpoint is the best model, and replaces the earlier one.
  plan = plan_history_settlement(d.path(), state_at(3, 0, 0));
  EXPECT_TRUE(plan.copy_last_to_best && !plan.remove_best && !plan.best_after_last);
  EXPECT_EQ(plan.best_problem, "is of epoch 2, before checkpoint_last.h5's epoch 3, which improved on it");
}

// metrics.csv against the checkpoint a run resumes from: lines of later epochs are another
// history's, an epoch written again replaces its earlier lines from there on (the file is appended
// to), and the checkpoint's epoch is as it recorded it.
TEST(RunHistory, MetricsAfterOrAgainstTheCheckpointAreDropped) {
  TempDir d;
  const std::string header = std::string(kMetricsHeader) + "\n";
  std::ofstream(d / "metrics.csv") << header << "1,2,2,1,1\n2,1.5,1.6,1,1\n3,1.2,1.3,1,1\n4,1,1.1,1,1\n3,1.1,1.2,1,1\n";
  EXPECT_EQ(restore_metrics(d / "metrics.csv", 3, "3,1.1,1.2,1,1"), "");
  EXPECT_EQ(bytes_of(d / "metrics.csv"), header + "1,2,2,1,1\n2,1.5,1.6,1,1\n3,1.1,1.2,1,1\n");
  std::ofstream(d / "metrics.csv") << header << "1,2,2,1,1\n2,0.12345,1.6,1,1\n9,1,1,1,1\n";  // edited, appended
  EXPECT_EQ(restore_metrics(d / "metrics.csv", 2, "2,1.5,1.6,1,1"), "");
  EXPECT_EQ(bytes_of(d / "metrics.csv"), header + "1,2,2,1,1\n2,1.5,1.6,1,1\n");
  // Appended to: epochs written again (2', 3', 4') are the current history, not the first copies.
  std::ofstream(d / "metrics.csv") << header << "1,1,1,1,1\n2,2,2,1,1\n3,3,3,1,1\n4,4,4,1,1\n2,5,5,1,1\n3,6,6,1,1\n4,7,7,1,1\n";
  EXPECT_EQ(restore_metrics(d / "metrics.csv", 4, "4,7,7,1,1"), "");
  EXPECT_EQ(bytes_of(d / "metrics.csv"), header + "1,1,1,1,1\n2,5,5,1,1\n3,6,6,1,1\n4,7,7,1,1\n");
  // A blank or stray line does not stop an epoch written again from replacing the earlier copies.
  std::ofstream(d / "metrics.csv") << header << "1,1,1,1,1\n2,2,2,1,1\n3,3,3,1,1\n\n2,5,5,1,1\n3,6,6,1,1\n";
  EXPECT_EQ(restore_metrics(d / "metrics.csv", 3, "3,6,6,1,1"), "");
  EXPECT_EQ(bytes_of(d / "metrics.csv"), header + "1,1,1,1,1\n2,5,5,1,1\n3,6,6,1,1\n");
}
