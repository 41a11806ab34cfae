// One driver per stage of `downscale`. Each reads only the previous stage's files under the run
// folder and writes its own; RunPaths names them all in one place.
#pragma once
#include <string>

#include "io/config.h"

namespace ds {

struct RunPaths {
  std::string root;
  std::string fetch_dir() const { return root + "/fetch"; }
  std::string store() const { return root + "/preprocess/store.h5"; }
  std::string train_dir() const { return root + "/train"; }
  std::string predict_dir() const { return root + "/predict"; }
};

struct StageOptions {
  bool resume = false;   // train: continue from the last checkpoint
  std::string timeline;  // train: write a Chrome trace of each step's phases per rank here
  bool dry_run = false;  // fetch: list the chunks, their sizes and what is already complete; fetch nothing
};

int run_synth(const Config& cfg);
int run_fetch(const Config& cfg, bool dry_run = false);
int run_preprocess(const Config& cfg);
int run_train(const Config& cfg, const StageOptions& opt);
int run_predict(const Config& cfg);
int run_evaluate(const Config& cfg);

}  // namespace ds
