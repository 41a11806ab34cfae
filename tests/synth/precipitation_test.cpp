// The synthetic precipitation: non-negative on land, missing over a coast-like ocean, a realistic
// wet-day frequency, and a relationship with the predictors that a model can learn (the oracle
// expectation beats the per-cell climatology).
#include <gtest/gtest.h>

#include <cmath>

#include "io/calendar.h"
#include "synth/grid.h"
#include "synth/land_mask.h"
#include "synth/large_scale.h"
#include "synth/modes.h"
#include "synth/precipitation.h"
#include "synth/writer.h"
#include "synth_test_data.h"

namespace ds::synth {
namespace {

using test::read_all;
using test::small_dataset;

constexpr double kMmPerDay = 86400.0;

struct Precip {
  size_t nt, nlat, nlon;
  std::vector<float> pr;  // [time][lat][lon], kg m-2 s-1
  size_t cells() const { return nlat * nlon; }
};

const Precip& precip() {
  static const Precip p = [] {
    const NcFile f = NcFile::open(small_dataset().files.predictand);
    return Precip{f.dim_len("time"), f.dim_len("lat"), f.dim_len("lon"), read_all(f, "pr")};
  }();
  return p;
}

TEST(SynthPrecip, NonNegativeOnLandAndFillOverOcean) {
  const auto& p = precip();
  const auto mask = land_mask(fine_grid(small_dataset().cfg), small_dataset().cfg);
  ASSERT_EQ(mask.size(), p.cells());
  bool drizzle = false;
  for (size_t t = 0; t < p.nt; ++t)
    for (size_t k = 0; k < p.cells(); ++k) {
      const float x = p.pr[t * p.cells() + k];
      if (mask[k]) {
        ASSERT_GE(x, 0.0f);
        ASSERT_LT(x * kMmPerDay, 1000.0);
        if (x > 0 && x * kMmPerDay < 0.99) drizzle = true;
      } else {
        ASSERT_EQ(x, kFillValue);
      }
    }
  EXPECT_TRUE(drizzle) << "dry days should sometimes report a trace below 0.99 mm";
}

TEST(SynthPrecip, LandShareAndCoastOnWestOrSouthEdge) {
  const auto& d = small_dataset();
  const Grid g = fine_grid(d.cfg);
  const auto mask = land_mask(g, d.cfg);
  size_t land = 0;
  for (auto m : mask) land += m;
  const double share = double(land) / mask.size();
  EXPECT_GE(share, 0.60);
  EXPECT_LE(share, 0.85);
  // Ocean on the west column and the south row; land at the north-east corner.
  size_t west_ocean = 0, south_ocean = 0;
  for (size_t i = 0; i < g.lat.size(); ++i) west_ocean += !mask[i * g.lon.size()];
  for (size_t j = 0; j < g.lon.size(); ++j) south_ocean += !mask[(g.lat.size() - 1) * g.lon.size() + j];
  EXPECT_GT(west_ocean, g.lat.size() / 2);
  EXPECT_GT(south_ocean, g.lon.size() / 2);
  EXPECT_TRUE(mask[g.lon.size() - 1]);
  // The default region too.
  const Config::Synth def;
  const auto dmask = land_mask(fine_grid(def), def);
  land = 0;
  for (auto m : dmask) land += m;
  EXPECT_GE(double(land) / dmask.size(), 0.65);
  EXPECT_LE(double(land) / dmask.size(), 0.80);
}

TEST(SynthPrecip, WetDayFrequencyAndAmountsAreRealistic) {
  const auto& p = precip();
  const auto mask = land_mask(fine_grid(small_dataset().cfg), small_dataset().cfg);
  double wet = 0, days = 0, wet_sum = 0;
  for (size_t t = 0; t < p.nt; ++t)
    for (size_t k = 0; k < p.cells(); ++k) {
      if (!mask[k]) continue;
      const double mm = p.pr[t * p.cells() + k] * kMmPerDay;
      days += 1;
      if (mm >= 1.0) {
        wet += 1;
        wet_sum += mm;
      }
    }
  const double freq = wet / days, mean_wet = wet_sum / wet;
  EXPECT_GE(freq, 0.2);
  EXPECT_LE(freq, 0.6);
  EXPECT_GE(mean_wet, 3.0);
  EXPECT_LE(mean_wet, 12.0);
}

TEST(SynthPrecip, OracleBeatsClimatology) {
  // E[pr | noise-free wetness], computed from the same analytic state the writer used, against
  // each cell's mean over the first (training) year, scored on the second year.
  const auto& d = small_dataset();
  const auto& p = precip();
  const Grid g = fine_grid(d.cfg);
  const auto mask = land_mask(g, d.cfg);
  const auto days = day_axis(d.cfg);
  const size_t ntrain = 365;  // 2003
  std::vector<PointBasis> basis;
  std::vector<double> orography;
  for (double lat : g.lat)
    for (double lon : g.lon) {
      basis.push_back(basis_at(lon, lat));
      orography.push_back(orographic_term(lon, lat));
    }
  std::vector<double> clim(p.cells(), 0.0);
  for (size_t t = 0; t < ntrain; ++t)
    for (size_t k = 0; k < p.cells(); ++k) clim[k] += p.pr[t * p.cells() + k] * kMmPerDay / ntrain;

  ModeProcess modes(d.cfg.seed, days.front());
  double mse_oracle = 0, mse_clim = 0;
  for (size_t t = 0; t < p.nt; ++t) {
    if (t >= ntrain) {
      const LargeScaleDay day(modes.amplitudes(), civil_from_days(days[t]));
      for (size_t k = 0; k < p.cells(); ++k) {
        if (!mask[k]) continue;
        const double obs = p.pr[t * p.cells() + k] * kMmPerDay;
        const double oracle = expected_precip_mm(wetness_signal(day, basis[k], orography[k]));
        mse_oracle += (obs - oracle) * (obs - oracle);
        mse_clim += (obs - clim[k]) * (obs - clim[k]);
      }
    }
    modes.step();
  }
  const double skill = 1 - mse_oracle / mse_clim;
  EXPECT_GE(skill, 0.2);
  EXPECT_LT(skill, 0.8);  // noisy enough not to be a deterministic mapping
}

TEST(SynthPrecip, FineFieldHasDetailBeyondTwoDegrees) {
  // The orographic term varies within a 2-degree box, so the climatology at 0.5 degrees is not
  // just a smooth large-scale pattern.
  const auto& d = small_dataset();
  const Grid g = fine_grid(d.cfg);
  double lo = 1e9, hi = -1e9;
  for (size_t i = 0; i < 4; ++i)
    for (size_t j = 0; j < 4; ++j) {
      const double o = orographic_term(g.lon[g.lon.size() - 1 - j], g.lat[i]);
      lo = std::min(lo, o);
      hi = std::max(hi, o);
    }
  EXPECT_GT(hi - lo, 0.3);
}

}  // namespace
}  // namespace ds::synth
