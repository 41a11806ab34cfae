#include "predict/test_scores.h"

#include <spdlog/spdlog.h>

#include <cmath>

#include "io/atomic_file.h"
#include "io/error.h"
#include "io/stop_signal.h"

namespace ds {

void add_test_scores(const StoreReader& store, const std::vector<float>& clim, size_t first, size_t n,
                     const std::vector<float>& pred, TestScore& s) {
  const StoreMeta& meta = store.meta();
  const size_t hw = size_t(meta.Hy()) * meta.Wy();
  std::vector<float> obs(n * hw);
  if (n) store.read_obs("test", first, n, obs.data());
  for (size_t t = 0; t < n; ++t)
    for (size_t k = 0; k < hw; ++k) {
      const double o = obs[t * hw + k], p = pred[t * hw + k], c = clim[k];
      if (!meta.mask[k] || !std::isfinite(o) || !std::isfinite(p)) continue;
      s.se_model += (p - o) * (p - o);
      s.se_clim += (c - o) * (c - o);
      s.sum_obs += o;
      s.sum_pred += p;
      ++s.count;
    }
}

void report_test_scores(const std::string& store_path, const std::string& predict_dir, const TestScore& s, size_t n,
                        const std::string& ckpt, const std::string& what, const std::string& units, const std::string& key_units,
                        const nlohmann::json& extra) {
  if (!s.count) throw InputError(store_path + ": no observed value on a modelled box in the test split");
  const double rmse = std::sqrt(s.se_model / s.count), rmse_clim = std::sqrt(s.se_clim / s.count);
  const double skill = 1.0 - s.se_model / s.se_clim;
  nlohmann::json j = extra;
  j["test_days"] = n;
  j["rmse" + key_units] = rmse;
  j["rmse_climatology" + key_units] = rmse_clim;
  j["mse_skill_score_vs_climatology"] = skill;
  j["mean_observed" + key_units] = s.sum_obs / s.count;
  j["mean_predicted" + key_units] = s.sum_pred / s.count;
  j["checkpoint"] = ckpt;
  j["definitions"] = "the test split's first score, of " + what + ": rmse pooled over every observed (day, box) "
                     "value of the modelled boxes, rmse_climatology the same of each box's training mean, "
                     "mse_skill_score_vs_climatology 1 - MSE / MSE of climatology, the means over the same values; "
                     "`downscale evaluate` scores each box and averages the boxes' scores, so its RMSE differs";
  // Written after the prediction: a failure here (a full disk) leaves this run's prediction
  // beside an earlier run's scores.json, and the error says so.
  try {
    write_file_atomically(predict_dir + "/scores.json", j.dump(2) + "\n");
  } catch (const Interrupted&) {
    throw;
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (the prediction in " + predict_dir +
                    " is this run's; its scores.json is an earlier run's, if any)",
                e.code());
  }
  spdlog::info("test RMSE of {} {:.3f} {} vs climatology {:.3f} {}: MSE skill score {:.3f} ({}); pooled over the {} "
               "observed values of the modelled boxes (evaluate's RMSE is the mean of each box's)",
               what, rmse, units, rmse_clim, units, skill, skill > 0 ? "beats climatology" : "does NOT beat climatology",
               s.count);
}

}  // namespace ds
