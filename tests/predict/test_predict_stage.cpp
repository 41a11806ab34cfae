// `downscale train/predict/evaluate` on a synthetic temperature store: two models trained into
// one run folder under different train.name, a Gaussian and an MSE one, both predicted onto the
// observation window with the store's calendar (noleap), and evaluated with the continuous
// scores, whose climatology baseline has a closed form.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <tuple>

#include "io/calendar.h"
#include "io/fetch_manifest.h"
#include "io/netcdf_file.h"
#include "io/predictand_file.h"
#include "io/run_lock.h"
#include "io/training_store.h"
#include "support/test_support.h"

using namespace ds;
namespace fs = std::filesystem;

namespace {

constexpr int kH = 4, kW = 5, kHy = 13, kWy = 17;             // demo model: (4H-3) x (4W-3)
constexpr int kRow0 = 1, kCol0 = 2, kRows = 11, kCols = 13;   // the observation window

struct Synthetic {
  std::vector<float> obs_train, obs_test;  // (time, H' x W')
  std::vector<uint8_t> mask;
  std::vector<int64_t> test_days;
};

bool in_window(int j, int i) { return j >= kRow0 && j < kRow0 + kRows && i >= kCol0 && i < kCol0 + kCols; }

// with_test false: no test split (a store built without test years), split_years as recorded.
Synthetic write_tas_store(const std::string& path, bool with_test = true, const std::string& split_years = "") {
  StoreMeta m;
  m.split_years = split_years;
  m.channels = {"psl", "ta@850"};
  for (int i = 0; i < kW; ++i) m.predictor_lon.push_back(-10 + 2 * i);
  for (int j = 0; j < kH; ++j) m.predictor_lat.push_back(36 + 2 * j);
  for (int i = 0; i < kWy; ++i) m.predictand_lon.push_back(-10.75 + 0.5 * i);
  for (int j = 0; j < kHy; ++j) m.predictand_lat.push_back(35.25 + 0.5 * j);
  m.predictand = "tas";
  m.predictand_units = "degC";
  m.calendar = "noleap";
  m.obs_row0 = kRow0, m.obs_col0 = kCol0, m.obs_rows = kRows, m.obs_cols = kCols;
  m.obs_lat.assign(m.predictand_lat.begin() + kRow0, m.predictand_lat.begin() + kRow0 + kRows);
  m.obs_lon.assign(m.predictand_lon.begin() + kCol0, m.predictand_lon.begin() + kCol0 + kCols);
  m.mask.assign(kHy * kWy, 0);
  for (int j = 0; j < kHy; ++j)
    for (int i = 0; i < kWy; ++i) m.mask[j * kWy + i] = in_window(j, i) && i != kCol0;  // the window's first column: sea
  m.regrid = "psl:nearest,ta@850:conservative";
  // The training statistics of the GCM's fields below (psl 101000 Pa, ta 270 K, sd 5 as their
  // sine): standardized with them, the GCM's predictors look like the training ones, and the
  // prediction is plausible (predict refuses one far from the observations, continuous.h).
  m.mean.assign(2 * kH * kW, 101000.0f);
  std::fill(m.mean.begin() + kH * kW, m.mean.end(), 270.0f);
  m.sd.assign(2 * kH * kW, 5.0f);
  Synthetic s;
  s.mask = m.mask;
  std::mt19937_64 rng(11);
  std::normal_distribution<float> n01;
  int64_t day = days_from_date({2001, 2, 20}, Calendar::noleap);
  auto make = [&](int n, std::vector<float>& x, std::vector<float>& y, std::vector<float>& obs, std::vector<int64_t>& t) {
    for (int d = 0; d < n; ++d) {
      for (int k = 0; k < 2 * kH * kW; ++k) x.push_back(n01(rng));
      const float* c0 = &x[x.size() - 2 * kH * kW];
      for (int j = 0; j < kHy; ++j)
        for (int i = 0; i < kWy; ++i) {
          const float v = 12.0f + 0.2f * j + 3.0f * c0[std::min(kH - 1, j / 4) * kW + std::min(kW - 1, i / 4)];
          const bool modelled = m.mask[j * kWy + i];
          obs.push_back(modelled ? v : NAN);
          y.push_back(modelled ? v : NAN);
        }
      t.push_back(day++);
    }
  };
  StoreWriter w(path, m);
  std::vector<float> x, y, obs;
  std::vector<int64_t> t;
  make(96, x, y, obs, t);
  w.write_split("train", x, y, obs, t);
  s.obs_train = obs;
  x.clear(), y.clear(), obs.clear(), t.clear();
  make(32, x, y, obs, t);
  w.write_split("validation", x, y, obs, t);
  x.clear(), y.clear(), obs.clear(), t.clear();
  if (!with_test) {
    w.close();
    return s;
  }
  make(40, x, y, obs, t);
  obs[3 * kHy * kWy + 5 * kWy + 6] = NAN;  // a day a station missed: scores skip it
  w.write_split("test", x, y, obs, t);
  s.obs_test = obs;
  s.test_days = t;
  w.close();
  return s;
}

// The downscale binary: DS_BINARY, else next to this test in the build tree (ctest passes
// gtest_discover_tests' ENVIRONMENT list as separate words, so only its first entry arrives).
std::string binary() {
  if (const char* bin = std::getenv("DS_BINARY")) return bin;
  return (fs::canonical("/proc/self/exe").parent_path().parent_path() / "pipeline/downscale").string();
}

int run(const std::string& args) {
  const std::string cmd = binary() + " " + args + " >/dev/null 2>&1";
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// The exit code and what the command printed (stdout and stderr).
std::pair<int, std::string> run_output(const std::string& args) {
  const std::string cmd = binary() + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int rc = pclose(p);
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, out};
}

// Each box's training mean minus its test mean, averaged over modelled boxes: the bias of the
// climatology baseline.
double climatology_bias(const Synthetic& s) {
  const size_t hw = kHy * kWy;
  double sum = 0;
  size_t boxes = 0;
  for (size_t k = 0; k < hw; ++k) {
    if (!s.mask[k]) continue;
    double a = 0, b = 0;
    size_t na = 0, nb = 0;
    for (size_t t = 0; t < s.obs_train.size() / hw; ++t) a += s.obs_train[t * hw + k], ++na;
    for (size_t t = 0; t < s.obs_test.size() / hw; ++t)
      if (std::isfinite(s.obs_test[t * hw + k])) b += s.obs_test[t * hw + k], ++nb;
    sum += a / na - b / nb, ++boxes;
  }
  return sum / boxes;
}

// A predictors-only fetch of a "GCM" on a shifted 1.5-degree grid that only partly covers the
// predictor grid's edge cells (as CNRM-CM5 on the Iberia grid), 2 years on the standard calendar.
void write_gcm_fetch(const std::string& dir) {
  fs::create_directories(dir + "/predictors");
  std::vector<double> lon, lat;
  for (double x = -10.4; x <= -1.5; x += 1.5) lon.push_back(x);
  for (double y = 36.3; y <= 42.6; y += 1.5) lat.push_back(y);
  FetchManifest man;
  for (const auto& [name, var] : {std::pair<std::string, std::string>{"psl", "psl"}, {"ta@850", "ta"}}) {
    NcFile nc = NcFile::create(dir + "/predictors/" + name + ".nc");
    const int dt = nc.def_dim("time", 0), dy = nc.def_dim("lat", lat.size()), dx = nc.def_dim("lon", lon.size());
    const int vt = nc.def_var("time", NC_DOUBLE, {dt});
    nc.put_att(vt, "units", "days since 1970-01-01");
    nc.put_att(vt, "calendar", "standard");
    const int vy = nc.def_var("lat", NC_DOUBLE, {dy}), vx = nc.def_var("lon", NC_DOUBLE, {dx});
    const int vv = nc.def_var(var, NC_FLOAT, {dt, dy, dx});
    nc.put_att(vv, "units", name == "psl" ? "Pa" : "K");
    nc.end_define();
    nc.write(vy, lat.data());
    nc.write(vx, lon.data());
    const size_t n = 730, hw = lat.size() * lon.size();
    std::vector<double> t(n);
    std::vector<float> v(n * hw);
    for (size_t i = 0; i < n; ++i) {
      t[i] = 11323 + i;  // 2001-01-01 on
      for (size_t k = 0; k < hw; ++k) v[i * hw + k] = (name == "psl" ? 101000.0f : 270.0f) + 5.0f * std::sin(0.3 * i + k);
    }
    nc.write(vt, {0}, {n}, t.data());
    nc.write(vv, {0, 0, 0}, {n, lat.size(), lon.size()}, v.data());
    nc.close();
    FetchedFile f;
    f.name = name, f.variable = var, f.file = "predictors/" + name + ".nc";
    man.predictors.push_back(f);
  }
  man.write(dir + "/manifest.json");  // no predictand: a predictors-only fetch
}

}  // namespace

TEST(PredictStage, TwoNamedModelsOfATemperatureStoreArePredictedAndEvaluated) {
  test::TempDir d;
  fs::create_directories(d / "run/preprocess");
  const Synthetic s = write_tas_store(d / "run/preprocess/store.h5");
  const std::string cfg = d / "config.yaml";
  std::ofstream(cfg) << "run: {dir: " << (d / "run") << ", threads: 1}\n"
                     << "model: {name: demo, filters: [8, 8, 8]}\n"
                     << "train: {batch_size: 16, learning_rate: 3.0e-3, epochs: 3, seed: 1}\n";
  const std::string base = "--config " + cfg;
  for (const auto& [name, loss] : {std::pair<std::string, std::string>{"gauss", "gaussian"}, {"plain", "mse"}}) {
    const std::string set = base + " --set train.name=" + name + " --set train.loss=" + loss;
    ASSERT_EQ(run("train " + set), 0) << name;
    ASSERT_TRUE(fs::exists(d / ("run/train/" + name + "/checkpoint_best.h5"))) << name;
    ASSERT_EQ(run("predict " + set), 0) << name;
    ASSERT_EQ(run("evaluate " + set), 0) << name;
  }
  EXPECT_FALSE(fs::exists(d / "run/train/checkpoint_best.h5"));  // each model in its own folder

  for (const std::string name : {"gauss", "plain"}) {
    const std::string nc = d / ("run/predict/" + name + "/tas.nc");
    const PredictandOutput p = read_predictand(nc, "tas");
    EXPECT_EQ(p.calendar, "noleap");
    EXPECT_EQ(p.days, s.test_days);
    EXPECT_EQ(p.units, "degC");
    ASSERT_EQ(p.lat.size(), size_t(kRows));
    ASSERT_EQ(p.lon.size(), size_t(kCols));
    EXPECT_DOUBLE_EQ(p.lat.front(), 35.25 + 0.5 * kRow0);
    EXPECT_DOUBLE_EQ(p.lon.front(), -10.75 + 0.5 * kCol0);
    EXPECT_EQ(p.sd.empty(), name == "plain");
    for (size_t t = 0; t < p.days.size(); ++t)
      for (int r = 0; r < kRows; ++r)
        for (int c = 0; c < kCols; ++c) {
          const float v = p.mean[(t * kRows + r) * kCols + c];
          EXPECT_EQ(std::isfinite(v), c != 0) << name << " " << r << " " << c;  // NaN on the sea column only
          if (!p.sd.empty() && c != 0) {
            EXPECT_GT(p.sd[(t * kRows + r) * kCols + c], 0.0f);
          }
        }
    NcFile f = NcFile::open(nc);
    EXPECT_EQ(f.att_text(f.var_id("tas"), "standard_name"), "air_temperature");
    EXPECT_EQ(f.att_text(f.var_id("time"), "calendar"), "noleap");
    EXPECT_NE(f.att_text(NC_GLOBAL, "predictor_standardization").find("training"), std::string::npos);

    const auto j = nlohmann::json::parse(std::ifstream(d / ("run/evaluate/" + name + "/scores.json")));
    EXPECT_EQ(j["predictand"], "tas");
    // What was scored against what: the file, its checkpoint and the test days, first..last.
    EXPECT_EQ(j["prediction"], nc);
    EXPECT_EQ(j["checkpoint"], d / ("run/train/" + name + "/checkpoint_best.h5"));
    EXPECT_EQ(j["test_period"], to_string(date_from_days(s.test_days.front(), Calendar::noleap)) + ".." +
                                    to_string(date_from_days(s.test_days.back(), Calendar::noleap)));
    EXPECT_EQ(j["units"], "degC");
    for (const char* m : {"cnn", "climatology", "linear_pcs"}) ASSERT_TRUE(j["methods"].contains(m)) << m;
    const auto& clim = j["methods"]["climatology"];
    EXPECT_NEAR(clim["bias"].get<double>(), climatology_bias(s), 1e-4);
    EXPECT_TRUE(clim["Pearson"].is_null());  // a constant series has no correlation
    EXPECT_NEAR(clim["sd_ratio"].get<double>(), 0.0, 1e-9);
    // The linear baseline on the predictors that made the data beats climatology, below 0 too.
    EXPECT_LT(j["methods"]["linear_pcs"]["RMSE"].get<double>(), clim["RMSE"].get<double>());
    for (const char* png : {"observed_mean.png", "bias.png", "scores_table.png"})
      EXPECT_TRUE(fs::exists(d / ("run/evaluate/" + name + "/" + png))) << png;
  }

  // Predicted a block of days at a time (predict.block_days 16: the 40 test days as 16 + 16 + 8;
  // the default here is one block): the same values and the same first score, to the bit (every
  // batch is the same batch).
  {
    const std::string gauss = base + " --set train.name=gauss";
    const PredictandOutput whole = read_predictand(d / "run/predict/gauss/tas.nc", "tas");
    auto scores_json = [&] { return nlohmann::json::parse(std::ifstream(d / "run/predict/gauss/scores.json")); };
    const nlohmann::json scores = scores_json();
    ASSERT_EQ(run("predict " + gauss + " --set predict.block_days=16"), 0);
    const PredictandOutput blocks = read_predictand(d / "run/predict/gauss/tas.nc", "tas");
    EXPECT_EQ(blocks.days, whole.days);
    ASSERT_EQ(blocks.mean.size(), whole.mean.size());
    ASSERT_EQ(blocks.sd.size(), whole.sd.size());
    for (size_t i = 0; i < whole.mean.size(); ++i) {
      ASSERT_EQ(std::isnan(blocks.mean[i]), std::isnan(whole.mean[i])) << i;
      if (std::isnan(whole.mean[i])) continue;
      ASSERT_EQ(blocks.mean[i], whole.mean[i]) << i;
      ASSERT_EQ(blocks.sd[i], whole.sd[i]) << i;
    }
    EXPECT_EQ(scores_json(), scores);
  }

  // GCM predictors on their own grid, standardized against their own 2001-2002 climatology:
  // tas_<run>_own.nc with the GCM's days and calendar, and the standardization in the attributes.
  write_gcm_fetch(d / "gcm/fetch");
  const std::string gcm = base + " --set train.name=gauss --set predict.predictors=" + (d / "gcm/fetch");
  ASSERT_EQ(run("predict " + gcm + " --set predict.standardize=own --set predict.reference_years=[2001,2002]"), 0);
  {
    const PredictandOutput p = read_predictand(d / "run/predict/gauss/tas_gcm_own.nc", "tas");
    EXPECT_EQ(p.days.size(), 730u);
    EXPECT_EQ(p.calendar, "standard");
    EXPECT_EQ(p.lat.size(), size_t(kRows));
    NcFile f = NcFile::open(d / "run/predict/gauss/tas_gcm_own.nc");
    EXPECT_NE(f.att_text(NC_GLOBAL, "predictor_standardization").find("own"), std::string::npos);
    EXPECT_EQ(f.att_text(NC_GLOBAL, "predictors"), fs::weakly_canonical(d / "gcm/fetch").string());
  }
  // The training standardization beside it, under its own name; a trailing slash names the same
  // file, and a rerun from the same folder replaces it.
  ASSERT_EQ(run("predict " + gcm + "/"), 0);
  ASSERT_TRUE(fs::exists(d / "run/predict/gauss/tas_gcm.nc"));
  EXPECT_TRUE(fs::exists(d / "run/predict/gauss/tas_gcm_own.nc"));
  ASSERT_EQ(run("predict " + gcm), 0);
  // Another model's run in a folder of the same name would take that file's place: refused
  // (exit 2) unless predict.label names it apart.
  fs::create_directories(d / "other");
  fs::copy(d / "gcm", d / "other/gcm", fs::copy_options::recursive);
  const std::string other = base + " --set train.name=gauss --set predict.predictors=" + (d / "other/gcm/fetch");
  EXPECT_EQ(run("predict " + other), 2);
  EXPECT_EQ(NcFile::open(d / "run/predict/gauss/tas_gcm.nc").att_text(NC_GLOBAL, "predictors"),
            fs::weakly_canonical(d / "gcm/fetch").string());
  ASSERT_EQ(run("predict " + other + " --set predict.label=other_gcm"), 0);
  EXPECT_TRUE(fs::exists(d / "run/predict/gauss/tas_other_gcm.nc"));
  // Under a label too, the two standardizations keep apart (_own after the label).
  ASSERT_EQ(run("predict " + other + " --set predict.label=other_gcm --set predict.standardize=own "
                "--set predict.reference_years=[2001,2002]"), 0);
  EXPECT_TRUE(fs::exists(d / "run/predict/gauss/tas_other_gcm_own.nc"));
  // predict.label and predict.fill belong to new predictors: for the test split, exit 2.
  EXPECT_EQ(run("predict " + base + " --set train.name=gauss --set predict.label=x"), 2);
  EXPECT_EQ(run("predict " + base + " --set train.name=gauss --set predict.fill=nearest_time"), 2);
  // A config kept for GCM work names them while its other stages run: no error there.
  EXPECT_EQ(run("evaluate " + base + " --set train.name=gauss --set predict.fill=nearest_time --set predict.label=x"), 0);
  // Another model's checkpoint of this run under train.name gauss would be filed and evaluated as
  // gauss's: exit 2, and no predict/other folder is left (a checkpoint elsewhere is fine).
  EXPECT_EQ(run("predict " + base + " --set train.name=other --set predict.checkpoint=" +
                (d / "run/train/plain/checkpoint_best.h5")), 2);
  EXPECT_FALSE(fs::exists(d / "run/predict/other"));
  fs::copy_file(d / "run/train/plain/checkpoint_best.h5", d / "plain_copy.h5");
  EXPECT_EQ(run("predict " + base + " --set train.name=other --set predict.checkpoint=" + (d / "plain_copy.h5")), 0);
  EXPECT_TRUE(fs::exists(d / "run/predict/other/tas.nc"));
  // The GCM's run folder instead of its fetch folder: exit 2 naming the fetch folder meant (it
  // was read as another run's predictors named "gcm", then as not fetched); a folder that is no
  // fetch at all: exit 3 saying what predict.predictors is.
  {
    const auto [rc, out] = run_output("predict " + base + " --set train.name=gauss --set predict.predictors=" + (d / "gcm"));
    EXPECT_EQ(rc, 2) << out;
    EXPECT_NE(out.find("is a run folder; its predictors are in " + (d / "gcm/fetch")), std::string::npos) << out;
  }
  {
    const auto [rc, out] = run_output("predict " + base + " --set train.name=gauss --set predict.predictors=" + (d / "run"));
    EXPECT_EQ(rc, 3) << out;
    EXPECT_NE(out.find("is not a fetch folder"), std::string::npos) << out;
  }
  // Reference years the GCM run does not hold: bad input, naming them.
  EXPECT_EQ(run("predict " + gcm + " --set predict.standardize=own --set predict.reference_years=[1990,2001]"), 3);

  // A loss that does not fit the predictand is refused by train itself (exit 2, as train
  // --check), before the allocation is spent on a model predict could not use.
  EXPECT_EQ(run("train " + base + " --set train.name=bg --set train.epochs=1 --set train.loss=bernoulli_gamma"), 2);
  EXPECT_FALSE(fs::exists(d / "run/train/bg"));
  // A name that is no folder name is a configuration error.
  EXPECT_EQ(run("train " + base + " --set train.name=../x"), 2);
}

// A store built without test days: predict names the store and the years it was built with
// (exit 3) when the config gives test years, and the config (exit 2) when it gives none.
TEST(PredictStage, AStoreWithoutTestDaysNamesTheStoreOrTheConfig) {
  test::TempDir d;
  fs::create_directories(d / "run/preprocess");
  write_tas_store(d / "run/preprocess/store.h5", false, "train 2001..2001, validation none, test none");
  const std::string cfg = d / "config.yaml";
  std::ofstream(cfg) << "run: {dir: " << (d / "run") << ", threads: 1}\n"
                     << "model: {name: demo, filters: [4, 4, 4]}\n"
                     << "train: {batch_size: 32, epochs: 1, seed: 1, loss: gaussian}\n";
  ASSERT_EQ(run("train --config " + cfg), 0);
  std::optional<RunLock> training(std::in_place, d / "run/train", "train");  // a train still running there
  auto [rc, out] = run_output("predict --config " + cfg + " --set preprocess.train_years=[2001,2001] --set "
                              "preprocess.test_years=[2002,2002]");
  training.reset();
  EXPECT_NE(out.find("another downscale train (pid " + std::to_string(getpid())), std::string::npos) << out;
  EXPECT_NE(out.find("checkpoint_best.h5 as it is now; the training rewrites it"), std::string::npos) << out;
  EXPECT_EQ(rc, 3) << out;
  EXPECT_NE(out.find("store.h5: its test split is empty (built with the split years train 2001..2001, validation "
                     "none, test none); nothing to predict: run `downscale preprocess` again"),
            std::string::npos)
      << out;
  // The config's years differ from the store's: said first.
  EXPECT_NE(out.find("the config now gives train 2001..2001, validation none, test 2002..2002"), std::string::npos)
      << out;
  std::tie(rc, out) = run_output("predict --config " + cfg);
  EXPECT_EQ(out.find("another downscale train"), std::string::npos) << out;  // the lock is free again
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("preprocess.test_years gives no test years; nothing to predict"), std::string::npos) << out;
}
