// New predictors (a GCM run) for `predict`: regridding from a grid that only partly covers the
// model's edge cells, and standardization against the predictors' own climatology.
#include <gtest/gtest.h>
#include <netcdf.h>

#include <cmath>
#include <filesystem>
#include <numeric>
#include <functional>

#include "io/calendar.h"
#include "io/error.h"
#include "io/fetch_manifest.h"
#include "io/netcdf_file.h"
#include "preprocess/fetched_field.h"
#include "preprocess/grid.h"
#include "preprocess/new_predictors.h"
#include "preprocess/standardize.h"
#include "support/test_support.h"

using namespace ds;
namespace fs = std::filesystem;

namespace {

// The CNRM-CM5 grid of tests/data/iberia and the 2-degree predictor grid of the Iberia case.
Grid cmip5_grid() {
  std::vector<double> lon, lat{34.3187713623047, 35.7195320129395, 37.1202926635742, 38.5210571289062,
                               39.921817779541,  41.3225746154785, 42.7233352661133, 44.1240921020508};
  for (int i = 0; i < 11; ++i) lon.push_back(-9.84375 + 1.40625 * i);
  return Grid::from_coords(lon, lat, "cmip5");
}
Grid iberia_grid() { return Grid::from_spec(GridSpec{-10, 4, 35, 45, 2.0}); }


// A fetched field as fetch writes it: (time, lat, lon), days since 1970-01-01, standard calendar.
void write_fetched(const std::string& path, const std::string& var, const Grid& g, const std::vector<int64_t>& days,
                   const std::function<float(size_t t, size_t k)>& value, const std::string& calendar = "standard") {
  fs::create_directories(fs::path(path).parent_path());
  NcFile nc = NcFile::create(path);
  const int dt = nc.def_dim("time", 0), dy = nc.def_dim("lat", g.lat.size()), dx = nc.def_dim("lon", g.lon.size());
  const int vt = nc.def_var("time", NC_DOUBLE, {dt});
  nc.put_att(vt, "units", "days since 1970-01-01");
  nc.put_att(vt, "calendar", calendar);
  const int vy = nc.def_var("lat", NC_DOUBLE, {dy}), vx = nc.def_var("lon", NC_DOUBLE, {dx});
  const int vv = nc.def_var(var, NC_FLOAT, {dt, dy, dx});
  nc.put_att(vv, "units", "Pa");
  nc.put_att(vv, "_FillValue", 1e20, NC_FLOAT);
  nc.end_define();
  nc.write(vy, g.lat.data());
  nc.write(vx, g.lon.data());
  std::vector<double> t(days.begin(), days.end());
  std::vector<float> v(days.size() * g.size());
  for (size_t i = 0; i < days.size(); ++i)
    for (size_t k = 0; k < g.size(); ++k) v[i * g.size() + k] = value(i, k);
  nc.write(vt, {0}, {days.size()}, t.data());
  nc.write(vv, {0, 0, 0}, {days.size(), g.lat.size(), g.lon.size()}, v.data());
  nc.close();
}

// A predictors-only fetch folder (predictand empty) with one surface field `psl`.
void write_fetch_dir(const std::string& dir, const Grid& g, const std::vector<int64_t>& days,
                     const std::function<float(size_t, size_t)>& value, const std::vector<int>& season = {},
                     const std::string& calendar = "standard") {
  write_fetched(dir + "/predictors/psl.nc", "psl", g, days, value, calendar);
  FetchManifest m;
  m.season = season;
  FetchedFile f;
  f.name = "psl";
  f.variable = "psl";
  f.file = "predictors/psl.nc";
  f.units = "Pa";
  f.ntime = days.size(), f.nlat = g.lat.size(), f.nlon = g.lon.size();
  m.predictors.push_back(f);
  m.write(dir + "/manifest.json");
}

StoreMeta meta_on(const Grid& g, const std::string& regrid) {
  StoreMeta m;
  m.channels = {"psl"};
  m.predictor_lon = g.lon;
  m.predictor_lat = g.lat;
  m.regrid = "psl:" + regrid;
  m.mean.assign(g.size(), 0);
  m.sd.assign(g.size(), 1);
  return m;
}

}  // namespace

TEST(NewPredictors, NearestAndConservativeAcceptTheCmip5GridThatMissesTheWesternEdge) {
  const Grid src = cmip5_grid(), dst = iberia_grid();
  ASSERT_FALSE(covers_cells(src, dst));  // lon -10's cell [-11, -9] reaches beyond -10.55
  // A field linear in longitude: nearest picks the nearest centre; conservative averages the
  // covered part of each cell, so a constant stays exactly that constant.
  std::vector<float> constant(src.size(), 5.0f), lin(src.size());
  for (size_t k = 0; k < src.size(); ++k) lin[k] = static_cast<float>(src.lon[k % src.nlon()]);
  for (RegridMethod m : {RegridMethod::nearest, RegridMethod::conservative}) {
    const CoverageRegrid r = regrid_covering(m, src, dst, "psl");
    std::vector<float> out;
    apply_weights(r.weights, constant, 1, out, r.renormalize);
    ASSERT_EQ(out.size(), dst.size());
    for (float v : out) EXPECT_NEAR(v, 5.0f, 1e-5) << to_string(m);
    apply_weights(r.weights, lin, 1, out, r.renormalize);
    // A field linear in longitude: bilinear and conservative give the cell centre's longitude
    // within the source's cell (half of 1.41 degrees: 0.70); nearest the nearest source column's,
    // up to that half-cell too. 1 degree leaves room for the clipped edge cells and still fails a
    // grid read mirrored or shifted by a column.
    for (size_t k = 0; k < out.size(); ++k) EXPECT_NEAR(out[k], dst.lon[k % dst.nlon()], 1.0) << to_string(m) << " " << k;
  }
  // Nearest: the west column (lon -10) takes the first source column (-9.84).
  const CoverageRegrid nn = regrid_covering(RegridMethod::nearest, src, dst, "psl");
  std::vector<float> out;
  apply_weights(nn.weights, lin, 1, out, false);
  EXPECT_FLOAT_EQ(out[0], -9.84375f);
}

TEST(NewPredictors, BilinearOutsideTheSourceCentresNamesFieldAndPoints) {
  const std::string msg = test::message_of<InputError>([] { regrid_covering(RegridMethod::bilinear, cmip5_grid(), iberia_grid(), "CMIP5 psl"); });
  EXPECT_NE(msg.find("CMIP5 psl"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bilinear"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(lon -10, lat 35)"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("(lon -8, lat 37)"), std::string::npos) << msg;  // inside: not listed
}

TEST(NewPredictors, ConservativeRefusesCellsWithoutAnySourceData) {
  const Grid far = Grid::from_spec(GridSpec{-16, 4, 35, 45, 2.0});  // -16 and -14 lie west of every source cell
  const std::string msg = test::message_of<InputError>([&] { regrid_covering(RegridMethod::conservative, cmip5_grid(), far, "psl"); });
  EXPECT_NE(msg.find("(lon -16, lat 35)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(lon -14, lat 35)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(lon -12, lat 35)"), std::string::npos) << msg;  // [-13, -11] ends west of -10.55
  EXPECT_EQ(msg.find("(lon -10,"), std::string::npos) << msg;          // [-11, -9] is partly covered: fine
}

TEST(NewPredictors, OwnClimatologyOfAShiftedFieldEqualsTrainingStandardizationOfTheOriginal) {
  test::TempDir d;
  const Grid g = Grid::from_spec(GridSpec{-10, -4, 36, 40, 2.0});  // 4 x 3
  std::vector<int64_t> days;
  for (int64_t t = 10957; t < 10957 + 3 * 365; ++t) days.push_back(t);  // 2000-01-01 .. 2002-12-31
  auto f = [&](size_t t, size_t k) { return static_cast<float>(1000 + 10 * k + 7 * std::sin(0.1 * t + k)); };
  write_fetch_dir(d / "orig", g, days, f);
  write_fetch_dir(d / "gcm", g, days, [&](size_t t, size_t k) { return f(t, k) + 250.0f; });  // a warm model bias

  for (const std::string mode : {"grid_box", "field"}) {
    StoreMeta meta = meta_on(g, "nearest");
    meta.standardize = mode;
    // The training statistics of the original over 2001-2002, as preprocess computes them.
    RunningStats rs(g.size());
    std::vector<float> block;
    for (size_t i = 366; i < days.size(); ++i)
      for (size_t k = 0; k < g.size(); ++k) block.push_back(f(i, k));
    rs.add(block.data(), block.size() / g.size());
    const Standardization st = rs.finish(mode == "field", "test");
    meta.mean = st.mean;
    meta.sd = st.sd;

    const NewPredictors training(d / "orig", meta);
    const NewPredictors own(d / "gcm", meta, {"own", YearRange{2001, 2002}});
    const NewPredictors gcm_training(d / "gcm", meta);
    EXPECT_EQ(own.calendar(), "standard");
    EXPECT_NE(own.standardization().find("own"), std::string::npos);
    EXPECT_NE(own.standardization().find("2001-2002"), std::string::npos);
    ASSERT_EQ(own.days(), training.days());
    const size_t n = days.size();
    std::vector<float> a(n * g.size()), b(n * g.size()), c(n * g.size());
    training.read(0, n, a.data());
    own.read(0, n, b.data());
    gcm_training.read(0, n, c.data());
    double worst = 0, shifted = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, double(std::abs(a[i] - b[i]))), shifted += c[i] - a[i];
    EXPECT_LT(worst, 2e-4) << mode;
    EXPECT_GT(shifted / a.size(), 1.0) << mode << ": the training statistics keep the model's warm bias";
  }
}

TEST(NewPredictors, OwnClimatologyNeedsTheReferenceYearsInTheData) {
  test::TempDir d;
  const Grid g = Grid::from_spec(GridSpec{-10, -4, 36, 40, 2.0});
  std::vector<int64_t> days;
  for (int64_t t = 10957; t < 10957 + 366; ++t) days.push_back(t);  // 2000 only
  write_fetch_dir(d / "gcm", g, days, [](size_t t, size_t k) { return float(t + k); });
  const StoreMeta meta = meta_on(g, "bilinear");
  const std::string msg = test::message_of<InputError>([&] { NewPredictors p(d / "gcm", meta, {"own", YearRange{1999, 2001}}); });
  EXPECT_NE(msg.find("1999, 2001"), std::string::npos) << msg;
  EXPECT_NE(msg.find("reference_years"), std::string::npos) << msg;
  // Missing years as runs, and the years the predictors do hold (a GCM scenario standardized
  // against the historical period's years would otherwise list twenty of them).
  const std::string runs = test::message_of<InputError>([&] { NewPredictors p(d / "gcm", meta, {"own", YearRange{1990, 2003}}); });
  EXPECT_NE(runs.find("hold no day of 1990..1999, 2001..2003 (they hold days of 2000; "), std::string::npos) << runs;
  // Reference years reaching past the run say so; none of them in it points at a scenario's
  // historical run (predict.reference_predictors), which would not help the first.
  EXPECT_NE(runs.find("; set predict.reference_years to years they hold)"), std::string::npos) << runs;
  EXPECT_EQ(runs.find("reference_predictors"), std::string::npos) << runs;
  // A gap inside the predictors' years (a year the server lacked) shows in what they hold.
  std::vector<int64_t> gap;
  for (int64_t t = 10957 - 365; t < 10957 + 366 + 365; ++t)  // 1999..2001 ...
    if (t < 10957 || t >= 10957 + 366) gap.push_back(t);      // ... without 2000
  write_fetch_dir(d / "gap", g, gap, [](size_t t, size_t k) { return float(t + k); });
  const std::string inside = test::message_of<InputError>([&] { NewPredictors p(d / "gap", meta, {"own", YearRange{1999, 2001}}); });
  EXPECT_NE(inside.find("hold no day of 2000 (they hold days of 1999, 2001; set predict.reference_years to years they "
                        "hold)"),
            std::string::npos)
      << inside;
  const std::string scenario = test::message_of<InputError>([&] { NewPredictors p(d / "gcm", meta, {"own", YearRange{1980, 1990}}); });
  EXPECT_NE(scenario.find("a scenario takes its climatology from its model's historical run: "
                          "predict.reference_predictors)"),
            std::string::npos)
      << scenario;
}

// Winters fetched as DJF count in season-years for predict.reference_years, as for the store's
// splits: [2001, 2001] is December 2000 to February 2001, not January, February and December
// 2001. The value is 10 in December 2000 only, with a day-to-day wiggle, so the two readings
// give different means.
TEST(NewPredictors, ReferenceYearsOfAWinterRunAreSeasonYears) {
  test::TempDir d;
  const Grid g = Grid::from_spec(GridSpec{-10, -4, 36, 40, 2.0});
  std::vector<int64_t> days;
  for (const auto& [y, m] : std::vector<std::pair<int, int>>{{2000, 12}, {2001, 1}, {2001, 2}, {2001, 12}, {2002, 1}, {2002, 2}})
    for (int day = 1; day <= days_in_month(y, m, Calendar::standard); ++day)
      days.push_back(days_from_date({y, m, day}, Calendar::standard));
  auto value = [&](size_t t) {
    const Date dt = date_from_days(days[t], Calendar::standard);
    return (dt.year == 2000 ? 10.0f : 0.0f) + static_cast<float>(t % 3);
  };
  write_fetch_dir(d / "gcm", g, days, [&](size_t t, size_t) { return value(t); }, {12, 1, 2});
  const StoreMeta meta = meta_on(g, "nearest");
  const NewPredictors own(d / "gcm", meta, {"own", YearRange{2001, 2001}});
  // The expected statistics: the 90 days of season-year 2001, standard deviation with n - 1.
  std::vector<double> ref;
  for (size_t t = 0; t < 90; ++t) ref.push_back(value(t));
  const double mean = std::accumulate(ref.begin(), ref.end(), 0.0) / ref.size();
  double ss = 0;
  for (double v : ref) ss += (v - mean) * (v - mean);
  const double sd = std::sqrt(ss / (ref.size() - 1));
  std::vector<float> x(days.size() * g.size());
  own.read(0, days.size(), x.data());
  for (size_t t : {size_t(0), size_t(40), size_t(100)})
    EXPECT_NEAR(x[t * g.size()], (value(t) - mean) / sd, 1e-4) << t;  // float statistics: 1e-4 of a z
  EXPECT_NE(own.standardization().find("season-years: DJF 2001 is Dec 2000 to Feb 2001"), std::string::npos)
      << own.standardization();
  // A year the run does not hold is named as a season-year.
  const std::string msg = test::message_of<InputError>([&] { NewPredictors p(d / "gcm", meta, {"own", YearRange{2003, 2003}}); });
  EXPECT_NE(msg.find("they hold days of 2001..2002 as season-years"), std::string::npos) << msg;
}

// A scenario and its reference (the historical run) published as standard and
// proleptic_gregorian: the same dates after 1582, so the pair is accepted; 360_day is not.
TEST(NewPredictors, ReferencePredictorsOnTheOtherGregorianCalendarAreAccepted) {
  test::TempDir d;
  const Grid g = Grid::from_spec(GridSpec{-10, -4, 36, 40, 2.0});
  std::vector<int64_t> days;
  for (int64_t t = 10957; t < 10957 + 366; ++t) days.push_back(t);  // 2000
  auto wiggle = [](size_t t, size_t k) { return static_cast<float>(1000 + k + (t % 5)); };
  write_fetch_dir(d / "scenario", g, days, wiggle);
  write_fetch_dir(d / "historical", g, days, wiggle, {}, "proleptic_gregorian");
  write_fetch_dir(d / "other", g, days, wiggle, {}, "360_day");
  const StoreMeta meta = meta_on(g, "nearest");
  const NewPredictors p(d / "scenario", meta, {"own", YearRange{2000, 2000}, d / "historical"});
  EXPECT_NE(p.standardization().find("historical"), std::string::npos);
  const std::string msg = test::message_of<InputError>([&] { NewPredictors q(d / "scenario", meta, {"own", YearRange{2000, 2000}, d / "other"}); });
  EXPECT_NE(msg.find("360_day calendar"), std::string::npos) << msg;
}

// A gap in new predictors is filled by predict.fill, the store's policy when it is unset; the
// message for a gap names predict.fill, the key that fills it, not preprocess.fill.
TEST(NewPredictors, AGapIsFilledByPredictFillAndTheMessageNamesIt) {
  test::TempDir d;
  const Grid g = Grid::from_spec(GridSpec{-10, -4, 36, 40, 2.0});
  std::vector<int64_t> days;
  for (int64_t t = 10957; t < 10957 + 30; ++t) days.push_back(t);
  write_fetch_dir(d / "gcm", g, days, [](size_t t, size_t k) { return t == 10 && k == 2 ? 1e20f : float(t); });
  const StoreMeta meta = meta_on(g, "nearest");  // preprocess.fill: none
  std::vector<float> x(days.size() * g.size());
  const NewPredictors strict(d / "gcm", meta);
  const std::string msg = test::message_of<InputError>([&] { strict.read(0, days.size(), x.data()); });
  EXPECT_NE(msg.find("missing value on 2000-01-11"), std::string::npos) << msg;
  EXPECT_NE(msg.find("set predict.fill to nearest_time or climatology"), std::string::npos) << msg;
  NewPredictorOptions opt;
  opt.fill = "nearest_time";
  const NewPredictors filled(d / "gcm", meta, opt);
  filled.read(0, days.size(), x.data());
  EXPECT_FLOAT_EQ(x[10 * g.size() + 2], 9.0f);  // the earlier neighbour on a tie; mean 0, sd 1
}

// A standardized value beyond kImpossibleStandardized (1000 training sd) is refused naming file,
// day and point: the network's ReLUs would turn its overflow into a plausible field (exit 0 with
// wrong data before). 999 sd is read: far (predict warns from 10) but possible in principle.
TEST(NewPredictors, AValueNoWeatherReachesIsRefusedNamingDayAndPoint) {
  test::TempDir d;
  const Grid g = Grid::from_spec(GridSpec{-10, -4, 36, 40, 2.0});  // 4 x 3
  std::vector<int64_t> days;
  for (int64_t t = 10957; t < 10957 + 30; ++t) days.push_back(t);
  write_fetch_dir(d / "far", g, days, [](size_t t, size_t k) { return t == 10 && k == 2 ? 999.0f : float(t); });
  write_fetch_dir(d / "absurd", g, days, [](size_t t, size_t k) { return t == 20 && k == 5 ? -3e38f : float(t); });
  const StoreMeta meta = meta_on(g, "nearest");  // mean 0, sd 1: the values are their own z
  std::vector<float> x(days.size() * g.size());
  NewPredictors(d / "far", meta).read(0, days.size(), x.data());
  EXPECT_FLOAT_EQ(x[10 * g.size() + 2], 999.0f);
  const std::string msg = test::message_of<InputError>([&] { NewPredictors(d / "absurd", meta).read(0, days.size(), x.data()); });
  EXPECT_NE(msg.find("predictors/psl.nc: psl on 2000-01-21 at lat 38, lon -8 is -3e+38 standard deviations from the "
                     "mean it is standardized with"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("more than 1000"), std::string::npos) << msg;
}

// A field's map against the training mean's. Real files: NCEP/NCAR 2 m temperature over Iberia
// trains (its land-sea map stands 1.5 daily sd strong on the 2-degree grid), CNRM-CM5's
// historical and RCP8.5 runs of it pass with their own maps (0.97); the NCEP field flipped
// north-south (0.31) or east-west (0.36) is refused, unless fewer than kPatternDays were read. A
// map too weak to judge (a third of a daily sd, as weak as the Iberia predictors' own maps)
// passes flipped: its correlation says nothing there.
TEST(NewPredictors, AMeanMapAgainstTheTrainingMapIsRefusedWhereTheMapIsStrong) {
  test::TempDir d;
  const std::string data = test::source_dir() + "/tests/data/iberia";
  const auto fetch_dir = [&](const char* dir, const std::string& file) {
    const fs::path at = d / dir;
    fs::create_directories(at / "predictors");
    fs::create_symlink(data + "/" + file, at / "predictors/tas.nc");
    FetchManifest m;
    FetchedFile f;
    f.name = "tas", f.variable = "tas", f.file = "predictors/tas.nc";
    m.predictors.push_back(f);
    m.write(at / "manifest.json");
  };
  fetch_dir("ncep", "NCEP_Iberia_tas.nc");
  fetch_dir("hist", "CMIP5_Iberia_tas.nc");
  fetch_dir("rcp85", "CMIP5_Iberia_tas.rcp85.nc");
  const Grid g = iberia_grid();
  const size_t hw = g.size();
  StoreMeta meta = meta_on(g, "conservative");
  meta.channels = {"tas"};
  meta.regrid = "tas:conservative";
  meta.channel_units = {"Celsius"};
  NewPredictorOptions opt;
  opt.convert_units = [](const std::string& from, const std::string& to, const std::string&) {
    EXPECT_EQ(from + ">" + to, "K>Celsius");
    return std::pair<double, double>{1, -273.15};
  };
  // The training statistics: NCEP's own per-box mean and sd (mean 0, sd 1 reads the values as they are).
  const NewPredictors ncep(d / "ncep", meta, opt);
  const size_t n = ncep.days().size();
  std::vector<float> raw(n * hw);
  ncep.read(0, n, raw.data());
  StoreMeta trained = meta;
  for (size_t k = 0; k < hw; ++k) {
    double s = 0, s2 = 0;
    for (size_t t = 0; t < n; ++t) s += raw[t * hw + k], s2 += double(raw[t * hw + k]) * raw[t * hw + k];
    trained.mean[k] = float(s / double(n));
    trained.sd[k] = float(std::sqrt((s2 - s * s / double(n)) / double(n - 1)));
  }
  std::vector<float> x;
  for (const char* run : {"hist", "rcp85"}) {
    const NewPredictors gcm(d / run, trained, opt);
    x.resize(gcm.days().size() * hw);
    gcm.read(0, gcm.days().size(), x.data());
    const NewPredictors::PatternMatch m = gcm.pattern_match(0);
    EXPECT_TRUE(m.judged()) << run << " strength " << m.strength;
    EXPECT_NEAR(m.strength, 1.5, 0.2) << run;  // a property of NCEP's map alone: the same for both runs
    EXPECT_GT(m.correlation, NewPredictors::kPatternWarned) << run;  // 0.97 both
    EXPECT_EQ(m.boxes, hw) << run;
    EXPECT_NO_THROW(gcm.check_departures()) << run;
  }
  // The NCEP values rewritten flipped: the same domain mean and sd, the map turned over.
  StoreMeta as_psl = trained;  // write_fetch_dir's channel
  as_psl.channels = {"psl"};
  as_psl.regrid = "psl:nearest";
  as_psl.channel_units.clear();
  const size_t W = g.lon.size(), H = g.lat.size();
  std::vector<int64_t> days(ncep.days().begin(), ncep.days().end());
  write_fetch_dir(d / "flip_ns", g, days, [&](size_t t, size_t k) { return raw[t * hw + (H - 1 - k / W) * W + k % W]; });
  const NewPredictors ns(d / "flip_ns", as_psl);
  ns.read(0, n, x.data());
  EXPECT_LT(ns.pattern_match(0).correlation, NewPredictors::kPatternRefused);
  std::string msg = test::message_of<InputError>([&] { ns.check_departures(); });
  EXPECT_NE(msg.find("predictor psl's mean map over the 1805 days read correlates"), std::string::npos) << msg;
  EXPECT_NE(msg.find("a field flipped north-south or east-west"), std::string::npos) << msg;
  // A season or less read (a storm case): the mean is the weather's map, not judged.
  const NewPredictors ns_short(d / "flip_ns", as_psl);
  ns_short.read(0, NewPredictors::kPatternDays - 1, x.data());
  EXPECT_FALSE(ns_short.pattern_match(0).judged());
  EXPECT_NO_THROW(ns_short.check_departures());
  write_fetch_dir(d / "flip_ew", g, days, [&](size_t t, size_t k) { return raw[t * hw + (k / W) * W + (W - 1 - k % W)]; });
  const NewPredictors ew(d / "flip_ew", as_psl);
  ew.read(0, n, x.data());
  EXPECT_LT(ew.pattern_match(0).correlation, NewPredictors::kPatternRefused);  // 0.36
  EXPECT_THROW(ew.check_departures(), InputError);
  // The same field unflipped passes: the refusal is the map's, not the file's.
  write_fetch_dir(d / "same", g, days, [&](size_t t, size_t k) { return raw[t * hw + k]; });
  const NewPredictors same(d / "same", as_psl);
  same.read(0, n, x.data());
  EXPECT_NEAR(same.pattern_match(0).correlation, 1.0, 1e-6);
  EXPECT_NO_THROW(same.check_departures());
  // A weak map (training means varying by a third of a daily sd) flipped: not judged.
  StoreMeta weak = as_psl;
  for (size_t k = 0; k < hw; ++k) weak.mean[k] = float(k / W) * 0.2f, weak.sd[k] = 1;
  write_fetch_dir(d / "weak", g, days, [&](size_t t, size_t k) { return float(H - 1 - k / W) * 0.2f + float(t % 3); });
  const NewPredictors flat(d / "weak", weak);
  flat.read(0, n, x.data());
  const NewPredictors::PatternMatch wm = flat.pattern_match(0);
  EXPECT_NEAR(wm.correlation, -1.0, 1e-6);
  EXPECT_LT(wm.strength, NewPredictors::kPatternStrength);
  EXPECT_FALSE(wm.judged());
  EXPECT_NO_THROW(flat.check_departures());
}

TEST(NewPredictors, RealCmip5FilesOnTheIberiaGridWithOwnClimatology) {
  // The CNRM-CM5 historical run as it is, on the 2-degree predictor grid (nearest and
  // conservative), standardized against its own 1983-2002 climatology: mean 0, sd 1 per box.
  test::TempDir d;
  const std::string data = test::source_dir() + "/tests/data/iberia";
  fs::create_directories(d / "gcm/predictors");
  fs::create_symlink(data + "/CMIP5_Iberia_psl.nc", d / "gcm/predictors/psl.nc");
  fs::create_symlink(data + "/CMIP5_Iberia_ta850.nc", d / "gcm/predictors/ta@850.nc");
  FetchManifest m;
  for (auto [name, var] : {std::pair<std::string, std::string>{"psl", "psl"}, {"ta@850", "ta"}}) {
    FetchedFile f;
    f.name = name, f.variable = var, f.file = "predictors/" + name + ".nc";
    m.predictors.push_back(f);
  }
  m.write(d / "gcm/manifest.json");
  const Grid g = iberia_grid();
  StoreMeta meta = meta_on(g, "nearest");
  meta.channels = {"psl", "ta@850"};
  meta.regrid = "psl:nearest,ta@850:conservative";
  meta.mean.assign(2 * g.size(), 0);
  meta.sd.assign(2 * g.size(), 1);
  const NewPredictors p(d / "gcm", meta, {"own", YearRange{1983, 2002}});
  const size_t n = p.days().size(), hw = g.size();
  EXPECT_EQ(n, 1805u);
  std::vector<float> x(n * 2 * hw);
  p.read(0, n, x.data());
  for (size_t c = 0; c < 2; ++c)
    for (size_t k = 0; k < hw; ++k) {
      double s = 0, s2 = 0;
      size_t cnt = 0;
      for (size_t t = 0; t < n; ++t) {
        const double v = x[(t * 2 + c) * hw + k];
        ASSERT_TRUE(std::isfinite(v));
        if (p.days()[t] >= 4748) s += v, s2 += v * v, ++cnt;  // 1983-01-01 on: the reference years
      }
      EXPECT_NEAR(s / cnt, 0.0, 1e-3);
      EXPECT_NEAR(std::sqrt((s2 - s * s / cnt) / (cnt - 1)), 1.0, 1e-3);
    }
  // Bilinear cannot reach the western column from these centres.
  meta.regrid = "psl:bilinear,ta@850:bilinear";
  const std::string msg = test::message_of<InputError>([&] { NewPredictors q(d / "gcm", meta); });
  EXPECT_NE(msg.find("psl"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(lon -10, lat"), std::string::npos) << msg;
}

// A channel in other units than the store records for it is converted by the caller's
// convert_units (the pipeline's is udunits2), and refused without one, naming file and units.
TEST(NewPredictors, OtherUnitsThanTheTrainingDataAreConvertedOrRefused) {
  test::TempDir d;
  const Grid g = Grid::from_spec(GridSpec{-10, -4, 36, 40, 2.0});
  std::vector<int64_t> days;
  for (int64_t t = 10957; t < 10957 + 30; ++t) days.push_back(t);
  write_fetch_dir(d / "gcm", g, days, [](size_t t, size_t k) { return static_cast<float>(100000 + 10 * t + k); });
  StoreMeta meta = meta_on(g, "nearest");
  meta.mean.assign(g.size(), 101000);
  meta.sd.assign(g.size(), 100);
  meta.channel_units = {"hPa"};  // trained on psl in hPa; these are in Pa
  EXPECT_NE(test::message_of<InputError>([&] { NewPredictors p(d / "gcm", meta); }).find("psl.nc: variable 'psl' (predictor psl): in 'Pa', the training data in 'hPa'"),
            std::string::npos);
  NewPredictorOptions opt;
  opt.convert_units = [](const std::string& from, const std::string& to, const std::string&) {
    EXPECT_EQ(from, "Pa");
    EXPECT_EQ(to, "hPa");
    return std::pair<double, double>{0.01, 0};
  };
  meta.mean.assign(g.size(), 1010);
  meta.sd.assign(g.size(), 1);
  const NewPredictors p(d / "gcm", meta, opt);
  std::vector<float> x(days.size() * g.size());
  p.read(0, days.size(), x.data());
  for (size_t t = 0; t < days.size(); ++t)  // (1000 + t/10 + k/100 hPa - 1010) / 1
    EXPECT_NEAR(x[t * g.size()], (100000.0 + 10.0 * t) / 100 - 1010, 1e-3) << t;
  // Units the converter refuses: its InputError reaches the caller.
  opt.convert_units = [](const std::string&, const std::string&, const std::string& where) -> std::pair<double, double> {
    throw InputError(where + ": no conversion");
  };
  EXPECT_NE(test::message_of<InputError>([&] { NewPredictors q(d / "gcm", meta, opt); }).find("(predictor psl): no conversion"), std::string::npos);
}

// A fetched file changed after the fetch (a stretch of days cut out, another calendar written
// over) is named against the manifest's record of it; before, the days left were predicted and
// the calendar taken as the file said, exit 0.
TEST(NewPredictors, AFileChangedAfterTheFetchIsRefused) {
  test::TempDir d;
  const Grid g = Grid::from_spec(GridSpec{-10, -4, 36, 40, 2.0});
  std::vector<int64_t> days;
  for (int64_t t = 10957; t < 10957 + 60; ++t) days.push_back(t);
  auto wiggle = [](size_t t, size_t k) { return static_cast<float>(k + (t % 5)); };
  const StoreMeta meta = meta_on(g, "nearest");
  write_fetch_dir(d / "cut", g, days, wiggle);
  write_fetched(d / "cut/predictors/psl.nc", "psl", g, std::vector<int64_t>(days.begin(), days.begin() + 30), wiggle);
  std::string msg = test::message_of<InputError>([&] { NewPredictors p(d / "cut", meta); });
  EXPECT_NE(msg.find("psl.nc: variable 'psl': holds 30 days, not the 60 as " + (d / "cut/manifest.json") +
                     " records it: the file was changed after the fetch"),
            std::string::npos)
      << msg;
  write_fetch_dir(d / "relabelled", g, days, wiggle);
  FetchManifest m = FetchManifest::read(d / "relabelled/manifest.json");
  m.predictors[0].calendar = "standard";  // as fetch records it
  m.write(d / "relabelled/manifest.json");
  NewPredictors(d / "relabelled", meta);  // as fetched
  write_fetched(d / "relabelled/predictors/psl.nc", "psl", g, days, wiggle, "noleap");
  msg = test::message_of<InputError>([&] { NewPredictors p(d / "relabelled", meta); });
  EXPECT_NE(msg.find("its time calendar is noleap, not standard as"), std::string::npos) << msg;
  // A field fetch cut at a level carries level_hPa: one without it lost it to an edit.
  FetchedFile at_850 = m.predictors[0];
  at_850.level = 850;
  at_850.calendar = "";
  msg = test::message_of<InputError>(
      [&] { FetchedField(d / "relabelled/predictors/psl.nc", "psl").check_as_fetched(at_850, "manifest.json", {}); });
  EXPECT_NE(msg.find("it has no level_hPa attribute, though its level is 850 hPa as manifest.json records it"),
            std::string::npos)
      << msg;
}

// Daily means stamped at the end of their day (the next day's 00:00, as a CDO step may write
// them) are that day's: the day comes from the middle of the time bounds, as fetch reads its
// sources; before, each was paired with the next day's other predictors.
TEST(NewPredictors, EachDayIsTakenFromItsTimeBounds) {
  test::TempDir d;
  const Grid g = Grid::from_spec(GridSpec{-10, -4, 36, 40, 2.0});
  std::vector<int64_t> days;
  for (int64_t t = 10957; t < 10957 + 10; ++t) days.push_back(t);
  write_fetch_dir(d / "gcm", g, days, [](size_t t, size_t) { return float(t); });
  {  // the stamps moved to each day's end, with bounds saying which day they close
    int nc = -1, bnds = -1, time_dim = -1, tv = -1, tb = -1;
    ASSERT_EQ(nc_open((d / "gcm/predictors/psl.nc").c_str(), NC_WRITE, &nc), NC_NOERR);
    ASSERT_EQ(nc_redef(nc), NC_NOERR);
    ASSERT_EQ(nc_def_dim(nc, "bnds", 2, &bnds), NC_NOERR);
    ASSERT_EQ(nc_inq_dimid(nc, "time", &time_dim), NC_NOERR);
    const int dims[2] = {time_dim, bnds};
    ASSERT_EQ(nc_def_var(nc, "time_bnds", NC_DOUBLE, 2, dims, &tb), NC_NOERR);
    ASSERT_EQ(nc_inq_varid(nc, "time", &tv), NC_NOERR);
    ASSERT_EQ(nc_put_att_text(nc, tv, "bounds", 9, "time_bnds"), NC_NOERR);
    ASSERT_EQ(nc_enddef(nc), NC_NOERR);
    std::vector<double> stamp, b;
    for (int64_t day : days) stamp.push_back(double(day + 1)), b.push_back(double(day)), b.push_back(double(day + 1));
    ASSERT_EQ(nc_put_var_double(nc, tv, stamp.data()), NC_NOERR);
    ASSERT_EQ(nc_put_var_double(nc, tb, b.data()), NC_NOERR);
    ASSERT_EQ(nc_close(nc), NC_NOERR);
  }
  const NewPredictors p(d / "gcm", meta_on(g, "nearest"));
  EXPECT_EQ(p.days(), days);
}

// A scenario standardized with the climatology of other months of its reference run (a
// historical run fetched for summer, a winter scenario) took the seasonal cycle for the change.
TEST(NewPredictors, AReferenceRunOfOtherMonthsIsRefused) {
  test::TempDir d;
  const Grid g = Grid::from_spec(GridSpec{-10, -4, 36, 40, 2.0});
  auto month_days = [](int year, std::vector<int> months) {
    std::vector<int64_t> out;
    for (int m : months)
      for (int day = 1; day <= days_in_month(year, m, Calendar::standard); ++day)
        out.push_back(days_from_date({year, m, day}, Calendar::standard));
    return out;
  };
  auto wiggle = [](size_t t, size_t k) { return static_cast<float>(k + (t % 5)); };
  write_fetch_dir(d / "scenario", g, month_days(2090, {1, 2}), wiggle, {1, 2});
  write_fetch_dir(d / "winter", g, month_days(2000, {1, 2}), wiggle, {1, 2});
  write_fetch_dir(d / "summer", g, month_days(2000, {6, 7}), wiggle, {6, 7});
  const StoreMeta meta = meta_on(g, "nearest");
  NewPredictors(d / "scenario", meta, {"own", YearRange{2000, 2000}, d / "winter"});
  const std::string msg = test::message_of<InputError>(
      [&] { NewPredictors p(d / "scenario", meta, {"own", YearRange{2000, 2000}, d / "summer"}); });
  EXPECT_NE(msg.find("predict.reference_predictors hold months 6,7 (fetch.season 6,7) but " + (d / "scenario") +
                     " months 1,2 (fetch.season 1,2)"),
            std::string::npos)
      << msg;
}

// What predict refuses of the days it read before its output is renamed into place: a field
// averaging more than kImpossibleMean standard deviations out (a unit no plausible range
// caught), and one mostly filled (predict.fill: climatology over a field that is not there).
TEST(NewPredictors, AnImpossibleMeanOrAMostlyFilledFieldIsRefused) {
  test::TempDir d;
  const Grid g = Grid::from_spec(GridSpec{-10, -4, 36, 40, 2.0});
  std::vector<int64_t> days;
  for (int64_t t = 10957; t < 10957 + 30; ++t) days.push_back(t);
  const StoreMeta meta = meta_on(g, "nearest");  // mean 0, sd 1: the values are their own z
  std::vector<float> x(days.size() * g.size());
  write_fetch_dir(d / "near", g, days, [](size_t t, size_t) { return 49.0f + float(t % 2); });
  const NewPredictors near(d / "near", meta);
  near.read(0, days.size(), x.data());
  near.check_departures();  // 49.5 on average: far, not impossible
  write_fetch_dir(d / "unit", g, days, [](size_t t, size_t) { return -100.0f - float(t % 2); });
  const NewPredictors unit(d / "unit", meta);
  unit.read(0, days.size(), x.data());
  std::string msg = test::message_of<InputError>([&] { unit.check_departures(); });
  EXPECT_NE(msg.find("predictor psl averages -100.5 standard deviations from the mean it is standardized with over "
                     "the 30 days read (more than 50), its mean -100.5 against 0"),
            std::string::npos)
      << msg;
  // Far in sd but a few percent of the field's mean (z@500 over a tropical domain, whose daily sd
  // is small, in a warm scenario): a climate, warned of, not refused.
  StoreMeta tropical = meta;
  tropical.mean.assign(g.size(), 57000);
  tropical.sd.assign(g.size(), 30);
  write_fetch_dir(d / "warm", g, days, [](size_t t, size_t) { return 58800.0f + float(t % 3); });
  const NewPredictors warm(d / "warm", tropical);
  warm.read(0, days.size(), x.data());
  warm.check_departures();  // 60 sd, 3 % of the mean
  // The same value every day at every box, under the training statistics: no weather.
  write_fetch_dir(d / "constant", g, days, [](size_t, size_t k) { return 0.5f + float(k); });
  const NewPredictors constant(d / "constant", meta);
  constant.read(0, days.size(), x.data());
  msg = test::message_of<InputError>([&] { constant.check_departures(); });
  EXPECT_NE(msg.find("predictor psl is the same on each of the 30 days read at every grid box"), std::string::npos)
      << msg;
  write_fetch_dir(d / "gone", g, days, [](size_t t, size_t k) { return (t + k) % 5 < 3 ? 1e20f : 0.5f + float(t); });
  NewPredictorOptions opt;
  opt.fill = "climatology";
  const NewPredictors gone(d / "gone", meta, opt);
  gone.read(0, days.size(), x.data());
  msg = test::message_of<InputError>([&] { gone.check_departures(); });
  EXPECT_NE(msg.find("60.0 % of predictor psl's values on the predictor grid in the 30 days read are missing and take the training mean"),
            std::string::npos)
      << msg;
}

namespace {
// Adds to `path`'s variable `var` a missing_value attribute, or to its time a bounds variable of
// `width` days starting at each stamp's day.
void add_missing_value(const std::string& path, const char* var, float value) {
  int nc = -1, v = -1;
  ASSERT_EQ(nc_open(path.c_str(), NC_WRITE, &nc), NC_NOERR);
  ASSERT_EQ(nc_redef(nc), NC_NOERR);
  ASSERT_EQ(nc_inq_varid(nc, var, &v), NC_NOERR);
  ASSERT_EQ(nc_put_att_float(nc, v, "missing_value", NC_FLOAT, 1, &value), NC_NOERR);
  ASSERT_EQ(nc_close(nc), NC_NOERR);
}
void add_time_bounds(const std::string& path, double width) {
  int nc = -1, bnds = -1, time_dim = -1, tv = -1, tb = -1;
  size_t n = 0;
  ASSERT_EQ(nc_open(path.c_str(), NC_WRITE, &nc), NC_NOERR);
  ASSERT_EQ(nc_inq_dimid(nc, "time", &time_dim), NC_NOERR);
  ASSERT_EQ(nc_inq_dimlen(nc, time_dim, &n), NC_NOERR);
  ASSERT_EQ(nc_redef(nc), NC_NOERR);
  ASSERT_EQ(nc_def_dim(nc, "bnds", 2, &bnds), NC_NOERR);
  const int dims[2] = {time_dim, bnds};
  ASSERT_EQ(nc_def_var(nc, "time_bnds", NC_DOUBLE, 2, dims, &tb), NC_NOERR);
  ASSERT_EQ(nc_inq_varid(nc, "time", &tv), NC_NOERR);
  ASSERT_EQ(nc_put_att_text(nc, tv, "bounds", 9, "time_bnds"), NC_NOERR);
  ASSERT_EQ(nc_enddef(nc), NC_NOERR);
  std::vector<double> t(n), b;
  ASSERT_EQ(nc_get_var_double(nc, tv, t.data()), NC_NOERR);
  for (double x : t) b.push_back(std::floor(x)), b.push_back(std::floor(x) + width);
  ASSERT_EQ(nc_put_var_double(nc, tb, b.data()), NC_NOERR);
  ASSERT_EQ(nc_close(nc), NC_NOERR);
}
}  // namespace

// CF's missing_value marks a missing value as _FillValue does (CDO and NCO write it): read as data,
// -99 over the sea trained as a temperature and the sea was modelled.
TEST(FetchedField, MissingValueIsMissing) {
  test::TempDir d;
  const Grid g = Grid::from_spec(GridSpec{-10, -4, 36, 40, 2.0});
  write_fetched(d / "tas.nc", "tas", g, {10957, 10958}, [](size_t t, size_t k) { return k == 3 ? -99.0f : float(t + k); });
  add_missing_value(d / "tas.nc", "tas", -99.0f);
  FetchedField f(d / "tas.nc", "tas");
  std::vector<float> v(2 * g.size());
  f.read({0, 1}, v.data());
  EXPECT_TRUE(std::isnan(v[3]));
  EXPECT_TRUE(std::isnan(v[g.size() + 3]));
  EXPECT_EQ(v[4], 4.0f);
}

// What the manifest records of a file and its time axis, against the file: a relabelled unit, a
// day outside the months fetch cut (a time axis moved by a day), bounds wider than a day, and
// longitudes re-sorted across the seam are each refused, naming the file.
TEST(FetchedField, EditsThatMoveDaysOrRelabelValuesAreRefused) {
  test::TempDir d;
  const Grid g = Grid::from_spec(GridSpec{-10, -4, 36, 40, 2.0});
  std::vector<int64_t> days;  // January and February 2000
  for (int64_t t = 10957; t < 10957 + 60; ++t) days.push_back(t);
  auto wiggle = [](size_t t, size_t k) { return static_cast<float>(1000 + k + (t % 5)); };
  write_fetched(d / "psl.nc", "psl", g, days, wiggle);
  FetchedFile entry;
  entry.name = entry.variable = "psl";
  entry.units = "Pa";
  const FetchedField f(d / "psl.nc", "psl");
  f.check_as_fetched(entry, "manifest.json", {12, 1, 2});
  std::string msg = test::message_of<InputError>([&] { f.check_as_fetched(entry, "manifest.json", {1}); });
  EXPECT_NE(msg.find("it holds 2000-02-01, outside the months fetch cut (fetch.season) as manifest.json records it"),
            std::string::npos)
      << msg;
  // Two winters' January and February under a season of every month: a season edited in the
  // manifest (it would split the winters by calendar year). Under the months held it passes.
  std::vector<int64_t> winters = days;
  for (int64_t t = 11323; t < 11323 + 59; ++t) winters.push_back(t);  // January and February 2001
  write_fetched(d / "winters.nc", "psl", g, winters, wiggle);
  const FetchedField two(d / "winters.nc", "psl");
  two.check_as_fetched(entry, "manifest.json", {1, 2});
  msg = test::message_of<InputError>(
      [&] { two.check_as_fetched(entry, "manifest.json", {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}); });
  EXPECT_NE(msg.find("its 119 days from 2000-01-01 to 2001-02-28 hold no day of month 3, which manifest.json's "
                     "season has"),
            std::string::npos)
      << msg;
  entry.units = "hPa";
  msg = test::message_of<InputError>([&] { f.check_as_fetched(entry, "manifest.json", {}); });
  EXPECT_NE(msg.find("its units are 'Pa', not 'hPa' as manifest.json records it"), std::string::npos) << msg;

  write_fetched(d / "wide.nc", "psl", g, days, wiggle);
  add_time_bounds(d / "wide.nc", 3);
  msg = test::message_of<InputError>([&] { FetchedField w(d / "wide.nc", "psl"); });
  EXPECT_NE(msg.find("wide.nc: time: time step 0's bounds [10957, 10960] ('time_bnds') span more than a day"),
            std::string::npos)
      << msg;
  write_fetched(d / "daily.nc", "psl", g, days, wiggle);
  add_time_bounds(d / "daily.nc", 1);
  EXPECT_EQ(FetchedField(d / "daily.nc", "psl").days(), days);

  const Grid seam = Grid::from_coords({0.25, 0.75, 1.25, 358.75, 359.25}, {36, 38}, "seam");
  write_fetched(d / "seam.nc", "psl", seam, days, wiggle);
  msg = test::message_of<InputError>([&] { FetchedField s(d / "seam.nc", "psl"); });
  EXPECT_NE(msg.find("seam.nc: longitudes step 0.5 to 357.5 degrees: not one regular grid"), std::string::npos) << msg;
}
