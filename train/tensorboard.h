// TensorBoard event files: `tensorboard --logdir <run>/train/tensorboard` shows the loss curves.
//
// A file is a sequence of TFRecords, each framing one serialized Event (tensorboard_event.proto):
//   uint64 length (little-endian) | uint32 masked_crc32c(length bytes) | data | uint32 masked_crc32c(data)
// The first Event carries file_version "brain.Event:2"; each scalar is an Event with wall_time,
// step and a Summary value (tag, simple_value).
//
// Unlike our other outputs the file is appended to while training runs (TensorBoard reads it
// live), so it cannot be renamed into place at the end; each record is flushed whole, and
// TensorBoard's reader stops cleanly at a truncated last record if a run is killed mid-write.
#pragma once
#include <cstdint>
#include <string>

#include "io/atomic_file.h"

namespace ds {

class EventWriter {
 public:
  // Creates <dir>/events.out.tfevents.<unix seconds>.<hostname> (with a ".N" suffix if a file of
  // that name exists: a resumed run within the same second) and writes the file_version record.
  // Throws Error naming the file if it cannot be written.
  explicit EventWriter(const std::string& dir);
  // One scalar point of the curve `tag`, flushed to disk before returning.
  void add_scalar(const std::string& tag, double value, int64_t step);
  // A SessionLog START at `step`: what TensorFlow writes when a job restarts from a checkpoint.
  // TensorBoard's Python loader takes a run's first START as its beginning and, at each later
  // one, drops the points it has read at `step` and after (an abandoned epoch's); its Rust data
  // server drops them when a step comes again, and skips this record.
  void session_start(int64_t step);
  const std::string& path() const { return path_; }

 private:
  void write_record(const std::string& data);
  std::string path_;
  AppendFile out_;
};

// What training logs, laid out as Keras' TensorBoard callback does: two runs, `train/` and
// `validation/` under <out_dir>/tensorboard, each with the tag `loss`, so TensorBoard overlays the
// two curves in one chart; the train run also has learning_rate, epoch_seconds and
// samples_per_second. Each adds a file beside those already there (TensorBoard merges a run's
// files): a fresh training first removes an earlier one's (remove_training_events, in
// begin_history), whose points would otherwise interleave with the new ones.
class TrainingEvents {
 public:
  // first_epoch: the first epoch this file has points of. Each run's file begins with a
  // SessionLog START at that epoch, written twice: on a resume, whose checkpoint's later epochs
  // may have been trained before and abandoned, the first is the run's beginning to a loader
  // reading earlier files of versions that wrote none, and the second drops the abandoned points
  // either way; in a fresh run's file, alone in its folder, the second drops nothing.
  TrainingEvents(const std::string& out_dir, int64_t first_epoch);
  // validation_loss NaN: there is no validation split, and the validation run gets no point.
  void epoch(int epoch, double train_loss, double validation_loss, double learning_rate, double seconds,
             double samples_per_second);
  std::string folder() const { return folder_; }

 private:
  std::string folder_;
  EventWriter train_, validation_;
};

// Removes the event files of <out_dir>/tensorboard's two runs, throwing Error naming a file that
// cannot be removed.
void remove_training_events(const std::string& out_dir);

// The TFRecord framing of one record (exposed for tests).
std::string tfrecord_frame(const std::string& data);

}  // namespace ds
