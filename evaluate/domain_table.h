// The per-method domain scores (means and medians over the modelled boxes) as they appear in
// scores.json and scores.csv: one writer for the precipitation and the continuous evaluations.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ds {

struct DomainRow {
  std::string name;
  int members = 1;
  const std::map<std::string, double>* domain = nullptr;  // score -> mean over boxes
  const std::map<std::string, double>* median = nullptr;  // score -> median over boxes
};

// A JSON number, or null for NaN/Inf (JSON has neither).
nlohmann::json json_number(double v);
// j["methods"][name] = {members, every domain score, "median": {...}} for each row.
void add_domain_methods(nlohmann::json& j, const std::vector<DomainRow>& rows);
// "method,members,<score>...,<score>_median..." then one line per row, scores in `names` order.
std::string domain_scores_csv(const std::vector<std::string>& names, const std::vector<DomainRow>& rows);

// One season's evaluation (evaluate/seasons.h) besides the annual one: E is Evaluation or
// ContinuousEvaluation, computed on the season's test days only.
template <class E>
struct SeasonOf {
  std::string season;       // DJF, MAM, JJA, SON
  std::vector<int> months;  // its calendar months
  E evaluation;
};
// scores.csv with seasons: one table in long form, a leading `season` column ("annual" first,
// then each season's rows), from each season's domain_scores_csv text (all of one header).
// One file rather than scores_<season>.csv siblings: pandas.read_csv / R read.csv give one data
// frame to filter or facet by season (df[df.season == "DJF"], subset(d, season == "DJF")).
std::string csv_with_season_column(const std::vector<std::pair<std::string, std::string>>& csv_by_season);

// The parts of scores.json and scores.csv that both evaluations (E: Evaluation or
// ContinuousEvaluation, with ndays and observed_domain) write alike; rows(e) is E's DomainRows.
// j["observed"] and j["methods"] of one evaluation.
template <class E, class Rows>
void add_domain_scores(nlohmann::json& j, const E& e, Rows rows) {
  for (const auto& [k, v] : e.observed_domain) j["observed"][k] = json_number(v);
  add_domain_methods(j, rows(e));
}
// j["seasons"][season] = {months, test_days, observed, methods} for each season.
template <class E, class Rows>
void add_seasons_json(nlohmann::json& j, const std::vector<SeasonOf<E>>& seasons, Rows rows) {
  for (const SeasonOf<E>& s : seasons) {
    nlohmann::json sj;
    sj["months"] = s.months;
    sj["test_days"] = s.evaluation.ndays;
    add_domain_scores(sj, s.evaluation, rows);
    j["seasons"][s.season] = sj;
  }
}
// scores.csv: the annual table as it is without seasons, else in long form with a season column.
template <class E, class Rows>
std::string domain_csv(const std::vector<std::string>& names, const E& annual,
                       const std::vector<SeasonOf<E>>& seasons, Rows rows) {
  const std::string table = domain_scores_csv(names, rows(annual));
  if (seasons.empty()) return table;
  std::vector<std::pair<std::string, std::string>> by_season{{"annual", table}};
  for (const SeasonOf<E>& s : seasons) by_season.push_back({s.season, domain_scores_csv(names, rows(s.evaluation))});
  return csv_with_season_column(by_season);
}

}  // namespace ds
