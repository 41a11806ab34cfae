#include "synth/synth.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "io/atomic_file.h"
#include "io/calendar.h"
#include "io/error.h"
#include "io/log.h"
#include "io/stop_signal.h"
#include "synth/grid.h"
#include "synth/land_mask.h"
#include "synth/large_scale.h"
#include "synth/modes.h"
#include "synth/precipitation.h"
#include "synth/writer.h"

namespace ds::synth {

namespace {

void check_config(const Config::Synth& cfg) {
  if (cfg.dir.empty()) throw UsageError("synth.dir: empty");
  if (cfg.years.empty()) throw UsageError("synth.years: empty range");
  // Named as the config writes them (synth.lon: [min, max]), not by the fields they are read into.
  if (!(cfg.lon_min < cfg.lon_max) || cfg.lon_min < -180 || cfg.lon_max > 180)
    throw UsageError(fmt::format("synth.lon: must be [min, max] with -180 <= min < max <= 180, got [{}, {}]",
                                 cfg.lon_min, cfg.lon_max));
  if (!(cfg.lat_min < cfg.lat_max) || cfg.lat_min < -90 || cfg.lat_max > 90)
    throw UsageError(fmt::format("synth.lat: must be [min, max] with -90 <= min < max <= 90, got [{}, {}]",
                                 cfg.lat_min, cfg.lat_max));
}

std::vector<PointBasis> bases(const Grid& g) {
  std::vector<PointBasis> b;
  b.reserve(g.size());
  for (double lat : g.lat)
    for (double lon : g.lon) b.push_back(basis_at(lon, lat));
  return b;
}

constexpr double kSecondsPerDay = 86400.0;

}  // namespace

SynthFiles write_synthetic_dataset(const Config::Synth& cfg) {
  check_config(cfg);
  const Grid coarse = coarse_grid(cfg), fine = fine_grid(cfg);
  if (coarse.size() == 0)
    throw UsageError("synth: the region has no point of the 2-degree grid (even degrees); widen it");
  if (fine.size() == 0) throw UsageError("synth: the region has no 0.5-degree cell centre; widen it");
  const std::vector<int64_t> days = day_axis(cfg);

  SynthFiles out{cfg.dir + "/era_interim_synth.nc", cfg.dir + "/ewembi_synth.nc"};
  AtomicFile pred_file(out.predictors), pr_file(out.predictand);
  PredictorWriter pred(pred_file.temp_path(), coarse, days, cfg);
  PrecipWriter prw(pr_file.temp_path(), fine, days, cfg);

  // Static per-point inputs, computed once.
  const std::vector<PointBasis> coarse_b = bases(coarse), fine_b = bases(fine);
  const std::vector<uint8_t> land = land_mask(fine, cfg);
  std::vector<double> orography(fine.size());
  for (size_t i = 0; i < fine.size(); ++i) orography[i] = orographic_term(fine_b[i].lon, fine_b[i].lat);

  ModeProcess modes(cfg.seed, days.front());
  PrecipSampler sampler(cfg.seed);

  const size_t ncoarse = coarse.size(), nfine = fine.size();
  std::array<std::vector<float>, kVars> block;
  for (auto& b : block) b.resize(kBlockDays * kLevels * ncoarse);
  std::vector<float> pr(kBlockDays * nfine);

  spdlog::info("synth: {} days, {}x{} predictor points, {}x{} precipitation cells, seed {}", days.size(),
               coarse.lat.size(), coarse.lon.size(), fine.lat.size(), fine.lon.size(), cfg.seed);
  Progress progress("synth days", static_cast<int64_t>(days.size()));
  for (size_t t0 = 0; t0 < days.size(); t0 += kBlockDays) {
    const size_t nt = std::min(kBlockDays, days.size() - t0);
    for (size_t k = 0; k < nt; ++k) {
      const LargeScaleDay day(modes.amplitudes(), civil_from_days(days[t0 + k]));
      for (int v = 0; v < kVars; ++v)
        for (int l = 0; l < kLevels; ++l) {
          float* dst = block[v].data() + (k * kLevels + l) * ncoarse;
          for (size_t i = 0; i < ncoarse; ++i) dst[i] = static_cast<float>(day.value(kAllVars[v], l, coarse_b[i]));
        }
      float* dst = pr.data() + k * nfine;
      for (size_t i = 0; i < nfine; ++i) {
        // Ocean cells draw nothing, so the land values do not depend on how much ocean there is.
        dst[i] = land[i] ? static_cast<float>(sampler.draw_mm(wetness_signal(day, fine_b[i], orography[i])) / kSecondsPerDay)
                         : kFillValue;
      }
      modes.step();
      progress.advance();
    }
    pred.write_block(t0, nt, block);
    prw.write_block(t0, nt, pr);
    // Ctrl-C or a job's SIGTERM: the temporary files go (AtomicFile), the earlier ones stay.
    throw_if_stop_requested("writing the synthetic dataset; nothing replaced");
  }
  progress.done();
  throw_if_stop_requested("writing the synthetic dataset; nothing replaced");

  pred.close();
  prw.close();
  // The same settings write the same bytes: a file unchanged is kept as it was, so that a fetch
  // of it sees no new source and reuses its chunks (demo reruns).
  const bool pred_new = pred_file.commit_unless_unchanged(), pr_new = pr_file.commit_unless_unchanged();
  if (pred_new || pr_new)
    spdlog::info("synth: wrote {} and {}{}", out.predictors, out.predictand,
                 pred_new && pr_new ? "" : pred_new ? " (the latter unchanged, kept)" : " (the former unchanged, kept)");
  else
    spdlog::info("synth: {} and {} are unchanged (the same settings), kept as they were", out.predictors,
                 out.predictand);
  return out;
}

}  // namespace ds::synth
