// io/cf_axes.h's days of a source file's time axis, as fetch and preprocess read them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "io/calendar.h"
#include "io/cf_axes.h"
#include "io/netcdf_file.h"
#include "support/test_support.h"

using namespace ds;

namespace {

// A file whose time axis holds `stamps` as `type` in `units`, with bounds of the same type
// when `bounds` is not empty (one [start, end] pair per stamp).
std::string time_file(const test::TempDir& d, const std::string& name, nc_type type, const std::string& units,
                      const std::vector<double>& stamps, const std::vector<double>& bounds = {}) {
  const std::string path = d / name;
  NcFile nc = NcFile::create(path);
  const int t = nc.def_dim("time", stamps.size());
  const int tv = nc.def_var("time", type, {t});
  nc.put_att(tv, "units", units);
  int bv = -1;
  if (!bounds.empty()) {
    nc.put_att(tv, "bounds", "time_bnds");
    bv = nc.def_var("time_bnds", type, {t, nc.def_dim("bnds", 2)});
  }
  nc.end_define();
  nc.write(tv, stamps.data());  // netCDF-C converts to the variable's type, as a float file holds it
  if (bv >= 0) nc.write(bv, {0, 0}, {stamps.size(), 2}, bounds.data());
  nc.close();
  return path;
}

std::vector<int64_t> days_of(const std::string& path, size_t* moved_out = nullptr) {
  NcFile nc = NcFile::open(path);
  const int tv = nc.var_id("time");
  const TimeUnits tu = TimeUnits::parse(nc.att_text(tv, "units"), "", path);
  size_t moved = 0;
  auto days = cf_days(nc, tv, "time", tu, path + ": time", moved);
  if (moved_out) *moved_out = moved;
  return days;
}

}  // namespace

// Midnights in 32-bit float seconds since 1900 (as some tools write time) are up to 128 s off
// around 2000: float's spacing there is 256 s and a day is 337.5 spacings, so every second
// midnight rounds to 23:57:52 of the day before or 00:02:08. Floored, a quarter of the days fell
// on their predecessor ("time is not strictly ascending"). A float axis is read to its own
// precision: a stamp within one spacing below midnight is that midnight's day.
TEST(CfDays, FloatSecondsMidnightsAreTheirOwnDays) {
  test::TempDir d;
  const std::string units = "seconds since 1900-01-01 00:00:00";
  const int64_t first = days_from_date({2000, 1, 1}, Calendar::standard);
  const int64_t origin = days_from_date({1900, 1, 1}, Calendar::standard);
  std::vector<double> midnights, bounds;
  std::vector<int64_t> expected;
  for (int k = 0; k < 10; ++k) {
    midnights.push_back(86400.0 * static_cast<double>(first + k - origin));
    bounds.push_back(midnights.back());
    bounds.push_back(midnights.back() + 86400.0);
    expected.push_back(first + k);
  }
  // The file really holds the rounded values (the premise of this test).
  NcFile probe = NcFile::open(time_file(d, "probe.nc", NC_FLOAT, units, midnights));
  const std::vector<double> held = probe.read_coord("time");
  EXPECT_EQ(held[3] - midnights[3], -128.0);
  EXPECT_EQ(held[1] - midnights[1], 128.0);

  EXPECT_EQ(days_of(time_file(d, "float.nc", NC_FLOAT, units, midnights)), expected);
  // With float bounds the middle decides; the stamps' rounding moves no day.
  size_t moved = 99;
  EXPECT_EQ(days_of(time_file(d, "float_bounds.nc", NC_FLOAT, units, midnights, bounds), &moved), expected);
  EXPECT_EQ(moved, 0u);

  // The same rounded values held as doubles are what they say: 23:57:52 is the day before.
  std::vector<double> rounded(held.begin(), held.end());
  const auto as_double = days_of(time_file(d, "double.nc", NC_DOUBLE, units, rounded));
  EXPECT_EQ(as_double[3], first + 2);
  EXPECT_EQ(as_double[2], first + 2);
}

// Float days (the usual float time axis) are exact at midnight and noon: nothing moves, and a
// stamp an hour before midnight stays on its own day.
TEST(CfDays, FloatDaysKeepTheirDays) {
  test::TempDir d;
  const int64_t first = days_from_date({2000, 1, 1}, Calendar::standard);
  const int64_t origin = days_from_date({1900, 1, 1}, Calendar::standard);
  const double base = static_cast<double>(first - origin);
  const std::vector<double> stamps = {base, base + 1.5, base + 2 + 23.0 / 24};
  const std::vector<int64_t> expected = {first, first + 1, first + 2};
  EXPECT_EQ(days_of(time_file(d, "days.nc", NC_FLOAT, "days since 1900-01-01", stamps)), expected);
}
