#include "train/run_history.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <random>

#include "io/atomic_file.h"
#include "io/error.h"
#include "io/read_file.h"
#include "train/metrics_csv.h"
#include "train/tensorboard.h"

namespace ds {
namespace {

void remove_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::remove(path, ec) && ec) throw Error(path + ": cannot be removed: " + ec.message());
}

}  // namespace

std::string new_run_id() {
  std::random_device device;
  uint64_t id = (uint64_t(device()) << 32) ^ device();
  id ^= uint64_t(std::chrono::system_clock::now().time_since_epoch().count()) * 0x9E3779B97F4A7C15ull;
  id ^= uint64_t(::getpid()) << 20;
  return fmt::format("{:016x}", id);
}

HistorySettlement plan_history_settlement(const std::string& out_dir, const TrainState& state) {
  HistorySettlement plan;
  if (state.run_id.empty()) return plan;  // an earlier version's checkpoint: nothing to go by
  const std::string best = out_dir + "/checkpoint_best.h5";
  if (path_exists(best)) {
    std::string id, unreadable;
    int best_epoch = -1;  // unknown: a stand-in or an older file without the attribute
    try {
      const CheckpointRun run = read_checkpoint_run(best);
      id = run.run_id;
      if (id == state.run_id) best_epoch = run.epoch;
    } catch (const Error& e) {
      unreadable = e.what();
    }
    const bool ours = unreadable.empty() && id == state.run_id;
    // The last checkpoint is written before the best model (trainer.cpp): a run stopped between
    // the two holds an improving epoch's last checkpoint beside an earlier best model of its own,
    // which the resume replaces by it.
    const bool last_improved = state.epoch >= 1 && state.step_in_epoch == 0 && state.epochs_without_improvement == 0;
    if (ours && best_epoch >= 1 && best_epoch < state.epoch && last_improved) {
      plan.copy_last_to_best = true;
      plan.best_problem = fmt::format("is of epoch {}, before checkpoint_last.h5's epoch {}, which improved on it", best_epoch,
                                      state.epoch);
      return plan;
    }
    // This run's, and of an epoch the last checkpoint has reached: the folder is this run's. A
    // best model of a later epoch is of a history the resume abandons (an older
    // checkpoint_last.h5 put back, since the last checkpoint is written first): kept, predict
    // took a model of no epoch the run now has.
    if (ours && best_epoch <= state.epoch) return plan;
    plan.remove_best = true;
    plan.best_after_last = ours;
    plan.best_problem = !unreadable.empty() ? "cannot be read (" + unreadable + ")"
                        : id.empty()        ? "is an earlier version's run's (it has no run id)"
                        : ours ? fmt::format("is of epoch {}, after checkpoint_last.h5's epoch {} (an older "
                                             "checkpoint_last.h5 put back?)",
                                             best_epoch, state.epoch)
                               : "is another run's (run id " + id + "; this run's is " + state.run_id + ")";
  } else if (state.epoch >= 1) {
    plan.best_problem = "is missing";
  }
  // No best model of this run. Before its second epoch's end the history may be another run's
  // (or was begun and not yet written to): begin it again.
  plan.restart_history = state.epoch <= 1;
  if (state.epoch >= 1) {
    // checkpoint_best.h5 is written exactly when an epoch's end improves (which resets the count),
    // with the state checkpoint_last.h5 then gets too.
    if (state.step_in_epoch == 0 && state.epochs_without_improvement == 0)
      plan.copy_last_to_best = true;
    else
      plan.forget_best_loss = true;
  }
  return plan;
}

void begin_history(const std::string& out_dir, const std::string& model_summary) {
  // The summary first: were the run stopped in here, its resume begins the history again
  // (settle_history: restart_history), and until then the folder holds no other run's best model.
  write_file_atomically(out_dir + "/model_summary.txt", model_summary);
  remove_file(out_dir + "/checkpoint_best.h5");
  remove_file(out_dir + "/train_report.json");
  remove_training_events(out_dir);
  write_file_atomically(out_dir + "/metrics.csv", std::string(kMetricsHeader) + "\n");
}

void settle_history(const HistorySettlement& plan, const std::string& out_dir, const std::string& model_summary,
                    TrainState& state, bool root) {
  if (!plan.any()) return;
  if (plan.forget_best_loss) state.best_val_loss = TrainState{}.best_val_loss;
  if (!root) return;
  const std::string best = out_dir + "/checkpoint_best.h5", last = out_dir + "/checkpoint_last.h5";
  // A restart removes checkpoint_best.h5 too: a plan restarts the history only where no best
  // model of this run exists (plan_history_settlement).
  if (plan.restart_history)
    begin_history(out_dir, model_summary);
  else if (plan.remove_best)
    remove_file(best);
  if (plan.copy_last_to_best) write_file_atomically(best, read_file(last, kExitFailure));
  if (plan.best_problem.empty()) return;  // a resume within the first epoch: nothing was amiss
  const std::string where =
      state.step_in_epoch > 0 ? fmt::format("epoch {} step {}", state.epoch + 1, state.step_in_epoch)
                              : fmt::format("the end of epoch {}", state.epoch);
  if (plan.best_after_last)
    spdlog::warn("{} {}: removed, with the history of the epochs after {}; {}", best, plan.best_problem, where,
                 plan.copy_last_to_best ? "copied from " + last + ", the best model up to its epoch"
                                        : "the best validation loss so far is forgotten, and the next epoch's end "
                                          "writes it again");
  else if (plan.copy_last_to_best)
    spdlog::warn("{} {}: this run stopped after writing {} at {} and before writing its best model, which that epoch "
                 "was: copied from it", best, plan.best_problem, last, where);
  else if (plan.forget_best_loss)
    spdlog::warn("{} {}, and {} (at {}) is not this run's best model: the best validation loss so far is forgotten, "
                 "so the next epoch's end writes checkpoint_best.h5 (until then predict finds none; "
                 "predict.checkpoint: last takes the last model)", best, plan.best_problem, last, where);
  else
    spdlog::warn("{} {}: removed, as this run had not yet written its own", best, plan.best_problem);
  if (plan.restart_history && plan.remove_best && !plan.best_after_last)
    spdlog::warn("{}: metrics.csv, the TensorBoard events and train_report.json were those of the run that "
                 "checkpoint_best.h5 came from (this run stopped before taking them over): begun again as this run's",
                 out_dir);
}

std::string finished_folder_to_settle(const HistorySettlement& plan, const std::string& out_dir, const TrainState& state) {
  std::string what;
  const auto add = [&](const std::string& part) { what += (what.empty() ? "" : "; ") + part; };
  // Only what a resume changes: a best model missing for good (the last epoch was not the best)
  // is no reason to launch; train's own warning names predict.checkpoint last then.
  if (plan.copy_last_to_best)
    add("checkpoint_best.h5 " + plan.best_problem + ": copied from checkpoint_last.h5, whose epoch was the best");
  else if (plan.remove_best)
    add("checkpoint_best.h5 " + plan.best_problem + ": removed");
  // The history begun again only where another run's is there to go: without a best model of
  // this run to keep, a resume would begin it again each time (and put the epoch's line back).
  if (plan.restart_history && plan.remove_best) add("metrics.csv and the TensorBoard events begun again as this run's");
  const std::string line = metrics_to_restore(out_dir + "/metrics.csv", state.epoch, state.epoch_metrics);
  if (!line.empty()) add(fmt::format("metrics.csv lacks epoch {} (put back from the checkpoint)", state.epoch));
  return what;
}

}  // namespace ds
