// `downscale train --check`: everything a training run would find wrong at its start, found
// before any rank starts (no MPI, nothing written), so that a batch script can stop a bad job
// with exit 2 or 3 instead of launching ranks that fail one by one (slurm/train_forhlr2.sh).
#pragma once
#include <string>

#include "io/config.h"
#include "io/training_store.h"
#include "model/net.h"

namespace ds {

// The model the config asks for, on the store's grids (shared with train_model).
model::ModelSpec model_spec_for(const Config& cfg, const StoreMeta& meta);

// Precipitation is a Bernoulli-Gamma mixture, any other predictand a Gaussian (or its mean):
// UsageError naming train.loss for another pairing, which predict would refuse after the whole
// allocation was spent training it.
void check_loss_fits_predictand(const Config& cfg, const StoreMeta& meta, const std::string& store_path);

// When the train split is smaller than one batch: "the train split holds N days, fewer than one
// global batch (G = train.batch_size B x R rank(s)): each epoch is a single optimizer step" (legal,
// but rarely meant). `ranks` 0 (not known): against one rank's batch. Empty otherwise. Said by
// train at its start and by train --check.
std::string one_step_epoch_note(size_t n_train, int batch_size, int ranks);

// Opens the store (read only), checks its splits, the loss against its predictand, builds the
// net on the CPU and checks its output grid against the store's, and with `resume` that the
// checkpoint to resume from exists; without it, an existing checkpoint_last.h5 is noted as
// resumed (`resume_auto`) or replaced. A checkpoint to be resumed by `ranks` ranks (0: not
// known, as outside a batch job) must have been trained with that global batch (every rank would
// refuse it once launched). Throws UsageError (the config is wrong) or InputError (the store or
// checkpoint is); returns a few lines of summary.
std::string check_training(const Config& cfg, const std::string& store_path, const std::string& model_dir, bool resume,
                           bool resume_auto = false, int ranks = 0);

}  // namespace ds
