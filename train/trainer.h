// `downscale train`: the training loop, in one place (llm.c style). Reads the training store,
// trains the configured model (demo, mnn, deepesd) with the configured loss (Bernoulli-Gamma,
// Gaussian, MSE) and optimizer (Adam, SGD with momentum), evaluates the validation split each
// epoch, and writes checkpoints (best and last), metrics and TensorBoard events into the output
// folder.
#pragma once
#include <string>

#include "io/config.h"
#include "train/lr_schedule.h"

namespace ds {

struct TrainReport {
  int epochs = 0;
  double final_train_loss = 0, best_val_loss = 0;
  double mean_batch_s = 0, mean_epoch_s = 0, total_s = 0, samples_per_s = 0;
};

// out_dir receives checkpoint_best.h5, checkpoint_last.h5, metrics.csv, model_summary.txt and
// events.out.tfevents.* (TensorBoard). resume: continue from out_dir/checkpoint_last.h5.
// schedule: the learning rate of each step; empty means train.learning_rate throughout.
TrainReport train_model(const Config& cfg, const std::string& store_path, const std::string& out_dir, bool resume,
                        const LearningRateSchedule& schedule = {});

}  // namespace ds
