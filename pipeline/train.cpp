// Driver of `downscale train`.
#include <spdlog/spdlog.h>

#include "io/atomic_file.h"
#include "pipeline/stages.h"
#include "train/trainer.h"

namespace ds {

int run_train(const Config& cfg, const StageOptions& opt) {
  const RunPaths paths{cfg.run.dir};
  make_dirs(paths.train_dir());
  train_model(cfg, paths.store(), paths.train_dir(), opt.resume);
  spdlog::info("wrote {}/checkpoint_best.h5 and checkpoint_last.h5", paths.train_dir());
  return 0;
}

}  // namespace ds
