// Driver of `downscale predict`: the test split of the store through the trained network, the
// Bernoulli-Gamma parameters turned into deterministic, expected and (by option) stochastic
// precipitation, written as CF NetCDF, and a first score against climatology.
#include <spdlog/spdlog.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "io/atomic_file.h"
#include "io/error.h"
#include "io/precipitation_file.h"
#include "io/training_store.h"
#include "model/net.h"
#include "pipeline/stages.h"
#include "predict/precipitation.h"
#include "train/batches.h"
#include "train/checkpoint.h"

namespace ds {

namespace {

std::string checkpoint_path(const Config& cfg) {
  const RunPaths paths{cfg.run.dir};
  if (cfg.predict.checkpoint == "best") return paths.train_dir() + "/checkpoint_best.h5";
  if (cfg.predict.checkpoint == "last") return paths.train_dir() + "/checkpoint_last.h5";
  return cfg.predict.checkpoint;
}

// The network's p, alpha and beta for every day of a split, NaN over the ocean.
BernoulliGammaParams run_network(model::Net& net, model::Backend& be, const StoreReader& store,
                                 const std::string& split, int batch_size) {
  const StoreMeta& meta = store.meta();
  const size_t n = store.count(split), hw = size_t(meta.Hy()) * meta.Wy();
  BernoulliGammaParams b;
  b.npoints = hw;
  b.p.resize(n * hw);
  b.alpha.resize(n * hw);
  b.beta.resize(n * hw);
  Batch batch{model::Tensor(be, {1, 1, 1, 1}), model::Tensor(be, {1, 1, 1, 1})};
  for (size_t start = 0; start < n; start += batch_size) {
    std::vector<size_t> rows(std::min<size_t>(batch_size, n - start));
    std::iota(rows.begin(), rows.end(), start);
    read_batch(store, split, rows, batch);
    const auto host = net.forward(batch.x).to_host();
    for (size_t i = 0; i < rows.size(); ++i)
      for (size_t k = 0; k < hw; ++k) {
        const size_t o = (start + i) * hw + k;
        if (!meta.mask[k]) {
          b.p[o] = b.alpha[o] = b.beta[o] = NAN;
          continue;
        }
        b.p[o] = host[(i * 3 + 0) * hw + k];
        b.alpha[o] = std::exp(host[(i * 3 + 1) * hw + k]);
        b.beta[o] = std::exp(host[(i * 3 + 2) * hw + k]);
      }
  }
  return b;
}

// Per-grid-box mean of the training observations: the climatology a model must beat.
std::vector<double> training_climatology(const StoreReader& store) {
  const size_t n = store.count("train"), hw = size_t(store.meta().Hy()) * store.meta().Wy();
  std::vector<double> sum(hw, 0);
  std::vector<float> day(hw);
  for (size_t t = 0; t < n; ++t) {
    store.read_pr("train", t, 1, day.data());
    for (size_t k = 0; k < hw; ++k) sum[k] += day[k];
  }
  for (auto& s : sum) s /= static_cast<double>(n);
  return sum;
}

}  // namespace

int run_predict(const Config& cfg) {
  const RunPaths paths{cfg.run.dir};
  const std::string ckpt = checkpoint_path(cfg);
  if (!path_exists(ckpt)) throw InputError(ckpt + ": no such checkpoint (run `downscale train` first)");
  StoreReader store(paths.store());
  const StoreMeta& meta = store.meta();
  const model::ModelSpec spec = read_checkpoint_spec(ckpt);
  if (spec.in_channels != meta.C() || spec.in_h != meta.H() || spec.in_w != meta.W())
    throw InputError(ckpt + ": the model takes " + std::to_string(spec.in_channels) + "x" + std::to_string(spec.in_h) +
                     "x" + std::to_string(spec.in_w) + " but the store holds " + std::to_string(meta.C()) + "x" +
                     std::to_string(meta.H()) + "x" + std::to_string(meta.W()));
  auto be = model::make_cpu_backend(cfg.run.threads);
  model::Net net(spec, *be);
  load_checkpoint(ckpt, net, nullptr);

  const size_t n = store.count("test");
  if (n == 0) throw UsageError(cfg.file + ": preprocess.test_years gave no test days; nothing to predict");
  const size_t hw = size_t(meta.Hy()) * meta.Wy();
  const double shift = meta.wet_threshold;
  const int bs = cfg.train.batch_size;
  const BernoulliGammaParams test = run_network(net, *be, store, "test", bs);

  // Wet-day rule: p >= 0.5, or climate4R's per-box threshold that reproduces the training
  // period's observed wet-day frequency.
  std::vector<float> threshold(hw, 0.5f);
  std::string rule = "wet where p_wet >= 0.5, amount gamma_shape * gamma_scale + threshold";
  if (cfg.predict.occurrence == "frequency") {
    const BernoulliGammaParams train = run_network(net, *be, store, "train", bs);
    std::vector<float> target(store.count("train") * hw);
    store.read_y("train", 0, store.count("train"), target.data());
    for (size_t i = 0; i < target.size(); ++i)
      if (!meta.mask[i % hw]) target[i] = NAN;
    threshold = frequency_adapted_thresholds(train, target);
    rule = "wet where p_wet reaches the per-box threshold matching the training wet-day frequency, "
           "amount gamma_shape * gamma_scale + threshold";
  }

  PrecipitationOutput out;
  out.lon = meta.predictand_lon;
  out.lat = meta.predictand_lat;
  out.days = store.read_time("test");
  out.pr = deterministic_precipitation(test, threshold, shift);
  out.pr_expected = expected_precipitation(test, shift);
  out.p_wet = test.p;
  out.gamma_shape = test.alpha;
  out.gamma_scale = test.beta;
  out.members = cfg.predict.members;
  if (out.members > 0) out.pr_members = stochastic_precipitation(test, out.members, cfg.predict.seed, shift);
  out.occurrence_rule = rule;
  out.wet_threshold = shift;
  out.history = "downscale predict --config " + cfg.file;
  out.checkpoint = ckpt;
  out.config_file = cfg.file;
  const std::string nc_path = paths.predict_dir() + "/precipitation.nc";
  write_precipitation(nc_path, out);

  // A first score on the test period: the expected precipitation (the mean squared error's
  // optimum) against each grid box's training climatology. `downscale evaluate` gives the rest.
  const auto clim = training_climatology(store);
  double se_model = 0, se_clim = 0, sum_obs = 0, sum_pred = 0;
  size_t count = 0;
  std::vector<float> obs(hw);
  for (size_t t = 0; t < n; ++t) {
    store.read_pr("test", t, 1, obs.data());
    for (size_t k = 0; k < hw; ++k) {
      if (!meta.mask[k]) continue;
      const double o = obs[k], p = out.pr_expected[t * hw + k];
      se_model += (p - o) * (p - o);
      se_clim += (clim[k] - o) * (clim[k] - o);
      sum_obs += o;
      sum_pred += p;
      ++count;
    }
  }
  const double rmse = std::sqrt(se_model / count), rmse_clim = std::sqrt(se_clim / count);
  const double skill = 1.0 - se_model / se_clim;
  nlohmann::json scores = {{"test_days", n},
                           {"land_points", count / n},
                           {"rmse_mm_day", rmse},
                           {"rmse_climatology_mm_day", rmse_clim},
                           {"mse_skill_score_vs_climatology", skill},
                           {"mean_observed_mm_day", sum_obs / count},
                           {"mean_predicted_mm_day", sum_pred / count},
                           {"checkpoint", ckpt}};
  AtomicFile sj(paths.predict_dir() + "/scores.json");
  std::ofstream(sj.temp_path()) << scores.dump(2) << "\n";
  sj.commit();
  spdlog::info("wrote {} ({} days{})", nc_path, n,
               out.members ? ", " + std::to_string(out.members) + " stochastic members" : "");
  spdlog::info("test RMSE of the expected precipitation {:.3f} mm/day vs climatology {:.3f} mm/day: MSE skill "
               "score {:.3f} ({})",
               rmse, rmse_clim, skill, skill > 0 ? "beats climatology" : "does NOT beat climatology");
  return 0;
}

}  // namespace ds
