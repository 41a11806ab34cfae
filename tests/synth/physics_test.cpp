// The synthetic predictors behave like the atmosphere: physical ranges per level, positive
// humidity, day-to-day persistence, a seasonal cycle, coherent variables, and fields smooth
// enough that the 2-degree grid resolves them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "io/calendar.h"
#include "synth/grid.h"
#include "synth/large_scale.h"
#include "synth/modes.h"
#include "synth_test_data.h"

namespace ds::synth {
namespace {

using test::read_all;
using test::small_dataset;

struct Range {
  double lo, hi;
};

// [time][plev][lat][lon] arrays of the small dataset.
struct Predictors {
  size_t nt, nlev, nlat, nlon;
  std::map<std::string, std::vector<float>> data;
  float at(const std::string& v, size_t t, size_t l, size_t i, size_t j) const {
    return data.at(v)[((t * nlev + l) * nlat + i) * nlon + j];
  }
};

const Predictors& predictors() {
  static const Predictors p = [] {
    const NcFile f = NcFile::open(small_dataset().files.predictors);
    Predictors p{f.dim_len("time"), f.dim_len("plev"), f.dim_len("lat"), f.dim_len("lon"), {}};
    for (const char* v : {"z", "hus", "ta", "ua", "va"}) p.data[v] = read_all(f, v);
    return p;
  }();
  return p;
}

double correlation(const std::vector<double>& a, const std::vector<double>& b) {
  double ma = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i) ma += a[i], mb += b[i];
  ma /= a.size();
  mb /= b.size();
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return sab / std::sqrt(saa * sbb);
}

TEST(SynthPhysics, ValuesStayInPhysicalRangesPerLevel) {
  const auto& p = predictors();
  // Levels in file order 1000, 850, 700, 500.
  const std::map<std::string, std::vector<Range>> ranges{
      {"z", {{0, 1500}, {14000, 15500}, {29000, 31000}, {55000, 58000}}},
      {"hus", {{0.005, 0.015}, {0.003, 0.01}, {0.001, 0.006}, {0.0002, 0.002}}},
      {"ta", {{270, 300}, {265, 290}, {255, 280}, {240, 265}}},
      {"ua", {{-10, 15}, {-10, 20}, {-5, 25}, {10, 25}}},
      {"va", {{-10, 10}, {-10, 10}, {-10, 10}, {-10, 10}}},
  };
  for (const auto& [var, levels] : ranges) {
    for (size_t l = 0; l < p.nlev; ++l) {
      float lo = 1e30f, hi = -1e30f;
      for (size_t t = 0; t < p.nt; ++t)
        for (size_t i = 0; i < p.nlat; ++i)
          for (size_t j = 0; j < p.nlon; ++j) {
            const float x = p.at(var, t, l, i, j);
            lo = std::min(lo, x);
            hi = std::max(hi, x);
          }
      EXPECT_GE(lo, levels[l].lo) << var << " level " << l;
      EXPECT_LE(hi, levels[l].hi) << var << " level " << l;
      EXPECT_GT(hi - lo, 0.2 * (levels[l].hi - levels[l].lo)) << var << " level " << l << " barely varies";
    }
  }
  for (float q : p.data.at("hus")) ASSERT_GT(q, 0.0f);
}

TEST(SynthPhysics, WesterliesGrowWithHeight) {
  const auto& p = predictors();
  std::vector<double> mean(p.nlev, 0.0);
  const auto& ua = p.data.at("ua");
  const size_t per_level = p.nlat * p.nlon;
  for (size_t t = 0; t < p.nt; ++t)
    for (size_t l = 0; l < p.nlev; ++l)
      for (size_t k = 0; k < per_level; ++k) mean[l] += ua[(t * p.nlev + l) * per_level + k];
  for (size_t l = 1; l < p.nlev; ++l) EXPECT_GT(mean[l], mean[l - 1]) << "level " << l;
}

TEST(SynthPhysics, Z500IsPersistentFromDayToDay) {
  const auto& p = predictors();
  // A point in the middle; remove each calendar month's mean so the seasonal cycle does not
  // inflate the persistence.
  const NcFile f = NcFile::open(small_dataset().files.predictors);
  const auto time = f.read_coord("time");
  const TimeUnits units = TimeUnits::parse(f.att_text(f.var_id("time"), "units"), "test");
  std::vector<double> z(p.nt);
  std::map<int, std::pair<double, int>> monthly;
  for (size_t t = 0; t < p.nt; ++t) {
    z[t] = p.at("z", t, 3, p.nlat / 2, p.nlon / 2);
    const Date d = units.date_of(time[t]);
    auto& m = monthly[d.year * 12 + d.month];
    m.first += z[t];
    m.second += 1;
  }
  for (size_t t = 0; t < p.nt; ++t) {
    const Date d = units.date_of(time[t]);
    const auto& m = monthly[d.year * 12 + d.month];
    z[t] -= m.first / m.second;
  }
  const std::vector<double> today(z.begin() + 1, z.end()), yesterday(z.begin(), z.end() - 1);
  const double r = correlation(today, yesterday);
  EXPECT_GT(r, 0.5);
  EXPECT_LT(r, 0.95);  // weather, not a frozen field
}

TEST(SynthPhysics, JulyIsWarmerAndMoisterThanJanuary) {
  const auto& p = predictors();
  const NcFile f = NcFile::open(small_dataset().files.predictors);
  const auto time = f.read_coord("time");
  const TimeUnits units = TimeUnits::parse(f.att_text(f.var_id("time"), "units"), "test");
  double ta[13] = {0}, q[13] = {0};
  int n[13] = {0};
  for (size_t t = 0; t < p.nt; ++t) {
    const int m = units.date_of(time[t]).month;
    for (size_t i = 0; i < p.nlat; ++i)
      for (size_t j = 0; j < p.nlon; ++j) {
        ta[m] += p.at("ta", t, 1, i, j);
        q[m] += p.at("hus", t, 1, i, j);
        ++n[m];
      }
  }
  EXPECT_GT(ta[7] / n[7], ta[1] / n[1] + 5.0);
  EXPECT_GT(q[7] / n[7], q[1] / n[1]);
}

TEST(SynthPhysics, VariablesAreCorrelatedAcrossLevelsAndVariables) {
  const auto& p = predictors();
  std::vector<double> z500, z850, ta850, q850;
  const size_t i = p.nlat / 2, j = p.nlon / 2;
  for (size_t t = 0; t < p.nt; ++t) {
    z500.push_back(p.at("z", t, 3, i, j));
    z850.push_back(p.at("z", t, 1, i, j));
    ta850.push_back(p.at("ta", t, 1, i, j));
    q850.push_back(std::log(p.at("hus", t, 1, i, j)));
  }
  EXPECT_GT(correlation(z500, z850), 0.5);   // coherent across levels
  EXPECT_GT(correlation(ta850, q850), 0.5);  // warm air is moist
}

TEST(SynthPhysics, FileValuesAreTheAnalyticFields) {
  // The writer samples LargeScaleDay at the grid points, so the same analytic state can be
  // sampled at 0.5 degrees for the precipitation.
  const auto& d = small_dataset();
  const auto& p = predictors();
  const Grid g = coarse_grid(d.cfg);
  const auto days = day_axis(d.cfg);
  ModeProcess modes(d.cfg.seed, days.front());
  for (size_t t = 0; t < 40; ++t) {
    const LargeScaleDay day(modes.amplitudes(), civil_from_days(days[t]));
    for (size_t i = 0; i < g.lat.size(); i += 2)
      for (size_t j = 0; j < g.lon.size(); j += 2) {
        const auto b = basis_at(g.lon[j], g.lat[i]);
        EXPECT_FLOAT_EQ(p.at("z", t, 3, i, j), static_cast<float>(day.value(Var::z, 3, b)));
        EXPECT_FLOAT_EQ(p.at("hus", t, 1, i, j), static_cast<float>(day.value(Var::hus, 1, b)));
      }
    modes.step();
  }
}

TEST(SynthPhysics, TwoDegreeGridResolvesTheFields) {
  // Bilinear interpolation of the 2-degree values at the 0.5-degree centres reproduces the
  // analytic field to a small fraction of its day-to-day variability.
  const auto& d = small_dataset();
  const Grid g = coarse_grid(d.cfg), fine = fine_grid(d.cfg);
  const auto days = day_axis(d.cfg);
  ModeProcess modes(d.cfg.seed, days.front());
  double err2 = 0, var = 0, mean = 0;
  int n = 0;
  for (size_t t = 0; t < 200; ++t) {
    const LargeScaleDay day(modes.amplitudes(), civil_from_days(days[t]));
    for (double lat : fine.lat)
      for (double lon : fine.lon) {
        const double i = (g.lat.front() - lat) / 2, j = (lon - g.lon.front()) / 2;
        const size_t i0 = std::min<size_t>(size_t(i), g.lat.size() - 2), j0 = std::min<size_t>(size_t(j), g.lon.size() - 2);
        const double fi = i - i0, fj = j - j0;
        auto at = [&](size_t a, size_t b) { return day.anomaly(Var::z, 3, basis_at(g.lon[b], g.lat[a])); };
        const double interp = (1 - fi) * ((1 - fj) * at(i0, j0) + fj * at(i0, j0 + 1)) +
                              fi * ((1 - fj) * at(i0 + 1, j0) + fj * at(i0 + 1, j0 + 1));
        const double exact = day.anomaly(Var::z, 3, basis_at(lon, lat));
        err2 += (interp - exact) * (interp - exact);
        var += exact * exact;
        mean += exact;
        ++n;
      }
    modes.step();
  }
  const double rms_err = std::sqrt(err2 / n), sd = std::sqrt(var / n - (mean / n) * (mean / n));
  EXPECT_LT(rms_err, 0.1 * sd);
}

}  // namespace
}  // namespace ds::synth
