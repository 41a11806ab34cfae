// Driver of `downscale synth`.
#include <spdlog/spdlog.h>

#include "pipeline/stages.h"
#include "io/error.h"
#include "synth/synth.h"

namespace ds {

int run_synth(const Config& cfg) {
  // A config of real data (configs/iberia_tas.yaml) has no synth section: writing the defaults'
  // 33 MB of synthetic North America to ./data/synth would answer a question nobody asked.
  if (!cfg.synth.present)
    throw UsageError(cfg.file + ": no synth section: `downscale synth` writes the synthetic sources a config asks for "
                     "in one (configs/demo.yaml has it; a --set synth.… does not make one); this config's fetch reads its "
                     "own sources, so there is nothing to synthesize (nothing written)");
  spdlog::info("writing the synthetic dataset for {}-{} to {}", cfg.synth.years.first, cfg.synth.years.last, cfg.synth.dir);
  synth::write_synthetic_dataset(cfg.synth);  // logs the files it wrote
  return 0;
}

}  // namespace ds
