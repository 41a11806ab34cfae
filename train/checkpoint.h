// Checkpoints: one HDF5 file holding everything needed to continue training exactly where it
// stopped, or to predict without the config:
//   /weights/<layer>/<param>     parameters by layer name
//   /buffers/<layer>/<name>      non-trainable learned state (batch norm running statistics)
//   /<slot>/<layer>/<param>      the optimizer's state: /adam/m, /adam/v or /sgd/velocity
//   attrs: model_spec (JSON), epoch (completed), optimizer, optimizer_steps, rng_state,
//          best_val_loss, epochs_without_improvement, software_version,
//          step_in_epoch and epoch_loss_sum (a checkpoint written mid-epoch on a signal)
//          provenance: store_identity, channels (comma list), store_grids ("H,W,H',W'"),
//          store_statistics (hash), train_split_hash and validation_split_hash (the store's
//          splits' content hashes), global_batch (batch_size x ranks)
//          how it was trained: config (Config::record: the file and its --set overrides) and
//          training_setup (ranks, backend and threads, precision, seed; each session's after a resume)
// Written to a temporary name and renamed, so a crash mid-write leaves the previous one intact.
#pragma once
#include <cstdint>
#include <string>

#include "io/store_identity.h"
#include "model/net.h"
#include "model/optimizer.h"

namespace ds {

struct TrainState {
  int epoch = 0;                  // epochs completed
  std::string rng_state;          // std::mt19937_64 serialized, for bit-identical resume
  double best_val_loss = 1e300;
  int epochs_without_improvement = 0;
  // Written on SIGINT/SIGTERM/SIGUSR1 in the middle of epoch `epoch + 1`: the steps of it done
  // (rng_state is then the state before that epoch's shuffle, so the same order is drawn again)
  // and the sum of their losses over all ranks. 0 at an epoch's end.
  int64_t step_in_epoch = 0;
  double epoch_loss_sum = 0;
  StoreProvenance store;   // the store it was trained on (identity empty: an older checkpoint)
  int64_t global_batch = 0;  // samples per optimizer step over all ranks (0: not recorded)
  // Dynamic loss scaling's state (train/loss_scaler.h): the scale and its good steps in a row,
  // so a resumed FP16 run does not restart at 65536 and skip steps finding its scale again.
  // 0: not recorded (no dynamic scaling, or an older checkpoint).
  double loss_scale = 0;
  int64_t loss_scale_good_steps = 0;
  // How the run that wrote it was set up, for a reader of the checkpoint alone ("" in older
  // ones): the config as train read it (Config::record) and the ranks, threads, backend and
  // precision, which decide the arithmetic (another thread count sums in another order).
  std::string config_text, setup;
  // Epoch `epoch`'s line of metrics.csv (without its newline) and its learning rate, "" and 0 in
  // older ones: a run stopped after the checkpoint and before metrics.csv or the event file took
  // the epoch (a full disk, a lost node) gets them back on --resume (train/metrics_csv.h).
  std::string epoch_metrics;
  double epoch_learning_rate = 0;
  // Drawn when a fresh run starts and kept by its resumes ("" in older checkpoints): which run of
  // the folder a checkpoint_best.h5 belongs to, beside its checkpoint_last.h5 (train/run_history.h).
  std::string run_id;
};

// Refuses (InputError, exit 3) a checkpoint trained on another store than `store`, saying what
// differs: its identity (channels, grids, statistics, mask, predictand), or the content of its
// train or validation split; a checkpoint without provenance (older versions) is accepted with a
// warning.
void check_checkpoint_store(const std::string& checkpoint_path, const TrainState& state, const StoreReader& store);

// The global batch is part of the optimization (the step count per epoch, the learning rate's
// scaling with the ranks, batch norm): a resume on another rank count would silently change it,
// so it is refused (UsageError), saying how to keep it. saved 0: not recorded (an older checkpoint).
void check_resumed_global_batch(const std::string& checkpoint, int64_t saved, int64_t now, int batch_size, int ranks);

// The SHA-256 of the model a checkpoint holds: its model_spec and every weight and buffer tensor
// (by name, in H5File::datasets' order), not the file's other bytes (its config record, version, optimizer
// state). A prediction records it (model_sha256), and evaluate compares it with the checkpoint's
// as it is now: a training rerun into the folder that gives the same model keeps the prediction
// valid, one that gives another does not.
std::string checkpoint_model_sha256(const std::string& path);
// A checkpoint's run_id ("" where it has none: an older version's) and epoch attribute (-1 when
// absent), read in one opening without the state's checks: which run and epoch a best model is
// of, against the last checkpoint's (train/run_history.h, predict). Throws InputError naming the
// file where it cannot be read.
struct CheckpointRun {
  std::string run_id;
  int epoch = -1;
};
CheckpointRun read_checkpoint_run(const std::string& path);
// A checkpoint's training state alone (epochs, patience count, mid-epoch step), without its
// tensors, for train --check.
TrainState read_checkpoint_state(const std::string& path);
// Why a run resumed from `state` (checkpoint `path`) has nothing left to train under train.epochs
// `epochs` and train.patience `patience`, "" when it has: it holds all the epochs asked for (or
// more, a mid-epoch checkpoint past them included), or its patience ran out at an epoch's end.
// train --resume then keeps everything as it is; train --check says so, and the batch script
// launches nothing (a requeued or resubmitted job whose training had ended).
// report_kept: whether the folder holds a train_report.json (after the resume's settling: it
// removes another run's, train/run_history.h); a finished run never writes one again.
std::string nothing_to_train(const TrainState& state, const std::string& path, int epochs, int patience,
                             bool report_kept);
// A checkpoint's record of the store it was trained on alone (empty parts where it has none), for
// preprocess's warning about checkpoints a rebuilt store leaves behind.
StoreProvenance read_checkpoint_provenance(const std::string& path);
// Which split of a store holding `train_now` and `validation_now` (StoreReader::split_hash) the
// checkpoint of `saved` was not trained on: "train", "validation", or "" where both are the ones it
// was (or either side did not record them: older checkpoints and stores).
std::string changed_split(const StoreProvenance& saved, const std::string& train_now, const std::string& validation_now);

void save_checkpoint(const std::string& path, model::Net& net, model::Optimizer* optimizer, const TrainState& state);

// The model spec stored in a checkpoint (to build the Net before loading weights).
model::ModelSpec read_checkpoint_spec(const std::string& path);

// Refuses (UsageError, exit 2) a checkpoint of another model, loss or demo filters than `want`,
// naming both and the key; train --check runs it before launch, load_checkpoint before loading.
void check_checkpoint_model(const std::string& path, const model::ModelSpec& want);

// train --check --resume: what train --resume refuses before it trains, without loading the
// tensors: another optimizer's state (UsageError) or another store (check_checkpoint_store).
void check_resumable(const std::string& path, const std::string& optimizer, const StoreReader& store);

// Loads weights and buffers (and, if optimizer is non-null, its state, which must come from the
// same kind of optimizer); returns the training state. Throws InputError naming the file and
// parameter on any mismatch of names, shapes or optimizer.
TrainState load_checkpoint(const std::string& path, model::Net& net, model::Optimizer* optimizer);

}  // namespace ds
