// `downscale train`: the training loop, in one place (llm.c style). Reads the training store,
// trains the configured model (demo, mnn, deepesd) with the configured loss (Bernoulli-Gamma,
// Gaussian, MSE) and optimizer (Adam, SGD with momentum), evaluates the validation split each
// epoch, and writes checkpoints (best and last), metrics and TensorBoard events into the output
// folder.
#pragma once
#include <string>

#include "io/config.h"
#include "train/distributed.h"
#include "train/lr_schedule.h"

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
  double final_train_loss = 0, best_val_loss = 0;
  double mean_batch_s = 0, mean_epoch_s = 0, total_s = 0, samples_per_s = 0;  // samples_per_s: this rank's
  double total_samples_per_s = 0;  // all ranks together (= samples_per_s on one rank)
  // All ranks' training samples over total_s: what the user gets, with validation, checkpoints
  // and the start (data loading, the device check) included; the steps' rate above excludes them.
  double run_samples_per_s = 0;
  uint64_t weights_checksum = 0;   // FNV-1a of the final parameters' bits: equal on every rank
  int64_t skipped_steps = 0;       // loss scaling: steps skipped for non-finite gradients
  double loss_scale = 1;           // loss scaling: the scale at the end (1: off)
};

// out_dir receives checkpoint_best.h5, checkpoint_last.h5, metrics.csv, model_summary.txt,
// train_report.json (throughput per rank and in total, scaling efficiency) and
// events.out.tfevents.* (TensorBoard). resume: continue from out_dir/checkpoint_last.h5.
// schedule: the learning rate of each step; empty means train.learning_rate throughout.
// comm: data-parallel training across its ranks (null: one process). Each rank reads its share
// of every global batch (batch_size x size samples of the epoch's order, the same on all ranks),
// gradients are averaged by bucketed allreduces overlapping backward, the rate is scaled by the size with warmup
// (distributed.h), losses are averaged, and only rank 0 writes into out_dir.
// timeline_path: write a Chrome trace of every step's phases per rank there (train/timeline.h).
TrainReport train_model(const Config& cfg, const std::string& store_path, const std::string& out_dir, bool resume,
                        const LearningRateSchedule& schedule = {}, Communicator* comm = nullptr,
                        const std::string& timeline_path = {});

}  // namespace ds
