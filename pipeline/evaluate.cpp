// Driver of `downscale evaluate`: the prediction of the test period against the observations,
// with the VALUE indices and scores, next to two baselines computed from the same store
// (climatology and a linear model on the predictors' principal components). Writes
// evaluate/scores.json, scores.csv, maps (PNG) and the score table (PNG).
#include <spdlog/spdlog.h>

#include <cmath>
#include <fstream>

#include "evaluate/baselines.h"
#include "evaluate/maps.h"
#include "evaluate/scores.h"
#include "io/atomic_file.h"
#include "io/error.h"
#include "io/precipitation_file.h"
#include "io/training_store.h"
#include "pipeline/stages.h"

namespace ds {

namespace {

void write_text(const std::string& path, const std::string& text) {
  AtomicFile f(path);
  std::ofstream(f.temp_path()) << text;
  f.commit();
}

}  // namespace

int run_evaluate(const Config& cfg) {
  const RunPaths paths{cfg.run.dir};
  const std::string pred_path = paths.predict_dir() + "/precipitation.nc";
  if (!path_exists(pred_path)) throw InputError(pred_path + ": no such file (run `downscale predict` first)");
  const PrecipitationOutput pred = read_precipitation(pred_path);
  StoreReader store(paths.store());
  const StoreMeta& meta = store.meta();
  const size_t n = store.count("test"), np = size_t(meta.Hy()) * meta.Wy();
  if (store.read_time("test") != pred.days || pred.lat.size() * pred.lon.size() != np)
    throw InputError(pred_path + ": its days or grid differ from the test split of " + store.path() +
                     " (predicted with another store?)");
  std::vector<float> obs(n * np);
  store.read_obs("test", 0, n, obs.data());

  std::vector<Method> methods;
  methods.push_back({"cnn_deterministic", {pred.pr}, pred.p_wet});
  methods.push_back({"cnn_expected", {pred.pr_expected}, pred.p_wet});
  if (pred.members > 0) {
    Method m{"cnn_stochastic", {}, pred.p_wet};
    for (int i = 0; i < pred.members; ++i)
      m.members.emplace_back(pred.pr_members.begin() + i * n * np, pred.pr_members.begin() + (i + 1) * n * np);
    methods.push_back(std::move(m));
  }
  spdlog::info("baseline: climatology");
  methods.push_back({"climatology", {climatology_baseline(store, "test")}, {}});
  spdlog::info("baseline: linear model on {} principal components", cfg.evaluate.pcs);
  methods.push_back({"linear_pcs", {linear_baseline(store, "test", {cfg.evaluate.pcs, cfg.evaluate.ridge})}, {}});

  const Evaluation e = evaluate_methods(obs, np, meta.mask, methods);
  const std::string dir = paths.root + "/evaluate";
  make_dirs(dir);
  write_text(dir + "/scores.json", evaluation_json(e));
  write_text(dir + "/scores.csv", evaluation_csv(e));

  auto map = [&](const std::string& file, const std::string& title, const std::string& units,
                 const std::vector<double>& v, bool diverging) {
    write_map_png(dir + "/" + file, MapField{title, units, meta.predictand_lon, meta.predictand_lat, v, diverging});
  };
  const MethodScores& cnn = e.methods.front();
  std::vector<double> bias(np);
  for (size_t k = 0; k < np; ++k) bias[k] = cnn.indices.mean[k] - e.observed.mean[k];
  map("observed_mean.png", "Observed mean precipitation, test period", "mm/day", e.observed.mean, false);
  map("predicted_mean.png", "CNN (deterministic) mean precipitation", "mm/day", cnn.indices.mean, false);
  map("bias.png", "CNN (deterministic) bias of the mean", "mm/day", bias, true);
  map("rocss.png", "CNN ROC skill score of wet days", "", cnn.rocss, true);
  write_table_png(dir + "/scores_table.png", e, "downscale evaluate: " + cfg.file);

  spdlog::info("{:<18} {:>10} {:>8} {:>10} {:>10} {:>7} {:>9} {:>9} {:>7}", "method", "mean bias", "R01 bias",
               "SDII bias", "P98 bias", "RMSE", "RMSE wet", "Spearman", "ROCSS");
  for (const auto& m : e.methods) {
    const auto& d = m.domain;
    spdlog::info("{:<18} {:>9.1f}% {:>8.3f} {:>9.1f}% {:>9.1f}% {:>7.2f} {:>9.2f} {:>9.3f} {:>7.3f}", m.name,
                 100 * d.at("mean_relative_bias"), d.at("R01_bias"), 100 * d.at("SDII_relative_bias"),
                 100 * d.at("P98_relative_bias"), d.at("RMSE"), d.at("RMSE_wet"), d.at("Spearman"), d.at("ROCSS"));
  }
  spdlog::info("wrote {}/scores.json, scores.csv, scores_table.png and maps", dir);
  return 0;
}

}  // namespace ds
