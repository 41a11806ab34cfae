// Which run a training folder's files belong to, and making them one run's again after a fresh
// run stopped while it took the folder over.
//
// A fresh run commits to its folder with its first checkpoint_last.h5 (at the end of its first
// epoch, or at a SIGUSR1 before then): only after that write stands does it take the folder's
// history over (metrics.csv, TensorBoard events, train_report.json, model_summary.txt, the
// earlier run's checkpoint_best.h5: open_history in trainer.cpp) and write its own best model,
// so that a run failing before its commit leaves the earlier run whole. Stopped between the two (a
// full disk, kill -9, a lost node), the folder held this run's last checkpoint beside the earlier
// run's best model and metrics.csv, or beside no best model at all, and --resume carried on
// believing its best model written: predict then took the other run's model, or found none.
// Each checkpoint now carries its run's id (TrainState::run_id), and a resume settles the folder
// first, from the last checkpoint (the commit):
//   - a checkpoint_best.h5 of another run (or unreadable) is removed; so is one of this run of a
//     later epoch than the last checkpoint's (an older checkpoint_last.h5 put back: the last
//     checkpoint is written before the best model, so no stop leaves that);
//   - one of this run of an earlier epoch, beside the last checkpoint of an epoch that improved
//     on it (a stop between the two writes), is replaced by the last checkpoint;
//   - before the run's second epoch ended, its history is begun again: metrics.csv cut to its
//     header (the resume puts the first epoch's line back from the checkpoint, with its
//     TensorBoard points), the event files and train_report.json removed, model_summary.txt
//     rewritten;
//   - where checkpoint_last.h5 is the run's best model so far (an epoch's end that improved on
//     every earlier one, which is when checkpoint_best.h5 is written, with the same state), it is
//     copied to checkpoint_best.h5; otherwise the best loss is forgotten (TrainState::best_val_loss),
//     so that the next epoch's end writes one, and a warning says so.
// A checkpoint without a run id (earlier versions) is left as it is.
#pragma once

#include <string>

#include "train/checkpoint.h"

namespace ds {

// A fresh run's id: 16 hex digits from the clock, the process id and std::random_device.
std::string new_run_id();

struct HistorySettlement {
  std::string best_problem;   // what is wrong with checkpoint_best.h5 ("" when it is this run's or may be absent)
  bool remove_best = false;   // it exists and is not this run's
  bool restart_history = false;
  bool copy_last_to_best = false;
  bool forget_best_loss = false;
  bool best_after_last = false;  // checkpoint_best.h5 is this run's, of an epoch after checkpoint_last.h5's
  bool any() const { return remove_best || restart_history || copy_last_to_best || forget_best_loss; }
};

// What the folder `out_dir` needs, from the state of its checkpoint_last.h5. Reads only; every
// rank comes to the same answer from the same files (the caller waits for all of them before
// rank 0 changes anything).
HistorySettlement plan_history_settlement(const std::string& out_dir, const TrainState& state);

// Begins `out_dir`'s history as a new run's, keeping only its checkpoint_last.h5 (the run's
// commit): checkpoint_best.h5, train_report.json and the TensorBoard event files removed,
// metrics.csv cut to its header, model_summary.txt written (model_summary: its text). A fresh run
// taking its folder over (open_history in trainer.cpp) and a resume restarting the history of a
// run that stopped while it did (settle_history) both come here, so the two cannot drift apart.
// Each write atomic, each failure an Error naming the file.
void begin_history(const std::string& out_dir, const std::string& model_summary);

// Carries the plan out: the files on `root` (each write atomic, each failure an Error naming the
// file), the state (the best loss) on every rank. model_summary: the text of model_summary.txt.
// Logs on `root` what it found and did, where it was more than a run's usual first-epoch resume.
void settle_history(const HistorySettlement& plan, const std::string& out_dir, const std::string& model_summary,
                    TrainState& state, bool root);

// What a resume would change in `out_dir` (reading only), for a finished run, which trains no
// further: its best model copied from the last checkpoint or another run's removed, its history
// begun again, metrics.csv's last epoch put back (a run killed after its last checkpoint). ""
// when nothing.
// train --check prints it as its `settle:` line, and slurm/train_forhlr2.sh then launches the
// ranks (which settle and train nothing) instead of ending the job at once.
// `plan`: plan_history_settlement(out_dir, state), which train --check also asks of the report.
std::string finished_folder_to_settle(const HistorySettlement& plan, const std::string& out_dir, const TrainState& state);

}  // namespace ds
