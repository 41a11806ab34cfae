// Driver of `downscale predict`: the test split of the store through the trained network, the
// Bernoulli-Gamma parameters turned into deterministic, expected and (by option) stochastic
// precipitation, written as CF NetCDF, and a first score against climatology.
#include <spdlog/spdlog.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "evaluate/baselines.h"
#include "io/atomic_file.h"
#include "io/error.h"
#include "io/precipitation_file.h"
#include "io/training_store.h"
#include "model/net.h"
#include "pipeline/stages.h"
#include "predict/precipitation.h"
#include "preprocess/new_predictors.h"
#include "train/checkpoint.h"

namespace ds {

namespace {

std::string checkpoint_path(const Config& cfg) {
  const RunPaths paths{cfg.run.dir};
  if (cfg.predict.checkpoint == "best") return paths.train_dir() + "/checkpoint_best.h5";
  if (cfg.predict.checkpoint == "last") return paths.train_dir() + "/checkpoint_last.h5";
  return cfg.predict.checkpoint;
}

// Standardized samples [first, first + n) into x (n x C x H x W): from a split of the store or
// from new predictor files.
using ReadSamples = std::function<void(size_t first, size_t n, float* x)>;

// The network's p, alpha and beta for `n` samples, NaN over the ocean.
BernoulliGammaParams run_network(model::Net& net, model::Backend& be, const StoreMeta& meta, size_t n,
                                 const ReadSamples& read, int batch_size) {
  const size_t hw = size_t(meta.Hy()) * meta.Wy(), xs = size_t(meta.C()) * meta.H() * meta.W();
  BernoulliGammaParams b;
  b.npoints = hw;
  b.p.resize(n * hw);
  b.alpha.resize(n * hw);
  b.beta.resize(n * hw);
  model::Tensor x(be, {1, 1, 1, 1});
  std::vector<float> host_x;
  for (size_t start = 0; start < n; start += batch_size) {
    const size_t nb = std::min<size_t>(batch_size, n - start);
    host_x.resize(nb * xs);
    read(start, nb, host_x.data());
    x.reshape({static_cast<int>(nb), meta.C(), meta.H(), meta.W()});
    x.upload(host_x.data());
    const auto host = net.forward(x).to_host();
    for (size_t i = 0; i < nb; ++i)
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
  if (spec.loss != "bernoulli_gamma")
    throw InputError(ckpt + ": the model was trained with the " + spec.loss +
                     " loss; predict turns Bernoulli-Gamma parameters into precipitation and needs that loss");
  auto be = model::make_cpu_backend(cfg.run.threads);
  model::Net net(spec, *be);
  load_checkpoint(ckpt, net, nullptr);
  net.set_mode({false, 0});  // inference: batch norm uses its running statistics, no dropout

  // The inputs: the store's test split, or new predictor files prepared as the training ones.
  const bool new_inputs = !cfg.predict.predictors.empty();
  std::unique_ptr<NewPredictors> inputs;
  std::vector<int64_t> days;
  ReadSamples read_inputs;
  if (new_inputs) {
    inputs = std::make_unique<NewPredictors>(cfg.predict.predictors, meta);
    days = inputs->days();
    read_inputs = [&](size_t a, size_t k, float* x) { inputs->read(a, k, x); };
    spdlog::info("predicting {} days from {}", days.size(), cfg.predict.predictors);
  } else {
    days = store.read_time("test");
    if (days.empty()) throw UsageError(cfg.file + ": preprocess.test_years gave no test days; nothing to predict");
    read_inputs = [&](size_t a, size_t k, float* x) { store.read_x("test", a, k, x); };
  }
  const size_t n = days.size();
  const size_t hw = size_t(meta.Hy()) * meta.Wy();
  const double shift = meta.wet_threshold;
  const int bs = cfg.train.batch_size;
  const BernoulliGammaParams test = run_network(net, *be, meta, n, read_inputs, bs);

  // Wet-day rule: p >= 0.5, or climate4R's per-box threshold that reproduces the training
  // period's observed wet-day frequency.
  std::vector<float> threshold(hw, 0.5f);
  std::string rule = "wet where p_wet >= 0.5, amount gamma_shape * gamma_scale + threshold";
  if (cfg.predict.occurrence == "frequency") {
    const BernoulliGammaParams train = run_network(
        net, *be, meta, store.count("train"), [&](size_t a, size_t k, float* x) { store.read_x("train", a, k, x); }, bs);
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
  out.days = days;
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
  // New inputs get their own file, named after the run folder they were fetched into, so the
  // test-split prediction that `evaluate` reads is not overwritten.
  std::string nc_path = paths.predict_dir() + "/precipitation.nc";
  if (new_inputs) {
    const auto fetch_dir = std::filesystem::path(cfg.predict.predictors).lexically_normal();
    const auto run_name = (fetch_dir.filename() == "fetch" || fetch_dir.filename().empty())
                              ? fetch_dir.parent_path().filename().string()
                              : fetch_dir.filename().string();
    nc_path = paths.predict_dir() + "/precipitation_" + run_name + ".nc";
  }
  write_precipitation(nc_path, out);
  if (new_inputs) {
    spdlog::info("wrote {} ({} days); no observations for these days, so no score", nc_path, n);
    return 0;
  }

  // A first score on the test period: the expected precipitation (the mean squared error's
  // optimum) against each grid box's training climatology. `downscale evaluate` gives the rest.
  // The climatology a model must beat: each grid box's training mean (evaluate's baseline).
  const std::vector<float> clim = climatology_baseline(store, "test");
  double se_model = 0, se_clim = 0, sum_obs = 0, sum_pred = 0;
  size_t count = 0;
  std::vector<float> obs(hw);
  for (size_t t = 0; t < n; ++t) {
    store.read_obs("test", t, 1, obs.data());
    for (size_t k = 0; k < hw; ++k) {
      if (!meta.mask[k]) continue;
      const double o = obs[k], p = out.pr_expected[t * hw + k];
      se_model += (p - o) * (p - o);
      se_clim += (clim[t * hw + k] - o) * (clim[t * hw + k] - o);
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
