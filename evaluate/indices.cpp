#include "evaluate/indices.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ds {

Series pair_series(const std::vector<float>& obs, const std::vector<float>& pred, size_t np, size_t k) {
  Series s;
  for (size_t i = k; i < obs.size(); i += np)
    if (std::isfinite(obs[i]) && std::isfinite(pred[i])) {
      s.obs.push_back(obs[i]);
      s.pred.push_back(pred[i]);
      s.time.push_back(i / np);
    }
  return s;
}

double mean(const std::vector<double>& x) {
  return x.empty() ? NAN : std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
}

double wet_day_frequency(const std::vector<double>& x) {
  if (x.empty()) return NAN;
  return static_cast<double>(std::count_if(x.begin(), x.end(), [](double v) { return v >= kWetDay; })) / x.size();
}

double sdii(const std::vector<double>& x) {
  double sum = 0;
  size_t n = 0;
  for (double v : x)
    if (v >= kWetDay) sum += v, ++n;
  return n ? sum / static_cast<double>(n) : NAN;
}

double percentile(std::vector<double> x, double q) {
  if (x.empty()) return NAN;
  std::sort(x.begin(), x.end());
  const double h = (x.size() - 1) * q;
  const size_t lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, x.size() - 1);
  return x[lo] + (h - lo) * (x[hi] - x[lo]);
}

double wet_percentile(const std::vector<double>& x, double q) {
  std::vector<double> wet;
  for (double v : x)
    if (v >= kWetDay) wet.push_back(v);
  return percentile(std::move(wet), q);
}

TestDays test_days(const std::vector<int64_t>& numbers, Calendar calendar) {
  TestDays d;
  d.number = numbers;
  for (int64_t n : numbers) d.year.push_back(date_from_days(n, calendar).year);
  return d;
}

double annual_max_spell(const std::vector<double>& x, const std::vector<size_t>& time, const TestDays& days,
                        Spell kind) {
  std::vector<double> annual_max;  // one per year, in the order of the days
  int run = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t t = time[i];
    const bool new_year = i == 0 || days.year[t] != days.year[time[i - 1]];
    // The day before is missing (or of a gap between seasons): the spell ends there.
    const bool follows = !new_year && days.number[t] == days.number[time[i - 1]] + 1;
    if (new_year) annual_max.push_back(0);
    if (!follows) run = 0;
    const bool in_spell = kind == Spell::wet ? x[i] >= kWetDay : x[i] < kWetDay;
    run = in_spell ? run + 1 : 0;
    annual_max.back() = std::max(annual_max.back(), double(run));
  }
  return percentile(std::move(annual_max), 0.5);
}

double domain_median(const std::vector<double>& v) {
  std::vector<double> finite;
  for (double x : v)
    if (std::isfinite(x)) finite.push_back(x);
  return percentile(std::move(finite), 0.5);
}

double rmse(const Series& s) {
  if (s.obs.empty()) return NAN;
  double se = 0;
  for (size_t i = 0; i < s.obs.size(); ++i) se += (s.pred[i] - s.obs[i]) * (s.pred[i] - s.obs[i]);
  return std::sqrt(se / static_cast<double>(s.obs.size()));
}

double rmse_wet(const Series& s) {
  Series w;
  for (size_t i = 0; i < s.obs.size(); ++i)
    if (s.obs[i] >= kWetDay) w.obs.push_back(s.obs[i]), w.pred.push_back(s.pred[i]);
  return rmse(w);
}

namespace {
// Ranks 1..n with ties sharing their average rank.
std::vector<double> ranks(const std::vector<double>& x) {
  std::vector<size_t> idx(x.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
  std::vector<double> r(x.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && x[idx[j + 1]] == x[idx[i]]) ++j;
    const double avg = (i + j) / 2.0 + 1.0;
    for (size_t k = i; k <= j; ++k) r[idx[k]] = avg;
    i = j + 1;
  }
  return r;
}
double correlation(const std::vector<double>& a, const std::vector<double>& b) {
  const double ma = mean(a), mb = mean(b);
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return (saa > 0 && sbb > 0) ? sab / std::sqrt(saa * sbb) : NAN;
}
}  // namespace

double pearson(const Series& s) {
  if (s.obs.size() < 2) return NAN;
  return correlation(s.obs, s.pred);
}

double spearman(const Series& s) {
  if (s.obs.size() < 2) return NAN;
  return correlation(ranks(s.obs), ranks(s.pred));
}

double roc_skill_score(const std::vector<double>& obs, const std::vector<double>& score) {
  // AUC by the Mann-Whitney statistic: the probability that a random wet day scores higher than
  // a random dry day, ties counting one half (average ranks do exactly that).
  const auto r = ranks(score);
  double wet_rank_sum = 0;
  size_t n_wet = 0;
  for (size_t i = 0; i < obs.size(); ++i)
    if (obs[i] >= kWetDay) wet_rank_sum += r[i], ++n_wet;
  const size_t n_dry = obs.size() - n_wet;
  if (n_wet == 0 || n_dry == 0) return NAN;
  const double auc = (wet_rank_sum - n_wet * (n_wet + 1) / 2.0) / (static_cast<double>(n_wet) * n_dry);
  return 2 * auc - 1;
}

}  // namespace ds
