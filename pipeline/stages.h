// One driver per stage of `downscale`. Each reads only the previous stage's files under the run
// folder and writes its own; RunPaths names them all in one place.
#pragma once
#include <string>

#include "io/config.h"

namespace ds {

// Several models can be trained from one store (train.name): each gets its own folder under
// train/, and its predictions and evaluation folders of the same name, so none overwrites another.
struct RunPaths {
  std::string root;
  std::string name;  // train.name; empty: the single unnamed model
  static RunPaths of(const Config& cfg) { return {cfg.run.dir, cfg.train.name}; }
  std::string fetch_dir() const { return root + "/fetch"; }
  std::string store() const { return root + "/preprocess/store.h5"; }
  std::string model_dir() const { return root + "/train" + suffix(); }
  std::string predict_dir() const { return root + "/predict" + suffix(); }
  std::string evaluate_dir() const { return root + "/evaluate" + suffix(); }
  // For an error about `file` missing from this model's folder of `stage` ("train", "predict"):
  // the other models of the run folder whose <stage>/<name>/ (or <stage>/ itself, the unnamed
  // model) holds it, as "; <what> here: deepesd, demo (--set train.name=deepesd)"; "" when none.
  // A missing train.name otherwise reads as a missing training.
  std::string other_models_hint(const std::string& stage, const std::string& file, const std::string& what) const;

 private:
  std::string suffix() const { return name.empty() ? "" : "/" + name; }
};

// train --predict-scaling (train/scaling_model.h): what to model; see docs/scaling.md.
struct ScalingRequest {
  bool on = false;
  std::string profile;            // a layer profile JSON; empty: measure one on the configured device
  std::string link = "nvlink4";   // inside a node
  std::string network = "ib-ndr"; // between nodes
  std::string nic = "per-gpu";    // per-gpu | per-node
  std::string allreduce_dtype;  // empty: the config's train.allreduce_dtype
  int gpus_per_node = 4;
  double busbw_gbs = 0;           // > 0: a measured intra-node link replacing --link
  double latency_us = 30;         // with busbw_gbs
  int steps = 5;                  // timed steps when measuring
  std::string out;                // also write the table as JSON here
};

struct StageOptions {
  bool resume = false;   // train: continue from the last checkpoint
  bool resume_auto = false;  // train: resume when checkpoint_last.h5 exists, else start (slurm/train_forhlr2.sh on requeue)
  std::string timeline;  // train: write a Chrome trace of each step's phases per rank here
  bool check = false;    // train: validate config, store and model, print a summary; no MPI, nothing written
  int check_ranks = 0;   // train --check --ranks: the job's rank count, for the resumed checkpoint's global batch
  ScalingRequest scaling;  // train --predict-scaling: print the scaling model's table, train nothing
  bool dry_run = false;  // fetch: list the chunks, their sizes and what is already complete; fetch nothing
};

int run_synth(const Config& cfg);
int run_fetch(const Config& cfg, bool dry_run = false);
int run_preprocess(const Config& cfg);
int run_train(const Config& cfg, const StageOptions& opt);
int run_predict_scaling(const Config& cfg, const ScalingRequest& req);
int run_predict(const Config& cfg);
int run_evaluate(const Config& cfg);
struct BenchmarkOptions;  // train/benchmark.h
// `downscale benchmark` (pipeline/benchmark.cpp) and its --plot (pipeline/benchmark_plot.cpp).
int run_benchmark_command(const BenchmarkOptions& opts, const std::string& log_level);
int plot_benchmark(const std::string& jsonl, const std::string& png);

}  // namespace ds
