#include "train/check.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <regex>
#include <sstream>

#include "io/atomic_file.h"
#include "io/error.h"
#include "io/training_store.h"
#include "model/backend.h"
#include "model/loss.h"
#include "model/math_mode.h"
#include "train/checkpoint.h"
#include "train/run_history.h"
#include "train/store_settings.h"
#include "train/device_communicator.h"
#include "train/training_setup.h"

namespace ds {

model::ModelSpec model_spec_for(const Config& cfg, const StoreMeta& meta) {
  model::ModelSpec spec;
  spec.name = cfg.model.name;
  spec.in_channels = meta.C();
  spec.in_h = meta.H();
  spec.in_w = meta.W();
  spec.filters = cfg.model.filters;
  spec.loss = cfg.train.loss;
  if (spec.name == "deepesd") {
    // Its dense heads have one unit per land point, so the grid and mask are part of the model.
    spec.out_h = meta.Hy();
    spec.out_w = meta.Wy();
    spec.land_mask = meta.mask;
  }
  return spec;
}

void check_loss_fits_predictand(const Config& cfg, const StoreMeta& meta, const std::string& store_path) {
  const model::LossKind loss = model::parse_loss(cfg.train.loss, cfg.origin("train.loss") + ": key 'train.loss'");
  if (meta.is_precipitation() && loss != model::LossKind::kBernoulliGamma)
    throw UsageError(cfg.origin("train.loss") + ": key 'train.loss' is " + cfg.train.loss + ", but " + store_path +
                     " holds precipitation, which needs bernoulli_gamma");
  if (!meta.is_precipitation() && loss == model::LossKind::kBernoulliGamma)
    throw UsageError(cfg.origin("train.loss") + ": key 'train.loss' is bernoulli_gamma, but the predictand of " +
                     store_path + " is " + meta.predictand + ", not precipitation (gaussian or mse)");
}

namespace {

// The checkpoint to resume: its model, loss and filters against the config's, and its global batch
// against this job's (ranks x train.batch_size) when the launch's rank count is known; else what
// it needs, as a note. Each refusal is exit 2 here, before the ranks are launched.
void check_resume(const Config& cfg, const model::ModelSpec& spec, const std::string& checkpoint, int ranks,
                  const StoreReader& store, std::ostream& out) {
  check_checkpoint_model(checkpoint, spec);  // another model, loss or filters: exit 2 before launch
  // Another optimizer (exit 2), another store or other training or validation days (exit 3): as
  // train --resume would refuse once every rank had started.
  check_resumable(checkpoint, cfg.train.optimizer, store);
  out << "checkpoint " << checkpoint << ": model " << spec.name << ", loss " << spec.loss << ", optimizer "
      << cfg.train.optimizer << ", as configured; trained on this store\n";
  // A finished training (all its epochs, or its patience spent): the batch script reads this line
  // and launches nothing, so a resubmitted or requeued job after the end completes, exit 0, on
  // any rank count (its global batch is not checked: nothing trains).
  const TrainState state = read_checkpoint_state(checkpoint);
  const std::string out_dir = std::filesystem::path(checkpoint).parent_path().string();
  // (A resume that begins the history again removes the report there: another run's.)
  const HistorySettlement plan = plan_history_settlement(out_dir, state);
  const bool report_kept = path_exists(out_dir + "/train_report.json") && !plan.restart_history;
  if (const std::string done = nothing_to_train(state, checkpoint, cfg.train.epochs, cfg.train.patience, report_kept);
      !done.empty()) {
    out << "finished: " << done << "\n";
    // A run stopped after its last checkpoint (a kill, a lost node, a full disk) left its folder
    // for the resume to settle: the batch script then launches the ranks, which settle it and
    // train nothing, rather than end the job with the folder as it is.
    if (const std::string settle = finished_folder_to_settle(plan, out_dir, state); !settle.empty())
      out << "settle: " << settle << " (train --resume does this, training nothing)\n";
    return;
  }
  const int64_t saved = state.global_batch;
  if (ranks > 0 && saved > 0) {
    check_resumed_global_batch(checkpoint, saved, int64_t(cfg.train.batch_size) * ranks, cfg.train.batch_size, ranks);
    out << "global batch " << cfg.train.batch_size << " x " << ranks << " rank(s) = " << saved
        << ", as the checkpoint was trained\n";
  } else if (ranks > 0) {
    out << "note: " << checkpoint << " records no global batch (an older version): not checked against " << ranks
        << " rank(s)\n";
  } else if (saved > 0) {
    out << "note: " << checkpoint << " was trained with a global batch of " << saved
        << " (train.batch_size x ranks): launch it with that product (--ranks N checks it here)\n";
  }
  // The rate after warmup this launch goes on at (train.learning_rate x ranks), against the last
  // session's: with the ranks given, or those the checkpoint's global batch implies.
  const int rate_ranks = ranks > 0                                                        ? ranks
                         : saved > 0 && saved % std::max(1, cfg.train.batch_size) == 0 ? int(saved / cfg.train.batch_size)
                                                                                         : 0;
  if (rate_ranks > 0) {
    if (const std::string changed =
            learning_rate_change(checkpoint, state.setup, learning_rate_text(cfg.train.learning_rate, rate_ranks),
                                 cfg.train.learning_rate, rate_ranks, state.epoch + 1);
        !changed.empty())
      out << "note: " << changed << "\n";
  }
  if (const std::string changed = seed_change(checkpoint, state.setup, cfg.train.seed, state.epoch + 1); !changed.empty())
    out << "note: " << changed << "\n";
}

}  // namespace

std::string one_step_epoch_note(size_t n_train, int batch_size, int ranks) {
  const int64_t batch = int64_t(batch_size) * std::max(ranks, 1);
  if (int64_t(n_train) >= batch) return "";
  return "the train split holds " + std::to_string(n_train) + " days, fewer than one " +
         (ranks > 0 ? "global batch (" + std::to_string(batch) + " = train.batch_size " + std::to_string(batch_size) +
                          " x " + std::to_string(ranks) + " rank(s))"
                    : "batch per rank (" + std::to_string(batch_size) + ")") +
         ": each epoch is a single optimizer step";
}

std::string check_training(const Config& cfg, const std::string& store_path, const std::string& model_dir, bool resume,
                           bool resume_auto, int ranks) {
  std::ostringstream out;
  out << "config " << cfg.file << ": every key known and in range\n";

  const StoreReader store(store_path);
  const StoreMeta& meta = store.meta();
  const size_t n_train = store.count("train"), n_val = store.count("validation"), n_test = store.count("test");
  if (n_train == 0) throw InputError(store_path + ": the train split is empty (preprocess.train_years)");
  if (meta.C() == 0 || meta.H() == 0 || meta.W() == 0 || meta.Hy() == 0 || meta.Wy() == 0)
    throw InputError(store_path + ": empty grids or no channels");
  out << "store " << store_path << ": " << meta.C() << " channels on " << meta.H() << " x " << meta.W() << ", "
      << meta.predictand << " on " << meta.Hy() << " x " << meta.Wy() << "; train " << n_train << ", validation "
      << n_val << ", test " << n_test << " days\n";

  if (const std::string changed = store_settings_change(cfg, store); !changed.empty()) out << "warning: " << changed << "\n";
  check_loss_fits_predictand(cfg, meta, store_path);

  // The net as train builds it, on one CPU thread: its shapes, not its speed.
  const model::ModelSpec spec = model_spec_for(cfg, meta);
  auto be = model::make_backend("cpu", 1);
  model::Net net(spec, *be);
  const auto shape = net.output_shape(1);
  if (shape.h != meta.Hy() || shape.w != meta.Wy())
    throw InputError(store_path + ": the store's predictand grid is " + std::to_string(meta.Hy()) + " x " +
                     std::to_string(meta.Wy()) + " but model '" + spec.name + "' outputs " + std::to_string(shape.h) +
                     " x " + std::to_string(shape.w));
  out << "model " << spec.name << ": " << net.parameter_count() << " parameters, output " << shape.h << " x "
      << shape.w << " as the store's; loss " << cfg.train.loss << ", optimizer " << cfg.train.optimizer << ", batch "
      << cfg.train.batch_size << " per rank, " << cfg.train.epochs << " epochs\n";
  // As train warns at its start: with --ranks, against the global batch it will have.
  if (const std::string note = one_step_epoch_note(n_train, cfg.train.batch_size, ranks); !note.empty())
    out << "note: " << note << "\n";

  // train.precision on the backend this node trains on: a CPU without FP16 (or without
  // avx512_bf16 for bf16) would otherwise be train's exit 2 after the ranks were launched. A
  // cuda run checked where there is no GPU (a login node) is a note: the job's nodes have one.
  std::unique_ptr<model::Backend> run_be;
  try {
    run_be = model::make_backend(cfg.run.device, 1, 0, "run.device", cfg.origin("run.device"));
  } catch (const Error& e) {
    // With a GPU here the failure is the run's own (a mistyped DOWNSCALE_CUDA_* switch, exit 2),
    // which every rank would meet after the launch.
    if (cfg.run.device != "cuda" || model::cuda_probe().devices > 0) throw;
    out << "note: run.device cuda, but not on this node: " << e.what() << "\n";
  }
  if (run_be) {
    model::apply_math_mode(*run_be, cfg.train.precision, false);
    // Built here on one thread: its thread count is not the run's (run.threads, or the cores each rank may use).
    const std::string kind = std::regex_replace(run_be->name(), std::regex(", [0-9]+ threads?\\)"), ")");
    out << "backend " << kind << " computes train.precision " << cfg.train.precision << "\n";
    // nccl on a CPU backend: exit 2, as train; but auto on a node without a GPU (a login node)
    // says nothing of the job's nodes: a note.
    if (cfg.run.communicator == "nccl" && cfg.run.device == "auto" && run_be->name().rfind("cuda", 0) != 0)
      out << "note: run.communicator nccl needs GPUs, and run.device auto found none on this node\n";
    else
      check_communicator_choice(cfg.run.communicator, *run_be);
  }

  // The batch script reads these lines: the device, to stop a cuda run in a job without GPUs before
  // launching it, and the folder, to find the report a finished training leaves there.
  out << "device " << cfg.run.device << " (run.device)\n";
  out << "output folder " << model_dir << "\n";
  if (resume) {
    const std::string last = model_dir + "/checkpoint_last.h5";
    struct stat st {};
    if (::stat(last.c_str(), &st) != 0) throw InputError(last + ": no checkpoint to resume from");
    out << "resume from " << last << "\n";
    check_resume(cfg, spec, last, ranks, store, out);
  } else if (struct stat st {}; ::stat((model_dir + "/checkpoint_last.h5").c_str(), &st) == 0) {
    if (resume_auto) {  // a requeued Slurm job
      out << "resume from " << model_dir << "/checkpoint_last.h5 (--resume-auto)\n";
      check_resume(cfg, spec, model_dir + "/checkpoint_last.h5", ranks, store, out);
    } else  // as train itself warns: the earlier run's checkpoint goes at the first epoch
      out << "note: " << model_dir << "/checkpoint_last.h5 exists: train starts afresh and replaces it (--resume "
          << "continues it)\n";
  }
  return out.str();
}

}  // namespace ds
