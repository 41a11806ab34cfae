// Driver of `downscale synth`.
#include <spdlog/spdlog.h>

#include "pipeline/stages.h"
#include "synth/synth.h"

namespace ds {

int run_synth(const Config& cfg) {
  spdlog::info("writing the synthetic dataset for {}-{} to {}", cfg.synth.years.first, cfg.synth.years.last, cfg.synth.dir);
  synth::write_synthetic_dataset(cfg.synth);  // logs the files it wrote
  return 0;
}

}  // namespace ds
