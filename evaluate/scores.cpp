#include "evaluate/scores.h"

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <sstream>

#include "evaluate/domain_table.h"
#include "evaluate/indices.h"
#include "io/error.h"
#include "io/log.h"
#include "io/stop_signal.h"

namespace ds {

namespace {

PointIndices indices_of(const std::vector<float>& obs, const std::vector<float>& x, size_t np,
                        const std::vector<uint8_t>& mask, const TestDays& days) {
  PointIndices r;
  for (size_t k = 0; k < np; ++k) {
    const Series s = mask[k] ? pair_series(obs, x, np, k) : Series{};
    r.mean.push_back(mean(s.pred));
    r.r01.push_back(wet_day_frequency(s.pred));
    r.sdii.push_back(sdii(s.pred));
    r.p98.push_back(percentile(s.pred, 0.98));
    r.p98_wet.push_back(wet_percentile(s.pred, 0.98));
    r.wet_spell.push_back(annual_max_spell(s.pred, s.time, days, Spell::wet));
    r.dry_spell.push_back(annual_max_spell(s.pred, s.time, days, Spell::dry));
  }
  return r;
}

// Mean over the points where the value is finite.
double domain_mean(const std::vector<double>& v) {
  double s = 0;
  size_t n = 0;
  for (double x : v)
    if (std::isfinite(x)) s += x, ++n;
  return n ? s / n : NAN;
}

// Per point (pred - obs) / obs, where obs > 0 (only those points).
std::vector<double> relative_bias(const std::vector<double>& pred, const std::vector<double>& obs) {
  std::vector<double> b;
  for (size_t k = 0; k < obs.size(); ++k)
    if (std::isfinite(obs[k]) && obs[k] > 0 && std::isfinite(pred[k])) b.push_back((pred[k] - obs[k]) / obs[k]);
  return b;
}

std::vector<double> absolute_bias(const std::vector<double>& pred, const std::vector<double>& obs) {
  std::vector<double> b;
  for (size_t k = 0; k < obs.size(); ++k) b.push_back(pred[k] - obs[k]);
  return b;
}

// The mean over members of a per-point value, over the members where it is defined: a member
// without a wet day at a box (SDII) or constant there (Spearman) does not void the others, as
// R.VALUE's wrapperFUN averages members with mean(..., na.rm = TRUE).
class MemberMean {
 public:
  void add(const std::vector<double>& v) {
    if (sum_.empty()) sum_.assign(v.size(), 0.0), n_.assign(v.size(), 0);
    for (size_t k = 0; k < v.size(); ++k)
      if (std::isfinite(v[k])) sum_[k] += v[k], ++n_[k];
  }
  std::vector<double> mean() const {
    std::vector<double> m(sum_.size(), NAN);
    for (size_t k = 0; k < m.size(); ++k)
      if (n_[k]) m[k] = sum_[k] / n_[k];
    return m;
  }

 private:
  std::vector<double> sum_;
  std::vector<int> n_;
};

}  // namespace

Evaluation evaluate_methods(const std::vector<float>& obs, size_t np, const std::vector<uint8_t>& mask,
                            const TestDays& days, const std::vector<Method>& methods) {
  Evaluation e;
  e.npoints = np;
  e.ndays = np ? obs.size() / np : 0;
  if (days.number.size() != e.ndays || days.year.size() != e.ndays)
    throw Error("evaluate: " + std::to_string(days.number.size()) + " test days for " + std::to_string(e.ndays) +
                " time steps of observations");
  e.observed = indices_of(obs, obs, np, mask, days);
  e.observed_domain = {{"mean", domain_mean(e.observed.mean)},
                       {"R01", domain_mean(e.observed.r01)},
                       {"SDII", domain_mean(e.observed.sdii)},
                       {"P98", domain_mean(e.observed.p98)},
                       {"P98Wet", domain_mean(e.observed.p98_wet)},
                       {"WetAnnualMaxSpell", domain_mean(e.observed.wet_spell)},
                       {"DryAnnualMaxSpell", domain_mean(e.observed.dry_spell)}};
  for (const Method& m : methods) {
    throw_if_stop_requested("scoring " + m.name + "; nothing written");
    MethodScores ms;
    ms.name = m.name;
    ms.members = static_cast<int>(m.members.size());
    // A line every ~5 s naming the method: the stochastic members of a large domain take minutes.
    Progress progress("scoring " + m.name + (ms.members > 1 ? " (boxes of the observation grid x members)" : " (boxes of the observation grid)"),
                      int64_t(np) * ms.members);
    MemberMean mean, r01, sdii, p98, p98_wet, wet_spell, dry_spell, rmse_all, rmse_wet_days, spear, roc_ss;
    for (int i = 0; i < ms.members; ++i) {
      const auto& x = m.members[i];
      const PointIndices pi = indices_of(obs, x, np, mask, days);
      mean.add(pi.mean);
      r01.add(pi.r01);
      sdii.add(pi.sdii);
      p98.add(pi.p98);
      p98_wet.add(pi.p98_wet);
      wet_spell.add(pi.wet_spell);
      dry_spell.add(pi.dry_spell);
      std::vector<double> rm(np, NAN), rw(np, NAN), sp(np, NAN), roc(np, NAN);
      const auto& score = m.wet_score.empty() ? x : m.wet_score;
      for (size_t k = 0; k < np; ++k) {
        progress.advance();
        if (!mask[k]) continue;
        const Series s = pair_series(obs, x, np, k);
        rm[k] = rmse(s);
        rw[k] = rmse_wet(s);
        sp[k] = spearman(s);
        const Series sc = pair_series(obs, score, np, k);
        roc[k] = roc_skill_score(sc.obs, sc.pred);
      }
      rmse_all.add(rm);
      rmse_wet_days.add(rw);
      spear.add(sp);
      roc_ss.add(roc);
    }
    ms.indices = {mean.mean(), r01.mean(), sdii.mean(), p98.mean(), p98_wet.mean(), wet_spell.mean(), dry_spell.mean()};
    ms.rmse = rmse_all.mean();
    ms.rmse_wet = rmse_wet_days.mean();
    ms.spearman = spear.mean();
    ms.rocss = roc_ss.mean();
    progress.done();
    // Per-box values of each score; the report gives their mean and median over the boxes (a
    // median is robust to the few boxes with an extreme relative bias where it hardly rains).
    const std::map<std::string, std::vector<double>> boxes{
        {"mean_relative_bias", relative_bias(ms.indices.mean, e.observed.mean)},
        {"R01_bias", absolute_bias(ms.indices.r01, e.observed.r01)},
        {"SDII_relative_bias", relative_bias(ms.indices.sdii, e.observed.sdii)},
        {"P98_relative_bias", relative_bias(ms.indices.p98, e.observed.p98)},
        // Relative for the amount, absolute (days) for the spells, as Bano-Medina et al. (2020)
        // score them (climate4R.value measures biasRel for P98, bias for the annual max spells).
        {"P98Wet_relative_bias", relative_bias(ms.indices.p98_wet, e.observed.p98_wet)},
        {"WetAnnualMaxSpell_bias", absolute_bias(ms.indices.wet_spell, e.observed.wet_spell)},
        {"DryAnnualMaxSpell_bias", absolute_bias(ms.indices.dry_spell, e.observed.dry_spell)},
        {"RMSE", ms.rmse},
        {"RMSE_wet", ms.rmse_wet},
        {"Spearman", ms.spearman},
        {"ROCSS", ms.rocss}};
    for (const auto& [name, v] : boxes) {
      ms.domain[name] = domain_mean(v);
      ms.median[name] = domain_median(v);
    }
    e.methods.push_back(std::move(ms));
  }
  return e;
}

const std::vector<std::string>& score_names() {
  static const std::vector<std::string> names{"mean_relative_bias",   "R01_bias",     "SDII_relative_bias",
                                              "P98_relative_bias",    "P98Wet_relative_bias",
                                              "WetAnnualMaxSpell_bias", "DryAnnualMaxSpell_bias",
                                              "RMSE",                 "RMSE_wet",     "Spearman",
                                              "ROCSS"};
  return names;
}


namespace {
std::vector<DomainRow> domain_rows(const Evaluation& e) {
  std::vector<DomainRow> rows;
  for (const auto& m : e.methods) rows.push_back({m.name, m.members, &m.domain, &m.median});
  return rows;
}
}  // namespace

std::string evaluation_json(const Evaluation& e, const std::vector<SeasonEvaluation>& seasons,
                            const std::map<std::string, std::string>& about) {
  nlohmann::json j;
  for (const auto& [k, v] : about) j[k] = v;
  j["test_days"] = e.ndays;
  j["wet_day_threshold_mm"] = kWetDay;
  j["medians"] = "each method's \"median\": the median over land boxes of the same per-box score";
  j["definitions"] = {
      {"mean_relative_bias", "land-box mean of (predicted - observed) / observed mean precipitation"},
      {"R01_bias", "land-box mean of predicted - observed wet-day (>= 1 mm) frequency"},
      {"SDII_relative_bias", "relative bias of the mean wet-day (>= 1 mm) amount"},
      {"P98_relative_bias", "relative bias of the 98th percentile of all days"},
      {"P98Wet_relative_bias", "relative bias of the 98th percentile of the wet (>= 1 mm) days"},
      {"WetAnnualMaxSpell_bias",
       "land-box mean of predicted - observed median over the years of the annual longest wet (>= 1 mm) spell (days)"},
      {"DryAnnualMaxSpell_bias",
       "land-box mean of predicted - observed median over the years of the annual longest dry (< 1 mm) spell (days)"},
      {"RMSE", "land-box mean of the root mean squared error (mm/day)"},
      {"RMSE_wet", "RMSE over observed wet days (mm/day)"},
      {"Spearman", "land-box mean of the Spearman rank correlation of the daily series"},
      {"ROCSS", "ROC skill score (2 AUC - 1) of the wet-day probability or amount for observed wet days"},
      {"observed", "the observations' indices, each box's then averaged over the land boxes: mean (mm/day), R01 "
                   "(wet-day frequency, 0..1), SDII (mean wet-day amount, mm/day), P98 and P98Wet (mm/day), "
                   "WetAnnualMaxSpell and DryAnnualMaxSpell (days)"},
      {"averaging", "every domain figure is the plain mean (or median) over the boxes, each box counting alike, not "
                    "weighted by its area"}};
  const auto rows = [](const Evaluation& x) { return domain_rows(x); };
  add_domain_scores(j, e, rows);
  add_seasons_json(j, seasons, rows);
  return j.dump(2) + "\n";
}

std::string evaluation_csv(const Evaluation& e, const std::vector<SeasonEvaluation>& seasons) {
  return domain_csv(score_names(), e, seasons, [](const Evaluation& x) { return domain_rows(x); });
}

}  // namespace ds
