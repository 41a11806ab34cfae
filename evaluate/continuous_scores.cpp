#include "evaluate/continuous_scores.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "evaluate/domain_table.h"
#include "evaluate/indices.h"
#include "io/log.h"
#include "io/stop_signal.h"

namespace ds {

namespace {

struct Moments {
  double mo = NAN, mp = NAN, so = NAN, sp = NAN;
};

// Means and sample standard deviations (n - 1) of the pairs; RMSE and Pearson are indices.h's.
Moments moments(const Series& s) {
  Moments m;
  const size_t n = s.obs.size();
  if (n == 0) return m;
  double ao = 0, ap = 0;
  for (size_t i = 0; i < n; ++i) ao += s.obs[i], ap += s.pred[i];
  m.mo = ao / n;
  m.mp = ap / n;
  double oo = 0, pp = 0;
  for (size_t i = 0; i < n; ++i) {
    const double a = s.obs[i] - m.mo, b = s.pred[i] - m.mp;
    oo += a * a, pp += b * b;
  }
  if (n > 1) {
    m.so = std::sqrt(oo / (n - 1));
    m.sp = std::sqrt(pp / (n - 1));
  }
  return m;
}

double domain_mean(const std::vector<double>& v) {
  double s = 0;
  size_t n = 0;
  for (double x : v)
    if (std::isfinite(x)) s += x, ++n;
  return n ? s / n : NAN;
}


}  // namespace

ContinuousEvaluation evaluate_continuous(const std::vector<float>& obs, size_t np, const std::vector<uint8_t>& mask,
                                         const std::vector<ContinuousMethod>& methods, const std::string& variable,
                                         const std::string& units) {
  ContinuousEvaluation e;
  e.variable = variable;
  e.units = units;
  e.npoints = np;
  e.ndays = np ? obs.size() / np : 0;
  e.observed_mean.assign(np, NAN);
  e.observed_sd.assign(np, NAN);
  for (size_t k = 0; k < np; ++k) {
    if (!mask[k]) continue;
    const Moments m = moments(pair_series(obs, obs, np, k));
    e.observed_mean[k] = m.mo;
    e.observed_sd[k] = m.so;
  }
  e.observed_domain = {{"mean", domain_mean(e.observed_mean)}, {"sd", domain_mean(e.observed_sd)}};
  for (const auto& method : methods) {
    throw_if_stop_requested("scoring " + method.name + "; nothing written");
    ContinuousScores s;
    s.name = method.name;
    for (auto* v : {&s.mean, &s.bias, &s.rmse, &s.pearson, &s.sd_ratio}) v->assign(np, NAN);
    Progress progress("scoring " + method.name + " (boxes of the observation grid)", int64_t(np));  // a line every ~5 s
    for (size_t k = 0; k < np; ++k) {
      progress.advance();
      if (!mask[k]) continue;
      const Series pair = pair_series(obs, method.values, np, k);
      const Moments m = moments(pair);
      s.mean[k] = m.mp;
      s.bias[k] = m.mp - m.mo;
      s.rmse[k] = rmse(pair);
      s.pearson[k] = pearson(pair);
      s.sd_ratio[k] = m.so > 0 ? m.sp / m.so : NAN;
    }
    progress.done();
    s.domain = {{"bias", domain_mean(s.bias)},
                {"RMSE", domain_mean(s.rmse)},
                {"Pearson", domain_mean(s.pearson)},
                {"sd_ratio", domain_mean(s.sd_ratio)}};
    s.median = {{"bias", domain_median(s.bias)},
                {"RMSE", domain_median(s.rmse)},
                {"Pearson", domain_median(s.pearson)},
                {"sd_ratio", domain_median(s.sd_ratio)}};
    e.methods.push_back(std::move(s));
  }
  return e;
}

const std::vector<std::string>& continuous_score_names() {
  static const std::vector<std::string> names{"bias", "RMSE", "Pearson", "sd_ratio"};
  return names;
}

namespace {
std::vector<DomainRow> domain_rows(const ContinuousEvaluation& e) {
  std::vector<DomainRow> rows;
  for (const auto& m : e.methods) rows.push_back({m.name, 1, &m.domain, &m.median});
  return rows;
}
}  // namespace

std::string continuous_json(const ContinuousEvaluation& e, const std::vector<ContinuousSeason>& seasons,
                            const std::map<std::string, std::string>& about) {
  nlohmann::json j;
  for (const auto& [k, v] : about) j[k] = v;
  j["test_days"] = e.ndays;
  j["predictand"] = e.variable;
  j["units"] = e.units;
  j["medians"] = "each method's \"median\": the median over modelled boxes of the same per-box score";
  j["definitions"] = {
      {"bias", "mean over modelled boxes of mean(predicted) - mean(observed) (" + e.units + ")"},
      {"RMSE", "mean over modelled boxes of the root mean squared error of the daily values (" + e.units + ")"},
      {"Pearson", "mean over modelled boxes of the Pearson correlation of the daily series"},
      {"sd_ratio", "mean over modelled boxes of sd(predicted) / sd(observed) of the daily series"},
      {"observed", "the observations' mean and standard deviation of the daily values, each box's then averaged over "
                   "the modelled boxes (" + e.units + "; the mean of the boxes' sd, not the sd of all values)"},
      {"averaging", "every domain figure is the plain mean (or median) over the boxes, each box counting alike, not "
                    "weighted by its area"}};
  const auto rows = [](const ContinuousEvaluation& x) { return domain_rows(x); };
  add_domain_scores(j, e, rows);
  add_seasons_json(j, seasons, rows);
  return j.dump(2) + "\n";
}

std::string continuous_csv(const ContinuousEvaluation& e, const std::vector<ContinuousSeason>& seasons) {
  return domain_csv(continuous_score_names(), e, seasons, [](const ContinuousEvaluation& x) { return domain_rows(x); });
}

}  // namespace ds
