// Driver of `downscale preprocess`.
#include <spdlog/spdlog.h>

#include "io/run_lock.h"
#include "io/stop_signal.h"
#include "pipeline/stages.h"
#include "preprocess/build_store.h"

namespace ds {

int run_preprocess(const Config& cfg) {
  const RunPaths paths = RunPaths::of(cfg);
  // One preprocess per run folder; then whatever a killed one left (a full-size store.h5.tmp-PID).
  const std::string dir = cfg.run.dir + "/preprocess";
  RunLock lock(dir, "preprocess");
  remove_stale_temps(dir);
  const auto s = build_store(cfg, paths.fetch_dir(), paths.store());
  spdlog::info("splits by year: {}", s.splits);
  if (s.precipitation)
    spdlog::info("wrote {}: {} train, {} validation, {} test days; {:.0f}% land; {:.0f}% wet days in training",
                 paths.store(), s.train, s.validation, s.test, 100 * s.land_share, 100 * s.wet_day_share);
  else
    spdlog::info("wrote {}: {} train, {} validation, {} test days; {:.0f}% of the observation grid modelled",
                 paths.store(), s.train, s.validation, s.test, 100 * s.land_share);
  return 0;
}

}  // namespace ds
