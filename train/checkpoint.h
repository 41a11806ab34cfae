// Checkpoints: one HDF5 file holding everything needed to continue training exactly where it
// stopped, or to predict without the config:
//   /weights/<layer>/<W|b>     parameters by layer name
//   /adam/m/..., /adam/v/...   optimizer moments, same names
//   attrs: model_spec (JSON), epoch (completed), adam_steps, rng_state, best_val_loss,
//          epochs_without_improvement, software_version
// Written to a temporary name and renamed, so a crash mid-write leaves the previous one intact.
#pragma once
#include <string>

#include "model/adam.h"
#include "model/net.h"

namespace ds {

struct TrainState {
  int epoch = 0;                  // epochs completed
  std::string rng_state;          // std::mt19937_64 serialized, for bit-identical resume
  double best_val_loss = 1e300;
  int epochs_without_improvement = 0;
};

void save_checkpoint(const std::string& path, model::Net& net, model::Adam* adam, const TrainState& state);

// The model spec stored in a checkpoint (to build the Net before loading weights).
model::ModelSpec read_checkpoint_spec(const std::string& path);

// Loads weights (and, if adam is non-null, the optimizer state); returns the training state.
// Throws InputError naming the file and parameter on any mismatch of names or shapes.
TrainState load_checkpoint(const std::string& path, model::Net& net, model::Adam* adam);

}  // namespace ds
