// The synthetic files look on disk like ERA-Interim and EWEMBI: dimensions, coordinates, units,
// CF attributes, the daily proleptic Gregorian time axis, and atomic writing.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "io/calendar.h"
#include "io/error.h"
#include "synth/large_scale.h"
#include "synth_test_data.h"

namespace ds::synth {
namespace {

using test::small_dataset;

void expect_regular(const std::vector<double>& v, double step, const char* what) {
  ASSERT_GE(v.size(), 2u) << what;
  for (size_t i = 1; i < v.size(); ++i) EXPECT_NEAR(v[i] - v[i - 1], step, 1e-9) << what << " at " << i;
}

TEST(SynthFiles, PredictorAxesAreEraInterimLike) {
  const auto& d = small_dataset();
  const NcFile f = NcFile::open(d.files.predictors);
  const auto lat = f.read_coord("lat"), lon = f.read_coord("lon"), plev = f.read_coord("plev");
  // Multiples of 2 inside [36, 46] x [-100, -90], latitude north to south.
  expect_regular(lat, -2.0, "lat");
  expect_regular(lon, 2.0, "lon");
  EXPECT_EQ(lat.front(), 46);
  EXPECT_EQ(lat.back(), 36);
  EXPECT_EQ(lon.front(), -100);
  EXPECT_EQ(lon.back(), -90);
  EXPECT_EQ(plev, (std::vector<double>{1000, 850, 700, 500}));
  const int p = f.var_id("plev");
  EXPECT_EQ(f.att_text(p, "units"), "hPa");
  EXPECT_EQ(f.att_text(p, "positive"), "down");
  EXPECT_EQ(f.att_text(f.var_id("lat"), "units"), "degrees_north");
  EXPECT_EQ(f.att_text(f.var_id("lon"), "units"), "degrees_east");
}

TEST(SynthFiles, PredictorVariablesCarryCfAttributes) {
  const NcFile f = NcFile::open(small_dataset().files.predictors);
  const std::vector<std::vector<std::string>> expected{
      {"z", "geopotential", "m2 s-2"},
      {"hus", "specific_humidity", "kg kg-1"},
      {"ta", "air_temperature", "K"},
      {"ua", "eastward_wind", "m s-1"},
      {"va", "northward_wind", "m s-1"},
  };
  for (const auto& e : expected) {
    const int v = f.var_id(e[0]);
    EXPECT_EQ(f.var_dims(v), (std::vector<std::string>{"time", "plev", "lat", "lon"})) << e[0];
    EXPECT_EQ(f.att_text(v, "standard_name"), e[1]) << e[0];
    EXPECT_EQ(f.att_text(v, "units"), e[2]) << e[0];
    EXPECT_FALSE(f.att_text(v, "long_name").empty()) << e[0];
    nc_type type;
    nc_check(nc_inq_vartype(f.id(), v, &type), e[0]);
    EXPECT_EQ(type, NC_FLOAT) << e[0];
  }
  EXPECT_EQ(f.att_text(NC_GLOBAL, "Conventions"), "CF-1.7");
  EXPECT_EQ(f.att_text(NC_GLOBAL, "institution"), "downscale synthetic");
  for (const char* a : {"title", "source", "history"}) EXPECT_FALSE(f.att_text(NC_GLOBAL, a).empty()) << a;
}

TEST(SynthFiles, PrecipitationIsEwembiLike) {
  const auto& d = small_dataset();
  const NcFile f = NcFile::open(d.files.predictand);
  const auto lat = f.read_coord("lat"), lon = f.read_coord("lon");
  expect_regular(lat, -0.5, "lat");
  expect_regular(lon, 0.5, "lon");
  EXPECT_EQ(lat.front(), 45.75);
  EXPECT_EQ(lat.back(), 36.25);
  EXPECT_EQ(lon.front(), -99.75);
  EXPECT_EQ(lon.back(), -90.25);
  const int pr = f.var_id("pr");
  EXPECT_EQ(f.var_dims(pr), (std::vector<std::string>{"time", "lat", "lon"}));
  EXPECT_EQ(f.att_text(pr, "units"), "kg m-2 s-1");
  EXPECT_EQ(f.att_text(pr, "standard_name"), "precipitation_flux");
  EXPECT_EQ(static_cast<float>(f.att_double(pr, "_FillValue", 0)), 1e20f);
  nc_type type;
  size_t len;
  nc_check(nc_inq_att(f.id(), pr, "_FillValue", &type, &len), "_FillValue");
  EXPECT_EQ(type, NC_FLOAT);
  // Deflate + shuffle on the big variable.
  int shuffle = 0, deflate = 0, level = 0;
  nc_check(nc_inq_var_deflate(f.id(), pr, &shuffle, &deflate, &level), "pr");
  EXPECT_TRUE(shuffle);
  EXPECT_TRUE(deflate);
  EXPECT_EQ(level, 1);
  EXPECT_EQ(f.att_text(NC_GLOBAL, "Conventions"), "CF-1.7");
}

TEST(SynthFiles, TimeIsDailyAndContiguousWithLeapDay) {
  const auto& d = small_dataset();
  for (const auto& path : {d.files.predictors, d.files.predictand}) {
    const NcFile f = NcFile::open(path);
    const int t = f.var_id("time");
    EXPECT_EQ(f.att_text(t, "units"), "days since 1979-01-01 00:00:00");
    EXPECT_EQ(f.att_text(t, "calendar"), "standard");
    EXPECT_NO_THROW(check_calendar(f.att_text(t, "calendar"), path));
    const auto time = f.read_coord("time");
    ASSERT_EQ(time.size(), 365u + 366u) << path;
    expect_regular(time, 1.0, "time");
    const TimeUnits units = TimeUnits::parse(f.att_text(t, "units"), path);
    EXPECT_EQ(units.date_of(time.front()), (Date{2003, 1, 1}));
    EXPECT_EQ(units.date_of(time[365 + 31 + 28]), (Date{2004, 2, 29}));
    EXPECT_EQ(units.date_of(time.back()), (Date{2004, 12, 31}));
  }
}

TEST(SynthFiles, NoTemporaryFilesRemain) {
  const auto& d = small_dataset();
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(d.cfg.dir)) {
    ++files;
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  }
  EXPECT_EQ(files, 2);
}

TEST(SynthFiles, RejectsEmptyYearsAndEmptyRegions) {
  ds::test::TempDir dir;
  auto cfg = test::small_config(dir.path());
  cfg.years = {2005, 2004};
  EXPECT_THROW(write_synthetic_dataset(cfg), UsageError);
  cfg = test::small_config(dir.path());
  cfg.lon_min = -99.5;
  cfg.lon_max = -98.5;  // no even degree inside
  EXPECT_THROW(write_synthetic_dataset(cfg), UsageError);
  cfg = test::small_config(dir.path());
  cfg.lat_max = cfg.lat_min;
  EXPECT_THROW(write_synthetic_dataset(cfg), UsageError);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

// A region without width is named by the key the config writes (synth.lon: [10, 10]), not by
// lon_min and lon_max, which no config holds.
TEST(SynthFiles, AnEmptyRegionIsNamedAsTheConfigWritesIt) {
  ds::test::TempDir dir;
  auto message_of = [](const Config::Synth& cfg) -> std::string {
    try {
      write_synthetic_dataset(cfg);
    } catch (const UsageError& e) {
      return e.what();
    }
    ADD_FAILURE() << "no UsageError";
    return "";
  };
  auto cfg = test::small_config(dir.path());
  cfg.lon_min = cfg.lon_max = 10;
  EXPECT_EQ(message_of(cfg), "synth.lon: must be [min, max] with -180 <= min < max <= 180, got [10, 10]");
  cfg = test::small_config(dir.path());
  cfg.lat_min = 30.5, cfg.lat_max = 95;
  EXPECT_EQ(message_of(cfg), "synth.lat: must be [min, max] with -90 <= min < max <= 90, got [30.5, 95]");
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

}  // namespace
}  // namespace ds::synth
