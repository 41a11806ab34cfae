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
#include "train/train_report.h"

namespace ds {

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
