// `downscale train`: the training loop, in one place (llm.c style). Reads the training store,
// trains the configured model with the Bernoulli-Gamma loss and Adam, evaluates the validation
// split each epoch, and writes checkpoints (best and last) and metrics into the output folder.
#pragma once
#include <string>

#include "io/config.h"

namespace ds {

struct TrainReport {
  int epochs = 0;
  double final_train_loss = 0, best_val_loss = 0;
  double mean_batch_s = 0, mean_epoch_s = 0, total_s = 0, samples_per_s = 0;
};

// out_dir receives checkpoint_best.h5, checkpoint_last.h5, metrics.csv, model_summary.txt.
// resume: continue from out_dir/checkpoint_last.h5.
TrainReport train_model(const Config& cfg, const std::string& store_path, const std::string& out_dir, bool resume);

}  // namespace ds
