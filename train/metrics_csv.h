// metrics.csv made to agree with the checkpoint a run resumes from. The checkpoint of an epoch is
// written before its line of metrics.csv and its TensorBoard event: a run stopped between them (a
// full disk failing the line, a node lost) resumed after that epoch, and its line was missing for
// good (an audit: epochs 1, 3, 4). The checkpoint now carries its epoch's line (TrainState::
// epoch_metrics); this puts it back, and drops a line cut off by the failed write.
#pragma once
#include <cmath>
#include <string>

namespace ds {

// metrics.csv's first line.
inline constexpr const char* kMetricsHeader = "epoch,train_loss,val_loss,epoch_seconds,samples_per_second";

// One line of metrics.csv: epoch,train_loss,val_loss,epoch_seconds,samples_per_second, the empty
// fields (no validation split; no sample trained by the run that finished the epoch) as NaN.
struct EpochMetrics {
  int epoch = 0;
  double train_loss = NAN, val_loss = NAN, seconds = NAN, samples_per_second = NAN;
};
std::string metrics_line(const EpochMetrics& m);  // without the newline
EpochMetrics parse_metrics_line(const std::string& line);  // epoch 0 when it is no epoch's line

// Rewrites `path` (when it exists): a last line without its newline is dropped, so are lines of
// epochs after `checkpoint_epoch` (another history's: an older checkpoint_last.h5 put back) and
// lines a later line of their epoch wrote over (the file is appended to: the later is current), the checkpoint's epoch's line is made `checkpoint_line` where the
// two differ (an edited loss), each said in a warning; and when the file's last epoch is the one
// before `checkpoint_epoch`, `checkpoint_line` (that epoch's, from the checkpoint; "" in older
// ones) is appended, after the header if the file had lost even that
// (written unsynced just before a node was lost). Only the checkpoint's own epoch can be put back:
// a file further behind keeps its gap. Returns the line restored, "" when nothing was. A file that
// exists but cannot be read is an Error naming it (exit 3): resume stops rather than begin the history anew.
std::string restore_metrics(const std::string& path, int checkpoint_epoch, const std::string& checkpoint_line);
// The line restore_metrics would put back ("" when none), reading only: train --check's word on a
// finished run's folder that a resume would settle.
std::string metrics_to_restore(const std::string& path, int checkpoint_epoch, const std::string& checkpoint_line);

}  // namespace ds
