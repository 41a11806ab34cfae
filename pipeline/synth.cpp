// Driver of `downscale synth`.
#include <spdlog/spdlog.h>

#include <tuple>

#include "fetch/dataset.h"
#include "io/error.h"
#include "pipeline/stages.h"
#include "synth/synth.h"

namespace ds {

namespace {

// The config's fetch datasets that read what `downscale synth` writes ("fetch.predictors.dataset
// synth_era_interim, ..."); "" when none, or when a definition cannot be read (fetch says why).
std::string synthetic_datasets(const Config& cfg) {
  std::string out;
  for (const auto& [key, name, source] :
       {std::tuple<std::string, std::string, std::string>{"predictors", cfg.fetch.predictors_dataset, cfg.fetch.predictors_source},
        {"predictand", cfg.fetch.predictand_dataset, cfg.fetch.predictand_source}}) {
    if (name.empty() || !source.empty()) continue;  // a source given reads that instead
    try {
      if (load_dataset(name, cfg.file, cfg.synth.dir).synthetic)
        out += (out.empty() ? "" : ", ") + ("fetch." + key + ".dataset " + name);
    } catch (const Error&) {
    }
  }
  return out;
}

}  // namespace

int run_synth(const Config& cfg) {
  // A config of real data (configs/iberia_tas.yaml) has no synth section: writing the defaults'
  // 33 MB of synthetic North America to ./data/synth would answer a question nobody asked.
  if (!cfg.synth.present) {
    const std::string base = cfg.file + ": no synth section: `downscale synth` writes the synthetic sources a config "
                             "asks for in one (configs/demo.yaml has it; a --set synth.… does not make one)";
    const std::string reads = synthetic_datasets(cfg);
    if (!reads.empty())
      throw UsageError(base + ", and this config's fetch reads them (" + reads + "): add a synth section (nothing written)");
    throw UsageError(base + "; this config's fetch reads its own sources, so there is nothing to synthesize (nothing written)");
  }
  spdlog::info("writing the synthetic dataset for {}-{} to {}", cfg.synth.years.first, cfg.synth.years.last, cfg.synth.dir);
  synth::write_synthetic_dataset(cfg.synth);  // logs the files it wrote
  return 0;
}

}  // namespace ds
