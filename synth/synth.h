// The embedded synthetic data source: a small, self-consistent "world" whose predictors look on
// disk like ERA-Interim and whose precipitation looks like EWEMBI, with a known (learnable)
// relationship between them. `downscale fetch` reads these files exactly as it reads the real
// sources, so the whole pipeline runs offline and tests can check skill against the truth.
#pragma once
#include <string>

#include "io/config.h"

namespace ds::synth {

struct SynthFiles {
  std::string predictors, predictand;  // the two paths written
};

// Writes <cfg.dir>/era_interim_synth.nc and <cfg.dir>/ewembi_synth.nc (each atomically) for
// cfg.years over the cfg lon/lat region. The same cfg (seed included) gives identical values.
// Throws UsageError for an empty year range or a region with no grid point.
SynthFiles write_synthetic_dataset(const ds::Config::Synth& cfg);

}  // namespace ds::synth
