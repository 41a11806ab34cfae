#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "io/cf_axes.h"
#include "io/netcdf_file.h"
#include "io/precipitation_file.h"
#include "io/error.h"
#include "io/predictand_file.h"
#include "support/test_support.h"

using namespace ds;

TEST(PredictandFile, TemperatureMeanAndSdRoundTripWithCalendarAndCfAttributes) {
  test::TempDir d;
  PredictandOutput o;
  o.variable = "tas";
  o.units = "degC";
  o.lon = {-9.75, -9.25, -8.75};
  o.lat = {36.25, 36.75};
  o.days = {11000, 11001, 11002};  // 360_day: days since 1970-01-01 of that calendar
  o.calendar = "360_day";
  for (size_t i = 0; i < 18; ++i) {
    o.mean.push_back(i % 6 == 0 ? NAN : -3.0f + i);
    o.sd.push_back(i % 6 == 0 ? NAN : 0.5f + 0.1f * i);
  }
  o.attributes["predictor_standardization"] = "own: 1986-2005";
  write_predictand(d / "tas.nc", o);

  NcFile f = NcFile::open(d / "tas.nc");
  EXPECT_EQ(f.att_text(f.var_id("tas"), "standard_name"), "air_temperature");
  EXPECT_EQ(f.att_text(f.var_id("tas"), "units"), "degC");
  EXPECT_EQ(f.att_text(f.var_id("tas_sd"), "units"), "degC");
  // The sd is a temperature difference (CF-1.11): converting it to K must not add 273.15.
  EXPECT_EQ(f.att_text(f.var_id("tas_sd"), "units_metadata"), "temperature: difference");
  EXPECT_EQ(f.att_text(f.var_id("tas"), "units_metadata"), "temperature: on_scale");
  EXPECT_EQ(f.att_text(NC_GLOBAL, "Conventions"), "CF-1.11");  // units_metadata's version
  EXPECT_EQ(f.att_text(f.var_id("time"), "calendar"), "360_day");
  EXPECT_EQ(f.att_text(f.var_id("time"), "units"), "days since 1970-01-01 00:00:00");
  EXPECT_EQ(f.att_text(NC_GLOBAL, "predictor_standardization"), "own: 1986-2005");
  // The boxes' edges, half way between centres and as wide at the border, and tas at 2 m.
  EXPECT_EQ(f.att_text(f.var_id("lat"), "bounds"), "lat_bnds");
  EXPECT_EQ(f.att_text(f.var_id("lon"), "bounds"), "lon_bnds");
  double lat_bnds[4], lon_bnds[6], height = 0;
  f.read(f.var_id("lat_bnds"), {0, 0}, {2, 2}, lat_bnds);
  f.read(f.var_id("lon_bnds"), {0, 0}, {3, 2}, lon_bnds);
  f.read(f.var_id("height"), {}, {}, &height);
  const double lat_want[] = {36.0, 36.5, 36.5, 37.0}, lon_want[] = {-10.0, -9.5, -9.5, -9.0, -9.0, -8.5};
  for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(lat_bnds[i], lat_want[i]) << i;
  for (int i = 0; i < 6; ++i) EXPECT_DOUBLE_EQ(lon_bnds[i], lon_want[i]) << i;
  EXPECT_DOUBLE_EQ(height, 2.0);
  EXPECT_EQ(f.att_text(f.var_id("height"), "units"), "m");
  EXPECT_EQ(f.att_text(f.var_id("tas"), "coordinates"), "height lat lon");

  const PredictandOutput r = read_predictand(d / "tas.nc", "tas");
  EXPECT_EQ(r.days, o.days);
  EXPECT_EQ(r.calendar, "360_day");
  EXPECT_EQ(r.units, "degC");
  ASSERT_EQ(r.mean.size(), o.mean.size());
  for (size_t i = 0; i < o.mean.size(); ++i) {
    EXPECT_EQ(std::isnan(r.mean[i]), std::isnan(o.mean[i]));
    if (std::isnan(o.mean[i])) continue;
    EXPECT_FLOAT_EQ(r.mean[i], o.mean[i]);
    EXPECT_FLOAT_EQ(r.sd[i], o.sd[i]);
  }
}

TEST(PredictandFile, MseModelWritesTheMeanOnly) {
  test::TempDir d;
  PredictandOutput o;
  o.variable = "tasmax";
  o.units = "K";
  o.lon = {0};
  o.lat = {40};
  o.days = {1};
  o.mean = {290.5f};
  write_predictand(d / "m.nc", o);
  NcFile f = NcFile::open(d / "m.nc");
  EXPECT_FALSE(f.has_var("tasmax_sd"));
  EXPECT_EQ(f.att_text(f.var_id("tasmax"), "cell_methods"), "time: maximum");
  EXPECT_TRUE(read_predictand(d / "m.nc", "tasmax").sd.empty());
}

TEST(PrecipitationFile, CarriesTheCalendarOfItsData) {
  test::TempDir d;
  PrecipitationOutput o;
  o.lon = {0};
  o.lat = {40};
  o.days = {58, 59};  // noleap: 28 February and 1 March 1970
  o.calendar = "noleap";
  o.pr = o.pr_expected = o.p_wet = o.gamma_shape = o.gamma_scale = {1.0f, 2.0f};
  write_precipitation(d / "p.nc", o);
  NcFile f = NcFile::open(d / "p.nc");
  EXPECT_EQ(f.att_text(f.var_id("time"), "calendar"), "noleap");
  const PrecipitationOutput r = read_precipitation(d / "p.nc");
  EXPECT_EQ(r.calendar, "noleap");
  EXPECT_EQ(r.days, o.days);
}

// The block writer predict uses: blocks of 2 + 1 days give the file of one write, every value
// and attribute; an incomplete file is not committed (the old one stays, no temporary is left);
// more days than the header holds, or a block without the sd it was defined with, are refused.
TEST(PredictandFile, BlocksOfDaysGiveTheFileOfOneWriteAndAnIncompleteFileIsNotCommitted) {
  test::TempDir d;
  PredictandOutput o;
  o.variable = "tas";
  o.units = "degC";
  o.lon = {-9.75, -9.25};
  o.lat = {36.25, 36.75};
  o.days = {11000, 11001, 11002};
  o.calendar = "noleap";
  for (size_t i = 0; i < 12; ++i) {
    o.mean.push_back(i % 4 == 1 ? NAN : 10.0f - 1.5f * i);
    o.sd.push_back(i % 4 == 1 ? NAN : 0.25f * (i + 1));
  }
  o.attributes["predictor_standardization"] = "training";
  write_predictand(d / "whole.nc", o);
  const size_t plane = 4;
  {
    PredictandWriter w(d / "blocks.nc", o, true);
    w.write(2, o.mean.data(), o.sd.data());
    EXPECT_EQ(w.days_written(), 2u);
    w.write(1, o.mean.data() + 2 * plane, o.sd.data() + 2 * plane);
    w.commit();
  }
  const PredictandOutput a = read_predictand(d / "whole.nc", "tas"), b = read_predictand(d / "blocks.nc", "tas");
  EXPECT_EQ(b.days, a.days);
  EXPECT_EQ(b.calendar, "noleap");
  EXPECT_EQ(b.attributes, a.attributes);
  ASSERT_EQ(b.mean.size(), a.mean.size());
  ASSERT_EQ(b.sd.size(), a.sd.size());
  for (size_t i = 0; i < a.mean.size(); ++i) {
    EXPECT_TRUE(b.mean[i] == a.mean[i] || (std::isnan(a.mean[i]) && std::isnan(b.mean[i]))) << i;
    EXPECT_TRUE(b.sd[i] == a.sd[i] || (std::isnan(a.sd[i]) && std::isnan(b.sd[i]))) << i;
  }

  // Two days of three, then commit: an Error naming the file and the count; blocks.nc unchanged.
  const auto before = std::filesystem::last_write_time(d / "blocks.nc");
  try {
    PredictandWriter w(d / "blocks.nc", o, true);
    w.write(2, o.mean.data(), o.sd.data());
    w.commit();
    ADD_FAILURE() << "an incomplete file was committed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blocks.nc: 2 of 3 days written"), std::string::npos) << e.what();
  }
  EXPECT_EQ(std::filesystem::last_write_time(d / "blocks.nc"), before);
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(d.path())) files += e.is_regular_file();
  EXPECT_EQ(files, 2u) << "a temporary file was left in " << d.path();

  PredictandWriter w(d / "more.nc", o, true);
  std::vector<float> four(4 * plane, 1.0f);
  EXPECT_THROW(w.write(4, four.data(), four.data()), Error);     // past the header's 3 days
  EXPECT_THROW(w.write(1, four.data(), nullptr), Error);         // defined with sd, given none
  PredictandWriter m(d / "mean_only.nc", o, false);
  EXPECT_THROW(m.write(1, four.data(), four.data()), Error);     // defined without sd, given one
}

// Box edges: midpoints, the border boxes as wide as their neighbours' gap, latitudes not past a
// pole, descending centres in their own order; one box has nothing to be sized by.
TEST(CfAxes, BoundsAreMidpointsClampedAtThePoles) {
  EXPECT_EQ(cf_bounds({10, 12, 16}, false), (std::vector<double>{9, 11, 11, 14, 14, 18}));
  EXPECT_EQ(cf_bounds({89, 89.5}, true), (std::vector<double>{88.75, 89.25, 89.25, 89.75}));
  EXPECT_EQ(cf_bounds({-89.5, -90}, true), (std::vector<double>{-89.25, -89.75, -89.75, -90}));
  EXPECT_EQ(cf_bounds({40, 38}, true), (std::vector<double>{41, 39, 39, 37}));
  EXPECT_THROW(cf_bounds({5}, false), Error);
}

// Temperatures are what udunits2 converts to K, however spelled; a list of spellings missed degK
// and °C, whose sds then lost units_metadata "temperature: difference".
TEST(CfAxes, TemperatureUnitsAreWhatConvertsToKelvin) {
  for (const char* t : {"K", "kelvin", "degC", "degK", "deg_C", "degree_Celsius", "Celsius", "\u00b0C", "degrees Celsius"})
    EXPECT_TRUE(is_temperature_unit(t)) << t;
  for (const char* other : {"", "1", "mm/day", "kg m-2 s-1", "K m-1", "K s-1", "degrees_north", "Pa", "what"})
    EXPECT_FALSE(is_temperature_unit(other)) << other;
}
