// Driver of `downscale train`: one process, or one rank of `mpirun -np N downscale train`.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <optional>

#include "io/atomic_file.h"
#include "io/error.h"
#include "io/log.h"
#include "io/run_lock.h"
#include "io/stop_signal.h"
#include "io/training_store.h"
#include "pipeline/stages.h"
#include "train/check.h"
#include "train/checkpoint.h"
#include "train/distributed.h"
#include "train/trainer.h"

namespace ds {

int run_train(const Config& cfg, const StageOptions& opt) {
  const RunPaths paths = RunPaths::of(cfg);
  // Before MPI_Init: a batch script runs this once, before it launches any rank.
  if (opt.check) {
    std::fputs(check_training(cfg, paths.store(), paths.model_dir(), opt.resume, opt.resume_auto, opt.check_ranks).c_str(), stdout);
    RunLock::check_free(paths.model_dir(), "train");  // the launch would stop there
    std::puts("train --check: ok (nothing written)");
    return 0;
  }
  // Alone, MPI_Init makes a singleton: one rank, the same run as before.
  const auto comm = make_mpi_communicator();
  if (comm->size() > 1) setup_logging("train", cfg.run.log_level, comm->rank());  // every line names its rank
  // One train per model folder: rank 0 holds the lock for the whole job. The other ranks wait at
  // the barrier below; if the lock is taken, rank 0's error ends them (MPI_Abort) rather than
  // leaving them there.
  std::optional<RunLock> lock;
  bool done = false;  // a finished run resumed: nothing was trained or written
  // An Interrupted passes through: every rank agreed to stop at the same step (the trainer's
  // stop vote) and rank 0 wrote the checkpoint, so each leaves normally, through MPI_Finalize,
  // with the signal's exit code.
  run_or_abort_job(*comm, [&] {
    // A loss the predictand cannot take is the config's fault: refused before the model's folder
    // is made (train_model checks it again for its other callers).
    check_loss_fits_predictand(cfg, StoreReader(paths.store()).meta(), paths.store());
    if (comm->is_root()) {
      lock.emplace(paths.model_dir(), "train");
      remove_stale_temps(paths.model_dir());  // a killed run's checkpoint_*.h5.tmp-PID
      // The timeline is written at the end: find out now, not after the training, that its
      // folder cannot be made.
      const auto slash = opt.timeline.find_last_of('/');
      if (slash != std::string::npos && slash > 0) make_dirs(opt.timeline.substr(0, slash));
      if (!opt.timeline.empty()) check_can_write(opt.timeline, "--timeline");
    }
    comm->barrier("creating the output folder");
    // Requeued after SIGUSR1 (or a node failure): the checkpoint is there, unless the first run
    // stopped before writing one. Every rank sees the same shared folder.
    const std::string last = paths.model_dir() + "/checkpoint_last.h5";
    const bool resume = opt.resume || (opt.resume_auto && path_exists(last));
    // Rerunning after Ctrl-C without --resume starts from scratch and replaces the interrupted
    // run's checkpoint and history at the end of its first epoch: say so while the user can
    // still stop (which leaves the earlier run whole) and resume.
    // One that --resume would refuse (trained on another store) is not offered.
    if (comm->is_root() && !resume && path_exists(last)) {
      std::string why_not;
      try {
        check_checkpoint_store(last, read_checkpoint_state(last), StoreReader(paths.store()));
      } catch (const Error& e) {
        why_not = e.what();
      }
      if (why_not.empty())
        spdlog::warn("{} exists: this run starts afresh and replaces it, with its metrics.csv, at the end of its first "
                     "epoch, or at a SIGUSR1 checkpoint-and-requeue before then (to continue that run instead, stop this "
                     "one with Ctrl-C or SIGTERM before then and pass --resume)", last);
      else
        spdlog::warn("this run starts afresh and replaces {}, with its metrics.csv, at the end of its first epoch (it "
                     "cannot be resumed: {})", last, why_not);
    }
    // A folder with an earlier run's best model and no last checkpoint (removed, or lost): the
    // run begins its history there and replaces that model, which nothing said.
    const std::string best = paths.model_dir() + "/checkpoint_best.h5";
    if (comm->is_root() && !resume && !path_exists(last) && path_exists(best))
      spdlog::warn("{} exists (an earlier run's; its checkpoint_last.h5 is not there): this run replaces it, with its "
                   "metrics.csv, at the end of its first epoch, or at a SIGUSR1 checkpoint-and-requeue before then "
                   "(stop it with Ctrl-C or SIGTERM before then to keep them)", best);
    done = train_model(cfg, paths.store(), paths.model_dir(), resume, {}, comm.get(), opt.timeline).already_done;
  });
  if (comm->is_root() && !done) spdlog::info("wrote {}/checkpoint_best.h5 and checkpoint_last.h5", paths.model_dir());
  return 0;
}

}  // namespace ds
