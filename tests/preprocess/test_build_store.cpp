#include <gtest/gtest.h>
#include <netcdf.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

#include "io/calendar.h"
#include "io/dataset_definition.h"
#include "io/error.h"
#include "io/fetch_manifest.h"
#include "io/netcdf_file.h"
#include "io/training_store.h"
#include "preprocess/build_store.h"
#include "preprocess/fetch_request.h"
#include "preprocess/units.h"
#include "support/fetch_support.h"
#include "support/log_capture.h"
#include "support/test_support.h"

using namespace ds;

namespace {

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A tiny run: two predictors on a 2° grid (3 x 4 points), precipitation on 0.5° (9 x 13),
// three years (train 2000, validation 2001, test 2002).
struct TinyRun {
  test::TempDir dir;
  Config cfg;
  // with_nan: z misses lon index 1 on day 400 (2001-02-04); pr_without_december: pr is fetched
  // for January..November only, so it lacks the predictors' Decembers;
  // ta_units: the units the second predictor's file declares.
  // with_terms: the sources carry references and licences, in the cases their providers write.
  explicit TinyRun(bool with_nan = false, bool pr_without_december = false, const std::string& ta_units = "K",
                   bool with_terms = false) {
    test::SourceSpec z;
    for (double la = 34; la >= 30; la -= 2) z.lat.push_back(la);
    for (double lo = -110; lo <= -104; lo += 2) z.lon.push_back(lo);
    z.levels = {500};
    z.ndays = 366 + 365 + 365;
    z.value = [with_nan](int t, int, int j, int i) {
      if (with_nan && t == 400 && i == 1) return double(NAN);
      return 5000.0 + 10.0 * std::sin(t * 0.1 + i) + j;
    };
    if (with_terms)
      z.globals = {{"References", "https://z.example/cite"}, {"license", "CC-BY 4.0"}, {"history", "not kept"}};
    test::write_source(dir / "z.nc", z);
    test::SourceSpec ta = z;  // the same numbers as a temperature, so the units check passes
    ta.variable = "ta";
    ta.units = ta_units;
    test::write_source(dir / "ta.nc", ta);
    test::SourceSpec pr;
    pr.variable = "pr";
    pr.units = "kg m-2 s-1";
    for (double la = 33.75; la >= 29.75; la -= 0.5) pr.lat.push_back(la);
    for (double lo = -109.75; lo <= -103.75; lo += 0.5) pr.lon.push_back(lo);
    pr.ndays = z.ndays;
    pr.value = [](int t, int, int j, int i) { return i < 2 ? double(NAN) : ((t + i + j) % 3) * 2.0 / 86400; };
    if (with_terms) pr.globals = {{"references", "https://pr.example"}, {"LICENCE", "pr terms"}};
    test::write_source(dir / "pr.nc", pr);

    cfg.file = dir / "cfg.yaml";
    cfg.run.dir = dir / "run";
    cfg.preprocess.predictor_grid = {-110, -104, 30, 34, 2};
    cfg.preprocess.predictand_grid = {-109.75, -103.75, 29.75, 33.75, 0.5};
    cfg.preprocess.has_predictand_grid = true;
    cfg.preprocess.train_years = {2000, 2000};
    cfg.preprocess.validation_years = {2001, 2001};
    cfg.preprocess.test_years = {2002, 2002};
    // Fetched as `downscale fetch` does (support/fetch_support.h): days at 12:00 with bounds.
    const Config::Fetch request =
        test::fetch_request(-110, -103.5, 29.5, 34, {2000, 2002}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
    FetchManifest m;
    for (const std::string var : {"z", "ta"}) {
      const std::string name = var + "@500";
      test::fetch_local(dir / (var + ".nc"), {name, var, 500}, request, dir / ("run/fetch/" + name + ".nc"));
      m.predictors.push_back({name, var, name + ".nc", var + ".nc"});
    }
    Config::Fetch pr_request = request;
    if (pr_without_december) pr_request.season.pop_back();
    test::fetch_local(dir / "pr.nc", {"pr", "pr", 0}, pr_request, dir / "run/fetch/pr.nc");
    m.predictand = {"pr", "pr", "pr.nc", "pr.nc"};
    m.write(dir / "run/fetch/manifest.json");
    cfg.text = "run: {dir: x}\n";  // as load_config would have read it from cfg.file
  }
};

}  // namespace

TEST(BuildStore, WritesSplitsShapesStatisticsAndMask) {
  TinyRun run;
  const auto s = build_store(run.cfg, run.dir / "run/fetch", run.dir / "run/store.h5");
  EXPECT_EQ(s.train, 366u);
  EXPECT_EQ(s.validation, 365u);
  EXPECT_EQ(s.test, 365u);
  StoreReader store(run.dir / "run/store.h5");
  const auto& m = store.meta();
  EXPECT_EQ(m.channels, (std::vector<std::string>{"z@500", "ta@500"}));
  EXPECT_EQ(m.H(), 3);
  EXPECT_EQ(m.W(), 4);
  EXPECT_EQ(m.Hy(), 9);
  EXPECT_EQ(m.Wy(), 13);
  EXPECT_EQ(m.mask[0], 0);   // lon index 0, 1 are ocean
  EXPECT_EQ(m.mask[2], 1);
  EXPECT_NEAR(s.land_share, 11.0 / 13.0, 1e-12);
  // Standardized training predictors: mean 0 and sample sd 1 in every box and channel.
  std::vector<float> x(366 * 2 * 12);
  store.read_x("train", 0, 366, x.data());
  for (int c = 0; c < 2; ++c)
    for (int k = 0; k < 12; ++k) {
      double sum = 0, sum2 = 0;
      for (int t = 0; t < 366; ++t) sum += x[(t * 2 + c) * 12 + k];
      const double mean = sum / 366;
      for (int t = 0; t < 366; ++t) sum2 += std::pow(x[(t * 2 + c) * 12 + k] - mean, 2);
      EXPECT_NEAR(mean, 0.0, 1e-4);
      EXPECT_NEAR(std::sqrt(sum2 / 365), 1.0, 1e-4);
    }
  // Target: precipitation in mm/day (0, 2 or 4) minus 0.99 where wet.
  std::vector<float> y(9 * 13), pr(9 * 13);
  store.read_y("test", 0, 1, y.data());
  store.read_obs("test", 0, 1, pr.data());
  for (int k = 0; k < 9 * 13; ++k) {
    if (!m.mask[k]) {
      EXPECT_TRUE(std::isnan(pr[k]));
      EXPECT_TRUE(std::isnan(y[k]));  // not observed: NaN, skipped by the losses
      continue;
    }
    EXPECT_NEAR(y[k], pr[k] >= 0.99f ? pr[k] - 0.99f : 0.0f, 1e-5);
  }
  EXPECT_EQ(to_string(civil_from_days(store.read_time("test").front())), "2002-01-01");
  EXPECT_EQ(m.predictand, "pr");
  EXPECT_EQ(m.predictand_units, "mm/day");
  EXPECT_EQ(m.calendar, "standard");
  EXPECT_EQ(m.obs_rows, 9);
  EXPECT_EQ(m.obs_cols, 13);
  EXPECT_EQ(m.obs_row0, 0);
  EXPECT_EQ(m.obs_col0, 0);
}

// The sources' references and licences travel: fetch keeps them (named in lower case whatever the
// provider's case: E-OBS writes `References`), the store gathers them, one line per distinct
// text naming its fields, for predict to write into every prediction.
TEST(BuildStore, SourcesReferencesAndLicencesAreKeptByField) {
  TinyRun run(false, false, "K", /*with_terms=*/true);
  {
    const NcFile z = NcFile::open(run.dir / "run/fetch/z@500.nc");
    EXPECT_EQ(z.att_text(NC_GLOBAL, "original_references"), "https://z.example/cite");
    EXPECT_EQ(z.att_text(NC_GLOBAL, "original_license"), "CC-BY 4.0");
    EXPECT_FALSE(z.has_att(NC_GLOBAL, "original_history"));
    const NcFile pr = NcFile::open(run.dir / "run/fetch/pr.nc");
    EXPECT_EQ(pr.att_text(NC_GLOBAL, "original_licence"), "pr terms");
  }
  build_store(run.cfg, run.dir / "run/fetch", run.dir / "run/store.h5");
  const StoreReader store(run.dir / "run/store.h5");
  const StoreMeta& m = store.meta();
  EXPECT_EQ(m.source_references, "z@500, ta@500: https://z.example/cite\npr: https://pr.example");
  EXPECT_EQ(m.source_license, "z@500, ta@500: CC-BY 4.0\npr: pr terms");

  // Sources without any: nothing recorded (and nothing for predict to write).
  TinyRun plain;
  build_store(plain.cfg, plain.dir / "run/fetch", plain.dir / "run/store.h5");
  EXPECT_EQ(StoreReader(plain.dir / "run/store.h5").meta().source_references, "");
  EXPECT_EQ(StoreReader(plain.dir / "run/store.h5").meta().source_license, "");
}

// The store's config is the file as preprocess read it and the --set overrides that changed it,
// as comments after it (the text parses as the file alone).
TEST(BuildStore, ConfigAttributeHoldsTheFileAndItsOverrides) {
  TinyRun run;
  run.cfg.overrides["preprocess.fill"] = "preprocess.fill=none";
  build_store(run.cfg, run.dir / "run/fetch", run.dir / "run/store.h5");
  EXPECT_EQ(StoreReader(run.dir / "run/store.h5").meta().config_text,
            "run: {dir: x}\n# --set overrides given to downscale preprocess (they win over the file above):\n"
            "#   --set preprocess.fill=none\n");
}

// An observation grid larger than the convolutional models' output is a configuration error
// naming the smallest predictor grid that fits.
TEST(BuildStore, ObservationGridLargerThanTheOutputNamesThePredictorGridThatFits) {
  TinyRun run;
  run.cfg.preprocess.predictand_grid = {-110.25, -103.75, 29.75, 33.75, 0.5};  // 14 lon, the model gives 13
  try {
    build_store(run.cfg, run.dir / "run/fetch", run.dir / "run/store.h5");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_TRUE(has(e.what(), "the observation grid is 9 x 14")) << e.what();
    EXPECT_TRUE(has(e.what(), "to 9 x 13")) << e.what();
    EXPECT_TRUE(has(e.what(), "smallest predictor grid that fits it is 3 x 5")) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(run.dir / "run/store.h5"));
}

TEST(BuildStore, MissingPredictorValueNamesVariableAndDateAndLeavesNoStore) {
  TinyRun run(true);
  try {
    build_store(run.cfg, run.dir / "run/fetch", run.dir / "run/store.h5");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("z@500.nc: variable 'z': missing value on 2001-02-04"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(run.dir / "run/store.h5"));
}

namespace {
std::vector<float> read_x(const std::string& path, const std::string& split) {
  StoreReader store(path);
  const auto& m = store.meta();
  std::vector<float> x(store.count(split) * m.C() * m.H() * m.W());
  store.read_x(split, 0, store.count(split), x.data());
  return x;
}
}  // namespace

// Blocks are an implementation detail: 8-day blocks and one block per year give the same store.
TEST(BuildStore, BlockSizeDoesNotChangeTheStore) {
  TinyRun run;
  run.cfg.preprocess.block_days = 8;
  build_store(run.cfg, run.dir / "run/fetch", run.dir / "a.h5");
  run.cfg.preprocess.block_days = 1000;
  build_store(run.cfg, run.dir / "run/fetch", run.dir / "b.h5");
  for (const char* split : {"train", "validation", "test"}) EXPECT_EQ(read_x(run.dir / "a.h5", split), read_x(run.dir / "b.h5", split));
  EXPECT_EQ(StoreReader(run.dir / "a.h5").meta().sd, StoreReader(run.dir / "b.h5").meta().sd);
  EXPECT_EQ(StoreReader(run.dir / "a.h5").meta().mean, StoreReader(run.dir / "b.h5").meta().mean);
  EXPECT_EQ(StoreReader(run.dir / "a.h5").identity(), StoreReader(run.dir / "b.h5").identity());
}

TEST(BuildStore, PerFieldStandardizationAndRegridMethodsAreRecorded) {
  TinyRun run;
  run.cfg.preprocess.standardize = "field";
  run.cfg.preprocess.regrid = {{"default", "conservative"}, {"ta@500", "nearest"}, {"pr", "bilinear"}};
  build_store(run.cfg, run.dir / "run/fetch", run.dir / "s.h5");
  StoreReader store(run.dir / "s.h5");
  const auto& m = store.meta();
  EXPECT_EQ(m.standardize, "field");
  EXPECT_EQ(m.regrid, "z@500:conservative,ta@500:nearest,pr:bilinear");
  for (int c = 0; c < 2; ++c)
    for (int k = 1; k < 12; ++k) EXPECT_EQ(m.sd[c * 12 + k], m.sd[c * 12]);  // one sd per channel
  // Over all boxes and training days, each channel has mean 0 and sample sd 1.
  const auto x = read_x(run.dir / "s.h5", "train");
  for (int c = 0; c < 2; ++c) {
    double sum = 0, sum2 = 0;
    const size_t n = 366 * 12;
    for (int t = 0; t < 366; ++t)
      for (int k = 0; k < 12; ++k) sum += x[(t * 2 + c) * 12 + k];
    for (int t = 0; t < 366; ++t)
      for (int k = 0; k < 12; ++k) sum2 += std::pow(x[(t * 2 + c) * 12 + k] - sum / n, 2);
    EXPECT_NEAR(sum / n, 0.0, 1e-4);
    EXPECT_NEAR(std::sqrt(sum2 / (n - 1)), 1.0, 1e-4);
  }
}

TEST(BuildStore, FillPoliciesFillMissingPredictorValues) {
  TinyRun run(true);
  for (const char* policy : {"nearest_time", "climatology"}) {
    run.cfg.preprocess.fill = policy;
    const auto s = build_store(run.cfg, run.dir / "run/fetch", run.dir / "f.h5");
    EXPECT_EQ(s.filled, 6u) << policy;  // lon index 1 on one day, 3 latitudes, both files (ta copies z)
    const auto x = read_x(run.dir / "f.h5", "validation");
    for (float v : x) ASSERT_TRUE(std::isfinite(v)) << policy;
    // 2001-02-04 is validation row 34; box (lat 0, lon 1) of channel z@500.
    if (std::string(policy) == "climatology") EXPECT_EQ(x[(34 * 2 + 0) * 12 + 1], 0.0f);
    else EXPECT_NE(x[(34 * 2 + 0) * 12 + 1], 0.0f);
    std::filesystem::remove(run.dir / "f.h5");
  }
}

// A predictor missing over a whole split (the fuzz review of 2026-12-01 found a test split of
// climatology, 0 everywhere, counted and stored with exit 0): refused, naming the file, the split
// and its share, with no store written. (A field missing at a box on all training days, a
// land-only field's sea, is refused by the standardization before: every box needs 2 days.)
TEST(BuildStore, ASplitMostlyFilledIsRefused) {
  TinyRun run;
  run.cfg.preprocess.fill = "climatology";
  {
    int nc = -1, v = -1;
    ASSERT_EQ(nc_open((run.dir / "run/fetch/z@500.nc").c_str(), NC_WRITE, &nc), NC_NOERR);
    ASSERT_EQ(nc_inq_varid(nc, "z", &v), NC_NOERR);
    // 2002 (the test split): days 731.. of the file, all 3 x 4 boxes.
    const std::vector<float> nan(365 * 12, NAN);
    const size_t start[3] = {731, 0, 0}, count[3] = {365, 3, 4};
    ASSERT_EQ(nc_put_vara_float(nc, v, start, count, nan.data()), NC_NOERR);
    nc_close(nc);
  }
  try {
    build_store(run.cfg, run.dir / "run/fetch", run.dir / "run/store.h5");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(has(msg, "z@500.nc: variable 'z': 100.0 % of its values on the predictor grid in the test split "
                         "(2002-01-01 to 2002-12-31) are missing and take the training mean (preprocess.fill: "
                         "climatology)")) << msg;
    EXPECT_TRUE(has(msg, "preprocess.test_years")) << msg;
  }
  EXPECT_FALSE(std::filesystem::exists(run.dir / "run/store.h5"));
}

// A day whose observation is missing at every modelled box is kept (it is still a day of the
// split) and said with its date: it adds nothing to the loss or the scores.
TEST(BuildStore, DaysWithoutAnObservationAreSaid) {
  TinyRun run;
  {
    int nc = -1, v = -1;
    ASSERT_EQ(nc_open((run.dir / "run/fetch/pr.nc").c_str(), NC_WRITE, &nc), NC_NOERR);
    ASSERT_EQ(nc_inq_varid(nc, "pr", &v), NC_NOERR);
    size_t nlat = 0, nlon = 0;
    int dims[3];
    nc_inq_vardimid(nc, v, dims);
    nc_inq_dimlen(nc, dims[1], &nlat);
    nc_inq_dimlen(nc, dims[2], &nlon);
    const std::vector<float> nan(nlat * nlon, NAN);
    const size_t start[3] = {400, 0, 0}, count[3] = {1, nlat, nlon};  // 2001-02-04
    ASSERT_EQ(nc_put_vara_float(nc, v, start, count, nan.data()), NC_NOERR);
    nc_close(nc);
  }
  test::LogCapture log;
  const auto s = build_store(run.cfg, run.dir / "run/fetch", run.dir / "run/store.h5");
  EXPECT_EQ(s.validation, 365u);
  EXPECT_TRUE(has(log.str(), "1 day of the validation split has no observed value on any modelled box (2001-02-04)"))
      << log.str();
  EXPECT_FALSE(has(log.str(), "of the train split")) << log.str();
}

TEST(BuildStore, DroppedDatesAreCountedByKind) {
  TinyRun run(false, true);
  run.cfg.preprocess.validation_years = {0, -1};  // 2001 in no split
  const auto s = build_store(run.cfg, run.dir / "run/fetch", run.dir / "d.h5");
  EXPECT_EQ(s.not_common, 3u * 31u);         // the Decembers of 2000..2002, in the predictors only
  EXPECT_EQ(s.outside_splits, 365u - 31u);   // the rest of 2001
  EXPECT_EQ(s.dropped_dates, 3u * 31u + 365u - 31u);
  EXPECT_EQ(s.train, 366u - 31u);
  EXPECT_EQ(s.test, 365u - 31u);
  EXPECT_EQ(StoreReader(run.dir / "d.h5").count("validation"), 0u);
}

// Fetched files edited or copied by hand, each refused naming the file, with no store written
// (each exited 0 with wrong data: the fuzz review of 2026-12-01): another level's file under a
// field's name, CF-packed values read as counts, a time value that is no date, a validation split
// with no observation at all (scored as loss 0, the first epoch's model then the best).
TEST(BuildStore, FilesEditedByHandAreRefused) {
  const auto refusal = [](TinyRun& run, const std::function<void(int nc)>& edit, const std::string& file) {
    int nc = -1;
    EXPECT_EQ(nc_open((run.dir / ("run/fetch/" + file)).c_str(), NC_WRITE, &nc), NC_NOERR);
    nc_redef(nc);
    edit(nc);
    nc_close(nc);
    try {
      build_store(run.cfg, run.dir / "run/fetch", run.dir / "run/store.h5");
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      EXPECT_FALSE(std::filesystem::exists(run.dir / "run/store.h5"));
      return std::string(e.what());
    }
    return std::string();
  };
  const auto var = [](int nc, const char* name) {
    int v = -1;
    nc_inq_varid(nc, name, &v);
    return v;
  };
  {
    TinyRun run;
    const std::string msg = refusal(run, [&](int nc) {
      // Another level's file copied under this field's name: both of its level labels say 700.
      const int level = 700;
      nc_put_att_int(nc, var(nc, "ta"), "level_hPa", NC_INT, 1, &level);
      nc_enddef(nc);
      const double pa = 70000;
      nc_put_var_double(nc, var(nc, "plev"), &pa);
    }, "ta@500.nc");
    EXPECT_TRUE(has(msg, "ta@500.nc: variable 'ta': its level_hPa is 700, but it is the file of ta@500 (500 hPa)")) << msg;
  }
  {
    // The plev CDO and xarray read, edited to another level: the two labels disagree.
    TinyRun run;
    const std::string msg = refusal(run, [&](int nc) {
      nc_enddef(nc);
      const double pa = 70000;
      nc_put_var_double(nc, var(nc, "plev"), &pa);
    }, "ta@500.nc");
    EXPECT_TRUE(has(msg, "ta@500.nc: variable 'ta': its level_hPa is 500, but the file's plev is 70000 Pa")) << msg;
  }
  {
    TinyRun run;
    const std::string msg = refusal(run, [&](int nc) {
      const float scale = 10.0f;
      nc_put_att_float(nc, var(nc, "z"), "scale_factor", NC_FLOAT, 1, &scale);
    }, "z@500.nc");
    EXPECT_TRUE(has(msg, "z@500.nc: variable 'z': has a scale_factor attribute (CF packing)")) << msg;
  }
  {
    TinyRun run;
    const std::string msg = refusal(run, [&](int nc) {
      nc_enddef(nc);
      const size_t at = 10;
      const double nan = NAN;
      nc_put_var1_double(nc, var(nc, "time"), &at, &nan);
    }, "pr.nc");
    EXPECT_TRUE(has(msg, "pr.nc: time: time value nan is no date")) << msg;
  }
  {
    TinyRun run;  // every value of 2001, the validation year, missing (days 366..730)
    const std::string msg = refusal(run, [&](int nc) {
      nc_enddef(nc);
      const int v = var(nc, "pr");
      size_t lat = 0, lon = 0;
      int dims[3];
      nc_inq_vardimid(nc, v, dims);
      nc_inq_dimlen(nc, dims[1], &lat);
      nc_inq_dimlen(nc, dims[2], &lon);
      const std::vector<float> fill(365 * lat * lon, 1e20f);
      const size_t start[3] = {366, 0, 0}, count[3] = {365, lat, lon};
      nc_put_vara_float(nc, v, start, count, fill.data());
    }, "pr.nc");
    EXPECT_TRUE(has(msg, "no observed value on the modelled boxes in the validation split (2001-01-01 to 2001-12-31)"))
        << msg;
  }
}

TEST(BuildStore, WrongUnitsAreAnErrorAndLeaveNoStore) {
  TinyRun run(false, false, "degC");
  try {
    build_store(run.cfg, run.dir / "run/fetch", run.dir / "run/store.h5");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "ta@500.nc: variable 'ta': units 'degC' but ta@500 is expected in 'K'")) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(run.dir / "run/store.h5"));
  // Levels of a variable without built-in units must agree with each other.
  EXPECT_NO_THROW(check_predictor_units({{"w@500", "w", "Pa s-1", "a.nc"}, {"w@700", "w", "Pa s-1", "b.nc"}}, {}));
  try {
    check_predictor_units({{"w@500", "w", "Pa s-1", "a.nc"}, {"w@700", "w", "hPa h-1", "b.nc"}}, {});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "b.nc: units 'hPa h-1' differ from a.nc: 'Pa s-1'")) << e.what();
  }
}

TEST(BuildStore, UncoveredGridAndUnknownRegridKeyAreErrors) {
  TinyRun run;
  run.cfg.preprocess.predictor_grid = {-108, -102, 30, 34, 2};  // the files end at -104
  run.cfg.preprocess.predictand_grid = {-107.75, -101.75, 29.75, 33.75, 0.5};
  try {
    build_store(run.cfg, run.dir / "run/fetch", run.dir / "run/store.h5");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "z@500.nc: variable 'z': source grid 4 x 3 (lon -110..-104, lat 30..34) does not cover")) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(run.dir / "run/store.h5"));
  TinyRun run2;
  run2.cfg.preprocess.regrid = {{"zz@500", "nearest"}};
  try {
    build_store(run2.cfg, run2.dir / "run/fetch", run2.dir / "run/store.h5");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_TRUE(has(e.what(), "'preprocess.regrid.zz@500' names no field")) << e.what();
  }
}

// A predictor grid whose western cells reach past the source's (NCEP's T62 grid under a
// 2-degree grid does so): preprocess takes them from the part the source covers, as predict does
// for a GCM's grid (preprocess/regrid_covering.h). The cell at -111 ([-112, -110]) overlaps only the
// source cell at -110, so its column is that source column standardized: correlation 1 with it
// (the next column, half -110 and half -108, is not).
TEST(BuildStore, PartlyCoveredEdgeCellsComeFromTheCoveredPart) {
  TinyRun run;
  run.cfg.preprocess.predictor_grid = {-111, -105, 30, 34, 2};
  run.cfg.preprocess.regrid = {{"default", "conservative"}};  // bilinear needs the centres inside
  ASSERT_NO_THROW(build_store(run.cfg, run.dir / "run/fetch", run.dir / "run/store.h5"));
  StoreReader store(run.dir / "run/store.h5");
  const size_t n = store.count("train");
  const auto& m = store.meta();
  ASSERT_EQ(m.W(), 4);
  std::vector<float> x(n * 2 * 12);
  store.read_x("train", 0, n, x.data());
  const auto correlation = [&](int col) {  // z@500 at row 0 against the source's lon -110 (i = 0)
    double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
    for (size_t t = 0; t < n; ++t) {
      const double a = x[t * 24 + col], b = std::sin(t * 0.1);
      sa += a, sb += b, saa += a * a, sbb += b * b, sab += a * b;
    }
    const double cov = sab / n - sa / n * sb / n;
    return cov / std::sqrt((saa / n - sa / n * sa / n) * (sbb / n - sb / n * sb / n));
  };
  EXPECT_NEAR(correlation(0), 1.0, 1e-6);  // float standardized values: about 1e-7 apart
  EXPECT_LT(correlation(1), 0.99);
}

// A file that breaks fetch's contract (here: latitude descending) is refused by name.
TEST(BuildStore, NonMonotonicCoordinatesAreAnError) {
  TinyRun run;
  test::SourceSpec bad;
  bad.variable = "z";
  bad.lat = {34, 32, 30};
  bad.lon = {-110, -108, -106, -104};
  bad.ndays = 10;
  bad.value = [](int, int, int, int) { return 1.0; };
  test::write_source(run.dir / "run/fetch/z@500.nc", bad);
  try {
    build_store(run.cfg, run.dir / "run/fetch", run.dir / "run/store.h5");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "z@500.nc: variable 'z': latitude is not strictly ascending at index 1")) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(run.dir / "run/store.h5"));
}

// The box and years fetch was asked for travel in the manifest; preprocess names a config
// edited since (a warning: what was fetched is still preprocessed), and says nothing when the
// config matches or the manifest predates the record.
TEST(BuildStore, AConfigEditedSinceTheFetchIsNamed) {
  test::TempDir d;
  FetchManifest m;
  m.predictors.push_back({"z@500", "z", "z@500.nc", "z.nc"});
  m.request = FetchManifest::Request::box(-10, 4, 35.5, 44, 1979, 2008);
  m.write(d / "manifest.json");
  const FetchManifest back = FetchManifest::read(d / "manifest.json");
  ASSERT_TRUE(back.request.present);
  Config::Fetch asked;
  asked.lon_min = -10, asked.lon_max = 4, asked.lat_min = 35.5, asked.lat_max = 44, asked.years = {1979, 2008};
  EXPECT_EQ(fetch_request_change(back, asked), "");  // no box given (a config for the later stages): nothing to compare
  asked.lat_max = 45;
  EXPECT_EQ(fetch_request_change(back, asked), "");
  asked.lat_max = 44;
  asked.has_box = true;
  EXPECT_EQ(fetch_request_change(back, asked), "");
  asked.lat_max = 45;
  const std::string lat = fetch_request_change(back, asked);
  EXPECT_TRUE(has(lat, "manifest.json was fetched for lon [-10, 4], lat [35.5, 44], years [1979, 2008]")) << lat;
  EXPECT_TRUE(has(lat, "now asks for lon [-10, 4], lat [35.5, 45], years [1979, 2008]")) << lat;
  asked.lat_max = 44;
  asked.years.last = 2010;
  EXPECT_TRUE(has(fetch_request_change(back, asked), "years [1979, 2010]"));
  // A manifest written before the request was recorded: nothing to compare.
  std::ofstream(d / "old.json") << R"({"format": "downscale-fetch-1", "predictors": [{"name": "z@500", "variable": "z",
    "file": "z@500.nc"}], "predictand": null})";
  EXPECT_EQ(fetch_request_change(FetchManifest::read(d / "old.json"), asked), "");

  // build_store says it (and still builds the store from what was fetched).
  TinyRun run;
  FetchManifest tiny = FetchManifest::read(run.dir / "run/fetch/manifest.json");
  tiny.request = FetchManifest::Request::box(-110, -103.5, 29.5, 34, 2000, 2002);
  tiny.write(run.dir / "run/fetch/manifest.json");
  run.cfg.fetch.lon_min = -110, run.cfg.fetch.lon_max = -103.5, run.cfg.fetch.lat_min = 29.5;
  run.cfg.fetch.lat_max = 36, run.cfg.fetch.years = {2000, 2002}, run.cfg.fetch.has_box = true;
  test::LogCapture log;
  build_store(run.cfg, run.dir / "run/fetch", run.dir / "run/store.h5");
  EXPECT_TRUE(has(log.str(), "lat [29.5, 34], years [2000, 2002] but the config's fetch now asks for lon [-110, -103.5], "
                             "lat [29.5, 36]")) << log.str();
  EXPECT_TRUE(std::filesystem::exists(run.dir / "run/store.h5"));
}

// Predictors fetched other than the config lists (fields edited after fetch): preprocess refuses,
// naming both sides, instead of building a store of the fetched channels under this config.
TEST(BuildStore, FieldsOtherThanFetchedAreRefused) {
  FetchManifest m;
  m.dir = "run/fetch";
  m.predictors.push_back({"z@500", "z", "z@500.nc", "z.nc"});
  m.predictors.push_back({"ta@850", "ta", "ta@850.nc", "ta.nc"});
  Config::Fetch asked;
  asked.predictors = {FieldRequest::parse("ta@850", "x"), FieldRequest::parse("z@500", "x")};
  EXPECT_EQ(fetched_fields_change(m, asked), "");  // the order does not matter
  asked.predictors = {FieldRequest::parse("z@500", "x"), FieldRequest::parse("hus@850", "x")};
  const std::string said = fetched_fields_change(m, asked);
  EXPECT_TRUE(has(said, "run/fetch/manifest.json holds other predictors than fetch.predictors.fields lists (not "
                        "fetched: hus@850) (fetched, not listed: ta@850)")) << said;

  asked.predictors.clear();
  EXPECT_EQ(fetched_fields_change(m, asked), "");  // a config listing none: nothing to compare

  TinyRun run;
  const FetchManifest tiny = FetchManifest::read(run.dir / "run/fetch/manifest.json");
  for (size_t k = 0; k + 1 < tiny.predictors.size(); ++k)
    run.cfg.fetch.predictors.push_back(FieldRequest::parse(tiny.predictors[k].name, "x"));
  const std::string fetched = tiny.predictors.back().name;
  try {
    build_store(run.cfg, run.dir / "run/fetch", run.dir / "run/store.h5");
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_TRUE(has(e.what(), "(fetched, not listed: " + fetched + ")")) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(run.dir / "run/store.h5"));
}

// The datasets and predictand variable fetch was asked for travel in the manifest: preprocess
// refuses a config that names others since (E-OBS for EWEMBI, tasmax for tas), naming the first
// key that differs, rather than build a store of data the config does not ask for. Found by an
// audit: a store of tas from E-OBS built under a config asking for tasmax, exit 0.
TEST(BuildStore, DatasetsOrPredictandOtherThanFetchedAreRefused) {
  test::TempDir d;
  FetchManifest m;
  m.predictors.push_back({"z@500", "z", "z@500.nc", "z.nc"});
  m.predictand = {"tas", "tas", "predictand/tas.nc", "eobs.nc"};
  m.request = FetchManifest::Request::box(-10, 4, 35.5, 44, 1979, 2008).with_datasets("ncep_iberia", "eobs");
  m.write(d / "manifest.json");
  const FetchManifest back = FetchManifest::read(d / "manifest.json");
  ASSERT_TRUE(back.request.datasets_present);
  Config::Fetch asked;
  asked.predictors = {FieldRequest{"z", 500}};
  asked.predictors_dataset = "ncep_iberia", asked.predictand_dataset = "eobs", asked.predictand_variable = "tas";
  std::string key;
  EXPECT_EQ(fetched_datasets_change(back, asked, "", &key), "");
  asked.predictand_variable = "tasmax";
  std::string why = fetched_datasets_change(back, asked, "", &key);
  EXPECT_EQ(key, "fetch.predictand.variable");
  EXPECT_TRUE(has(why, "manifest.json was fetched with predictand tas, fetch.predictand.variable is now tasmax")) << why;
  asked.predictand_variable = "tas", asked.predictand_dataset = "ewembi";
  why = fetched_datasets_change(back, asked, "", &key);
  EXPECT_EQ(key, "fetch.predictand.dataset");
  EXPECT_TRUE(has(why, "the predictand from dataset 'eobs', fetch.predictand.dataset is now 'ewembi'")) << why;
  asked.predictors_dataset = "cnrm_cm5_historical";
  why = fetched_datasets_change(back, asked, "", &key);
  EXPECT_EQ(key, "fetch.predictors.dataset");  // the first that differs
  EXPECT_TRUE(has(why, "predictors from dataset 'ncep_iberia', fetch.predictors.dataset is now 'cnrm_cm5_historical'; "
                       "the predictand from dataset 'eobs'")) << why;
  // A config for the later stages names no predictors or predictand: nothing to compare; nor in a
  // manifest written before the datasets were recorded (the predictand's variable still is).
  Config::Fetch later;
  later.predictand_variable = "pr";
  EXPECT_EQ(fetched_datasets_change(back, later, "", &key), "");
  FetchManifest old = back;
  old.request.datasets_present = false;
  asked.predictand_variable = "tasmax";
  why = fetched_datasets_change(old, asked, "", &key);
  EXPECT_TRUE(has(why, "predictand tas, fetch.predictand.variable is now tasmax") && !has(why, "dataset")) << why;
}

// Another spelling of the fetched dataset is the same dataset: a config that named `mine` for
// fetch and names its definition's path now (or the reverse) preprocesses. Found by an audit:
// `eobs` fetched, `configs/datasets/eobs.yaml` asked, exit 2. What decides is the definition file
// the names resolve to; a copy of it elsewhere is another dataset (its url may differ).
TEST(BuildStore, AnotherSpellingOfTheFetchedDatasetIsTheSameDataset) {
  test::TempDir d;
  std::filesystem::create_directories(d / "datasets");
  { std::ofstream(d / "datasets/mine.yaml") << "name: mine\n"; }
  { std::ofstream(d / "copy.yaml") << "name: mine\n"; }
  const std::string config_file = d / "run.yaml";
  FetchManifest m;
  m.predictors.push_back({"z@500", "z", "z@500.nc", "z.nc"});
  m.predictand = {"pr", "pr", "predictand/pr.nc", "pr.nc"};
  m.request = FetchManifest::Request::box(-10, 4, 35.5, 44, 1979, 2008)
                  .with_datasets("mine", "mine")
                  .with_definitions(canonical_definition(d / "datasets/mine.yaml"),
                                    canonical_definition(d / "datasets/mine.yaml"));
  m.write(d / "manifest.json");
  const FetchManifest back = FetchManifest::read(d / "manifest.json");
  EXPECT_EQ(back.request.predictand_definition, canonical_definition(d / "datasets/mine.yaml"));
  Config::Fetch asked;
  asked.predictors = {FieldRequest{"z", 500}};
  asked.predictors_dataset = d / "datasets/../datasets/mine.yaml", asked.predictand_dataset = "mine";
  asked.predictand_variable = "pr";
  std::string key;
  EXPECT_EQ(fetched_datasets_change(back, asked, config_file, &key), "");
  // A copy of the definition is another file: refused, naming both spellings.
  asked.predictand_dataset = d / "copy.yaml";
  std::string why = fetched_datasets_change(back, asked, config_file, &key);
  EXPECT_EQ(key, "fetch.predictand.dataset");
  EXPECT_TRUE(has(why, "the predictand from dataset 'mine', fetch.predictand.dataset is now '" + d / "copy.yaml")) << why;
  EXPECT_TRUE(has(why, "(definition " + canonical_definition(d / "datasets/mine.yaml") + " then, " +
                       canonical_definition(d / "copy.yaml") + " now)")) << why;
  // A name that resolves to nothing now is not the same either (and is no crash).
  asked.predictand_dataset = "gone";
  EXPECT_NE(fetched_datasets_change(back, asked, config_file, &key), "");
  // The same spelling that resolves to another file now (a definition of that name put beside a
  // config elsewhere) is another dataset: the files decide, not the spellings (found by review).
  test::TempDir elsewhere;
  std::filesystem::create_directories(elsewhere / "datasets");
  { std::ofstream(elsewhere / "datasets/mine.yaml") << "name: other\n"; }
  asked.predictand_dataset = "mine";
  why = fetched_datasets_change(back, asked, elsewhere / "run.yaml", &key);
  EXPECT_TRUE(has(why, "the predictand from dataset 'mine', fetch.predictand.dataset is now 'mine' (definition ")) << why;
  // A link in another folder to the fetched file is another definition: a url relative to
  // {definition_dir} reads beside the link (found by review: other data accepted).
  std::filesystem::create_symlink(d / "datasets/mine.yaml", elsewhere / "link.yaml");
  asked.predictand_dataset = elsewhere / "link.yaml";
  EXPECT_NE(fetched_datasets_change(back, asked, config_file, &key), "");
  // The project moved: the recorded file is gone, and the same spelling (or one resolving like
  // it) is the same dataset, as before the record.
  FetchManifest moved = back;
  moved.request.predictand_definition = d / "gone/datasets/mine.yaml";
  asked.predictand_dataset = "mine";
  EXPECT_EQ(fetched_datasets_change(moved, asked, config_file, &key), "");
  asked.predictand_dataset = d / "datasets/mine.yaml";
  EXPECT_EQ(fetched_datasets_change(moved, asked, config_file, &key), "");
  asked.predictand_dataset = d / "copy.yaml";
  EXPECT_NE(fetched_datasets_change(moved, asked, config_file, &key), "");
  // A folder reached through a link is the same folder.
  std::filesystem::create_directory_symlink(d / "datasets", elsewhere / "linked_folder");
  asked.predictand_dataset = elsewhere / "linked_folder/mine.yaml";
  EXPECT_EQ(fetched_datasets_change(back, asked, config_file, &key), "");
  // A manifest from before the definitions were recorded: the fetched name is looked up from the
  // same config.
  FetchManifest old = back;
  old.request.predictors_definition = old.request.predictand_definition = "";
  asked.predictand_dataset = d / "datasets/mine.yaml";
  EXPECT_EQ(fetched_datasets_change(old, asked, config_file, &key), "");
  // The shipped definitions, as the audit had them: `eobs` and the path of the shipped eobs.yaml.
  // (Under ctest, which sets DS_SOURCE_DIR: the folder the build's shipped definitions are in.)
  if (const std::string src = test::source_dir(); std::getenv("DS_SOURCE_DIR")) {
    FetchManifest shipped = back;
    shipped.request = FetchManifest::Request::box(-10, 4, 35.5, 44, 1979, 2008).with_datasets("ncep_iberia", "eobs");
    shipped.predictand.name = "pr";
    asked.predictors_dataset = "ncep_iberia", asked.predictand_dataset = src + "/configs/datasets/eobs.yaml";
    EXPECT_EQ(fetched_datasets_change(shipped, asked, config_file, &key), "");
  }
}
