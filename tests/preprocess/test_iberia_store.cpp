// Preprocess on the real Iberia files of issue 11 (tests/data/iberia: NCEP predictors, E-OBS
// temperature on 19 x 29 boxes at 0.5 deg, DJF 1983-2002), read as they are, and on small files
// of other calendars.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "io/calendar.h"
#include "io/error.h"
#include "io/fetch_manifest.h"
#include "io/netcdf_file.h"
#include "io/training_store.h"
#include "preprocess/build_store.h"
#include "preprocess/fetched_field.h"
#include "preprocess/sample_dates.h"
#include "support/test_support.h"

using namespace ds;
namespace fs = std::filesystem;

namespace {

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A fetch folder whose files are links to the committed Iberia files (never rewritten).
struct IberiaRun {
  test::TempDir dir;
  Config cfg;
  IberiaRun() {
    const std::string data = test::source_dir() + "/tests/data/iberia/";
    fs::create_directories(dir / "fetch/predictors");
    fs::create_directories(dir / "fetch/predictand");
    FetchManifest m;
    for (const auto& [name, var, file] : {std::tuple<std::string, std::string, std::string>{"psl", "psl", "NCEP_Iberia_psl.nc"},
                                          {"ta@850", "ta", "NCEP_Iberia_ta850.nc"}}) {
      fs::create_symlink(data + file, dir / ("fetch/predictors/" + name + ".nc"));
      FetchedFile f;
      f.name = name, f.variable = var, f.file = "predictors/" + name + ".nc", f.source = file;
      m.predictors.push_back(f);
    }
    fs::create_symlink(data + "EOBS_Iberia_tas.nc", dir / "fetch/predictand/tas.nc");
    m.predictand.name = "tas", m.predictand.variable = "tg", m.predictand.file = "predictand/tas.nc";
    m.predictand.source = "EOBS_Iberia_tas.nc";
    m.write(dir / "fetch/manifest.json");
    cfg.file = dir / "cfg.yaml";
    std::ofstream(cfg.file) << "run: {dir: x}\n";
    cfg.preprocess.predictor_grid = {-10, 4, 35, 45, 2};  // 8 x 6 (lon x lat)
    cfg.preprocess.train_years = {1983, 1994};
    cfg.preprocess.validation_years = {1995, 1997};
    cfg.preprocess.test_years = {1998, 2002};
    cfg.fetch.season = {12, 1, 2};
  }
};

}  // namespace

// E-OBS 19 x 29 under a 6 x 8 predictor grid: the demo model outputs 21 x 29, the observations
// sit in rows 1..19, padding rows continue the 0.5 deg step; tas keeps its units and values.
TEST(IberiaStore, TemperatureOnTheObservationGridPaddedToTheModelOutput) {
  IberiaRun run;
  const auto s = build_store(run.cfg, run.dir / "fetch", run.dir / "store.h5");
  StoreReader store(run.dir / "store.h5");
  const auto& m = store.meta();
  EXPECT_EQ(m.predictand, "tas");
  EXPECT_EQ(m.predictand_units, "Celsius");
  EXPECT_EQ(m.calendar, "standard");
  EXPECT_FALSE(m.is_precipitation());
  ASSERT_EQ(m.Hy(), 21);
  ASSERT_EQ(m.Wy(), 29);
  EXPECT_EQ(m.obs_row0, 1);
  EXPECT_EQ(m.obs_col0, 0);
  EXPECT_EQ(m.obs_rows, 19);
  EXPECT_EQ(m.obs_cols, 29);
  EXPECT_DOUBLE_EQ(m.predictand_lat.front(), 34.75);
  EXPECT_DOUBLE_EQ(m.predictand_lat.back(), 44.75);
  EXPECT_DOUBLE_EQ(m.obs_lat.front(), 35.25);
  EXPECT_DOUBLE_EQ(m.predictand_lon.front(), -9.75);
  for (int i = 0; i < 29; ++i) EXPECT_EQ(m.mask[i], 0) << i;            // padding row 0
  for (int i = 0; i < 29; ++i) EXPECT_EQ(m.mask[20 * 29 + i], 0) << i;  // padding row 20
  size_t land = 0;
  for (auto v : m.mask) land += v;
  EXPECT_GT(land, 200u);  // Iberia is mostly land
  EXPECT_LT(land, 19u * 29u);
  EXPECT_NEAR(s.land_share, double(land) / (19 * 29), 1e-12);
  EXPECT_FALSE(s.precipitation);

  // Target = observation (degC) on modelled boxes, NaN elsewhere; compared with the file itself.
  const FetchedField eobs(test::source_dir() + "/tests/data/iberia/EOBS_Iberia_tas.nc", "tg");
  const auto test_days = store.read_time("test");
  std::vector<float> y(21 * 29), obs(21 * 29), raw(19 * 29);
  store.read_y("test", 0, 1, y.data());
  store.read_obs("test", 0, 1, obs.data());
  const size_t t0 = size_t(std::lower_bound(eobs.days().begin(), eobs.days().end(), test_days[0]) - eobs.days().begin());
  eobs.read({t0}, raw.data());
  for (int j = 0; j < 21; ++j)
    for (int i = 0; i < 29; ++i) {
      const size_t k = size_t(j) * 29 + i;
      if (!m.mask[k]) {
        EXPECT_TRUE(std::isnan(y[k]) && std::isnan(obs[k])) << j << "," << i;
        continue;
      }
      const float want = raw[size_t(j - 1) * 29 + i];
      if (std::isnan(want)) EXPECT_TRUE(std::isnan(y[k]));
      else EXPECT_FLOAT_EQ(y[k], want) << j << "," << i;
      EXPECT_TRUE(std::isnan(y[k]) ? std::isnan(obs[k]) : obs[k] == y[k]);
    }

  // Season-years: DJF 1998 is Dec 1997 to Feb 1998, so Dec 1997 is the test split's first day.
  EXPECT_EQ(to_string(civil_from_days(test_days.front())), "1997-12-01");
  EXPECT_EQ(to_string(civil_from_days(test_days.back())), "2002-02-28");
  EXPECT_EQ(to_string(civil_from_days(store.read_time("validation").back())), "1997-02-28");
  EXPECT_EQ(to_string(civil_from_days(store.read_time("train").front())), "1982-12-01");
  EXPECT_EQ(s.train + s.validation + s.test, 1805u);
  EXPECT_TRUE(has(s.splits, "season-years")) << s.splits;
}

// DeepESD takes any grid: when the observations fit the convolutional models' grid it gets that
// padded grid too, so one store serves both kinds of model; when they do not, the observation
// grid itself, unpadded.
TEST(IberiaStore, DeepEsdSharesThePaddedGridOrTakesTheObservationGrid) {
  {
    IberiaRun run;
    run.cfg.model.name = "deepesd";
    build_store(run.cfg, run.dir / "fetch", run.dir / "store.h5");
    const StoreReader reader(run.dir / "store.h5");
    const auto& m = reader.meta();
    EXPECT_EQ(m.Hy(), 21);
    EXPECT_EQ(m.Wy(), 29);
    EXPECT_EQ(m.obs_row0, 1);
    EXPECT_EQ(m.obs_rows, 19);
  }
  IberiaRun run;
  run.cfg.model.name = "deepesd";
  run.cfg.preprocess.predictor_grid = {-10, 2, 35, 45, 2};  // 7 x 6: the conv grid 21 x 25 is too small
  build_store(run.cfg, run.dir / "fetch", run.dir / "store.h5");
  const StoreReader reader(run.dir / "store.h5");
  const auto& m = reader.meta();
  EXPECT_EQ(m.Hy(), 19);
  EXPECT_EQ(m.Wy(), 29);
  EXPECT_EQ(m.obs_row0, 0);
  EXPECT_EQ(m.obs_rows, 19);
}

// A predictor grid too small for the observation grid: exit 2 with the grid that fits.
TEST(IberiaStore, TooSmallPredictorGridNamesTheOneThatFits) {
  IberiaRun run;
  run.cfg.preprocess.predictor_grid = {-10, 2, 35, 45, 2};  // 7 x 6: outputs 21 x 25 < 19 x 29
  try {
    build_store(run.cfg, run.dir / "fetch", run.dir / "store.h5");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_TRUE(has(e.what(), "smallest predictor grid that fits it is 6 x 8")) << e.what();
  }
  EXPECT_FALSE(fs::exists(run.dir / "store.h5"));
}

TEST(IberiaStore, PredictorsOnlyManifestIsRefused) {
  IberiaRun run;
  auto m = FetchManifest::read(run.dir / "fetch/manifest.json");
  m.predictand = FetchedFile{};
  m.write(run.dir / "fetch/manifest.json");
  try {
    build_store(run.cfg, run.dir / "fetch", run.dir / "store.h5");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "no predictand")) << e.what();
    EXPECT_TRUE(has(e.what(), "preprocess needs")) << e.what();
  }
}

namespace {

// A file as fetch writes it (time, lat, lon), days since 1970-01-01 in `calendar`.
void write_fetched(const std::string& path, const std::string& var, const std::string& units, const std::vector<double>& lat,
                   const std::vector<double>& lon, const std::vector<double>& days, const std::string& calendar,
                   std::function<bool(size_t, size_t)> missing = nullptr) {
  NcFile f = NcFile::create(path);
  const int dt = f.def_dim("time", 0), dy = f.def_dim("lat", lat.size()), dx = f.def_dim("lon", lon.size());
  const int vt = f.def_var("time", NC_DOUBLE, {dt}), vy = f.def_var("lat", NC_DOUBLE, {dy}), vx = f.def_var("lon", NC_DOUBLE, {dx});
  f.put_att(vt, "units", "days since 1970-01-01");
  f.put_att(vt, "calendar", calendar);
  const int vv = f.def_var(var, NC_FLOAT, {dt, dy, dx});
  f.put_att(vv, "units", units);
  f.put_att(vv, "_FillValue", 1e20, NC_FLOAT);
  f.end_define();
  f.write(vy, lat.data());
  f.write(vx, lon.data());
  std::vector<float> plane(lat.size() * lon.size());
  for (size_t t = 0; t < days.size(); ++t) {
    f.write(vt, {t}, {1}, &days[t]);
    for (size_t k = 0; k < plane.size(); ++k)
      plane[k] = missing && missing(t, k) ? 1e20f : float(280 + std::sin(0.3 * double(t) + double(k)));
    f.write(vv, {t, 0, 0}, {1, lat.size(), lon.size()}, plane.data());
  }
}

struct CalendarRun {
  test::TempDir dir;
  Config cfg;
  CalendarRun(const std::string& predictor_calendar, const std::string& predictand_calendar,
              std::function<bool(size_t, size_t)> missing = nullptr) {
    fs::create_directories(dir / "fetch");
    const Calendar c = parse_calendar(predictor_calendar, "test");
    std::vector<double> days;
    for (int64_t d = days_from_date({2000, 1, 1}, c); d < days_from_date({2002, 1, 1}, c); ++d) days.push_back(double(d));
    write_fetched(dir / "fetch/z@500.nc", "z", "m2 s-2", {30, 32, 34}, {-110, -108, -106, -104}, days, predictor_calendar);
    const Calendar p = parse_calendar(predictand_calendar, "test");
    std::vector<double> pdays;
    for (int64_t d = days_from_date({2000, 1, 1}, p); d < days_from_date({2002, 1, 1}, p); ++d) pdays.push_back(double(d));
    std::vector<double> lat, lon;
    for (double la = 30; la <= 34; la += 0.5) lat.push_back(la);
    for (double lo = -110; lo <= -104; lo += 0.5) lon.push_back(lo);
    write_fetched(dir / "fetch/tas.nc", "tas", "K", lat, lon, pdays, predictand_calendar, missing);
    FetchManifest m;
    FetchedFile z;
    z.name = "z@500", z.variable = "z", z.file = "z@500.nc";
    m.predictors.push_back(z);
    m.predictand.name = "tas", m.predictand.variable = "tas", m.predictand.file = "tas.nc";
    m.write(dir / "fetch/manifest.json");
    cfg.file = dir / "cfg.yaml";
    std::ofstream(cfg.file) << "run: {dir: x}\n";
    cfg.preprocess.predictor_grid = {-110, -104, 30, 34, 2};
    cfg.preprocess.train_years = {2000, 2000};
    cfg.preprocess.test_years = {2001, 2001};
  }
};

}  // namespace

TEST(CalendarStore, NoleapFilesMakeANoleapStore) {
  CalendarRun run("noleap", "365_day");
  const auto s = build_store(run.cfg, run.dir / "fetch", run.dir / "store.h5");
  EXPECT_EQ(s.train, 365u);  // no 29 February in 2000
  EXPECT_EQ(s.test, 365u);
  StoreReader store(run.dir / "store.h5");
  EXPECT_EQ(store.meta().calendar, "noleap");
  EXPECT_EQ(store.meta().predictand_units, "K");
  const auto t = store.read_time("train");
  EXPECT_EQ(date_from_days(t[59], Calendar::noleap), (Date{2000, 3, 1}));  // 28 Feb is followed by 1 Mar
}

TEST(CalendarStore, StandardAndProlepticGregorianMix) {
  CalendarRun run("proleptic_gregorian", "standard");
  EXPECT_EQ(build_store(run.cfg, run.dir / "fetch", run.dir / "store.h5").train, 366u);
}

TEST(CalendarStore, CalendarsThatCountDaysDifferentlyAreAnError) {
  CalendarRun run("360_day", "standard");
  try {
    build_store(run.cfg, run.dir / "fetch", run.dir / "store.h5");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "z@500.nc has calendar 360_day")) << e.what();
    EXPECT_TRUE(has(e.what(), "tas.nc has calendar standard")) << e.what();
  }
  EXPECT_FALSE(fs::exists(run.dir / "store.h5"));
}

// Season-years follow fetch's rule for seasons across the new year, [11, 12, 1, 2, 3] included.
TEST(SampleDates, SeasonYearsAcrossTheNewYear) {
  Config cfg;
  cfg.preprocess.validation_years = {1997, 1997};
  cfg.preprocess.test_years = {1998, 2002};
  cfg.fetch.season = {12, 1, 2};
  SplitYears s = SplitYears::from(cfg, Calendar::standard);
  EXPECT_TRUE(s.season_years());
  EXPECT_EQ(s.split_of(days_from_civil({1997, 12, 1})), 2);  // DJF 1998: test, not validation
  EXPECT_EQ(s.split_of(days_from_civil({1997, 2, 28})), 1);
  EXPECT_EQ(s.split_of(days_from_civil({1996, 12, 31})), 1);
  EXPECT_TRUE(has(s.describe(), "DJF 2000 is Dec 1999 to Feb 2000") || has(s.describe(), "DJF")) << s.describe();
  cfg.fetch.season = {11, 12, 1, 2, 3};
  s = SplitYears::from(cfg, Calendar::standard);
  EXPECT_EQ(s.year_of(days_from_civil({1997, 11, 5})), 1998);
  EXPECT_EQ(s.year_of(days_from_civil({1998, 3, 5})), 1998);
  cfg.fetch.season = {6, 7, 8};  // ascending: calendar years
  s = SplitYears::from(cfg, Calendar::standard);
  EXPECT_FALSE(s.season_years());
  EXPECT_EQ(s.year_of(days_from_civil({1997, 12, 1})), 1997);
  EXPECT_FALSE(has(s.describe(), "season"));
}

// A box observed on at least min_valid_fraction of the training days is modelled and its missing
// days are NaN targets; one observed less often is not modelled at all.
TEST(CalendarStore, MinValidFractionDecidesTheMaskAndMissingDaysAreNaN) {
  // Training year 2000 (366 days): box 0 misses every 5th day (80% observed), box 1 misses days
  // 10..19 (97% observed), box 2 is missing in the test year only.
  CalendarRun run("standard", "standard", [](size_t t, size_t k) {
    return (k == 0 && t % 5 == 0) || (k == 1 && t >= 10 && t < 20) || (k == 2 && t >= 366 && t < 370);
  });
  build_store(run.cfg, run.dir / "fetch", run.dir / "a.h5");
  StoreReader a(run.dir / "a.h5");
  EXPECT_EQ(a.meta().mask[0], 0);  // 80% < 90%
  EXPECT_EQ(a.meta().mask[1], 1);
  EXPECT_EQ(a.meta().mask[2], 1);  // the mask looks at training days only
  const size_t np = size_t(a.meta().Hy()) * a.meta().Wy();
  std::vector<float> y(366 * np), obs(366 * np);
  a.read_y("train", 0, 366, y.data());
  a.read_obs("train", 0, 366, obs.data());
  EXPECT_TRUE(std::isnan(y[10 * np + 1]) && std::isnan(obs[10 * np + 1]));  // modelled box, missing day
  EXPECT_TRUE(std::isfinite(y[20 * np + 1]));
  EXPECT_TRUE(std::isnan(y[1 * np + 0]) && std::isnan(obs[1 * np + 0]));    // box not modelled
  std::vector<float> yt(np);
  a.read_y("test", 0, 1, yt.data());
  EXPECT_TRUE(std::isnan(yt[2]));
  run.cfg.preprocess.min_valid_fraction = 0.75;
  build_store(run.cfg, run.dir / "fetch", run.dir / "b.h5");
  EXPECT_EQ(StoreReader(run.dir / "b.h5").meta().mask[0], 1);
  run.cfg.preprocess.min_valid_fraction = 1.0;
  build_store(run.cfg, run.dir / "fetch", run.dir / "c.h5");
  EXPECT_EQ(StoreReader(run.dir / "c.h5").meta().mask[1], 0);
}

// preprocess.min_valid_fraction is validated; predictand_grid is optional.
TEST(PreprocessConfig, MinValidFractionAndOptionalPredictandGrid) {
  test::TempDir d;
  std::ofstream(d / "a.yaml") << "run: {dir: x}\npreprocess:\n  predictor_grid: {lon: [-10, 4], lat: [35, 45], step: 2}\n";
  const Config a = load_config(d / "a.yaml");
  EXPECT_FALSE(a.preprocess.has_predictand_grid);
  EXPECT_DOUBLE_EQ(a.preprocess.min_valid_fraction, 0.9);
  const Config b = load_config(d / "a.yaml", {"preprocess.min_valid_fraction=0.5",
                                               "preprocess.predictand_grid={lon: [-9.75, 4.25], lat: [35.25, 44.25], step: 0.5}"});
  EXPECT_TRUE(b.preprocess.has_predictand_grid);
  EXPECT_DOUBLE_EQ(b.preprocess.min_valid_fraction, 0.5);
  EXPECT_THROW(load_config(d / "a.yaml", {"preprocess.min_valid_fraction=1.5"}), UsageError);
  EXPECT_THROW(load_config(d / "a.yaml", {"preprocess.min_valid_fraction=-0.1"}), UsageError);
}
