// What a training run reports: TrainReport (train_model's result) and train_report.json, the
// file the scaling study (slurm/scaling.sh) collects from each run.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace ds {

struct TrainReport {
  int epochs = 0;
  // The epoch this run began with: 1, or after a resume (a requeued job) the one it resumed in.
  // The timings and rates cover this run only, epochs first_epoch..epochs.
  int first_epoch = 1;
  bool resumed = false;
  // Resumed from a checkpoint that already holds every epoch of train.epochs: nothing trained,
  // nothing written (the finished run's checkpoints, metrics and train_report.json stay).
  bool already_done = false;
  double final_train_loss = 0, best_val_loss = 0;  // best_val_loss NaN (null in the file): no validation split
  std::string best_model_by = "validation loss";    // what chose checkpoint_best.h5
  double mean_batch_s = 0, mean_epoch_s = 0, total_s = 0, samples_per_s = 0;  // samples_per_s: this rank's
  double total_samples_per_s = 0;  // all ranks together (= samples_per_s on one rank)
  // All ranks' training samples over total_s: what the user gets, with validation, checkpoints
  // and the start (data loading, the device check) included; the steps' rate above excludes them.
  double run_samples_per_s = 0;
  uint64_t weights_checksum = 0;   // FNV-1a of the final parameters' bits: equal on every rank
  int64_t skipped_steps = 0;       // loss scaling: steps skipped for non-finite gradients
  double loss_scale = 1;           // loss scaling: the scale at the end (1: off)
};

// Writes `path` (train_report.json) atomically: the run's rates per rank and in total, against
// `reference` (train.reference_samples_per_second, 0: none) for speedup and scaling efficiency.
void write_report(const std::string& path, const TrainReport& r, const std::vector<double>& per_rank,
                  const std::vector<std::string>& backends, int nodes, int threads, int64_t batch, double reference);

}  // namespace ds
