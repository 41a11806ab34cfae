// The seasons of evaluate.seasons (evaluate/seasons.h): the test days of a season's calendar
// months, DJF across the year boundary, and the spells of a season subset cut at the gap
// between its days. Exact comparisons: day counts and selected values, no arithmetic.
#include <gtest/gtest.h>

#include "evaluate/domain_table.h"
#include "evaluate/indices.h"
#include "evaluate/scores.h"
#include "evaluate/seasons.h"
#include "io/error.h"

using namespace ds;

namespace {
int64_t day(int y, int m, int d) { return days_from_date({y, m, d}, Calendar::standard); }
// Every day from first to last inclusive.
std::vector<int64_t> days_between(int64_t first, int64_t last) {
  std::vector<int64_t> d;
  for (int64_t n = first; n <= last; ++n) d.push_back(n);
  return d;
}
}  // namespace

TEST(Seasons, NamesAndMonths) {
  EXPECT_EQ(season_names(), (std::vector<std::string>{"annual", "DJF", "MAM", "JJA", "SON"}));
  EXPECT_EQ(season_months("DJF"), (std::vector<int>{12, 1, 2}));
  EXPECT_EQ(season_months("SON"), (std::vector<int>{9, 10, 11}));
  EXPECT_EQ(season_months("annual").size(), 12u);
  EXPECT_THROW(season_months("djf"), Error);
}

TEST(Seasons, DjfTakesDecemberAndTheNextJanuaryAndFebruary) {
  // 2000-11-30 .. 2001-03-01: DJF is 2000-12-01 .. 2001-02-28 (90 days), whichever year.
  const auto days = days_between(day(2000, 11, 30), day(2001, 3, 1));
  const auto month = months_of(days, Calendar::standard);
  const auto djf = steps_in_months(month, season_months("DJF"));
  ASSERT_EQ(djf.size(), 31u + 31u + 28u);
  EXPECT_EQ(days[djf.front()], day(2000, 12, 1));
  EXPECT_EQ(days[djf.back()], day(2001, 2, 28));
  // The year boundary inside the season: 31 December is followed by 1 January among the steps.
  EXPECT_EQ(days[djf[31]], day(2001, 1, 1));
  EXPECT_EQ(steps_in_months(month, season_months("MAM")).size(), 1u);  // 1 March
  EXPECT_EQ(steps_in_months(month, season_months("JJA")).size(), 0u);
  EXPECT_EQ(steps_in_months(month, season_months("annual")).size(), days.size());
}

TEST(Seasons, SelectStepsKeepsRowsAndDays) {
  // 3 days x 2 points; steps 0 and 2.
  const std::vector<float> x{1, 2, 3, 4, 5, 6};
  EXPECT_EQ(select_steps(x, 2, {0, 2}), (std::vector<float>{1, 2, 5, 6}));
  const TestDays d = test_days({10, 11, 12}, Calendar::standard);
  const TestDays s = select_days(d, {0, 2});
  EXPECT_EQ(s.number, (std::vector<int64_t>{10, 12}));
  EXPECT_EQ(s.year, (std::vector<int>{1970, 1970}));
}

TEST(Seasons, SpellsOfASeasonSubsetEndAtTheGapBetweenItsDays) {
  // A test year 2004 (leap) wet every day. Its DJF is 1 Jan .. 29 Feb (60 days) and 1 .. 31 Dec
  // (31 days), one calendar year: the longest wet spell is 60, not 91, since 29 February and
  // 1 December are not consecutive days.
  const auto all = days_between(day(2004, 1, 1), day(2004, 12, 31));
  const TestDays days = test_days(all, Calendar::standard);
  const auto djf = steps_in_months(months_of(all, Calendar::standard), season_months("DJF"));
  ASSERT_EQ(djf.size(), 91u);
  const TestDays in_season = select_days(days, djf);
  std::vector<double> wet(djf.size(), 5.0);
  std::vector<size_t> time(djf.size());
  for (size_t i = 0; i < time.size(); ++i) time[i] = i;
  EXPECT_EQ(annual_max_spell(wet, time, in_season, Spell::wet), 60.0);
  EXPECT_EQ(annual_max_spell(wet, time, in_season, Spell::dry), 0.0);
  // DJF across the boundary of two test years (Dec 2003, Jan-Feb 2004) is cut at 1 January, as
  // the annual spells are: years 2003 (31 days) and 2004 (60 days), median 45.5.
  const auto two = days_between(day(2003, 12, 1), day(2004, 2, 29));
  const TestDays d2 = test_days(two, Calendar::standard);
  std::vector<size_t> t2(two.size());
  for (size_t i = 0; i < t2.size(); ++i) t2[i] = i;
  EXPECT_EQ(annual_max_spell(std::vector<double>(two.size(), 5.0), t2, d2, Spell::wet), 45.5);
}

TEST(Seasons, SeasonalEvaluationOnlySeesTheSeasonsDays) {
  // One land box, 2004-01-01 .. 2004-12-31: 10 mm on DJF days, 0 otherwise; the prediction 5 mm
  // on every day. DJF: observed mean 10, predicted 5 (relative bias -0.5); JJA: observed 0.
  const auto all = days_between(day(2004, 1, 1), day(2004, 12, 31));
  const auto month = months_of(all, Calendar::standard);
  std::vector<float> obs(all.size()), pred(all.size(), 5.0f);
  for (size_t t = 0; t < all.size(); ++t) obs[t] = (month[t] == 12 || month[t] <= 2) ? 10.0f : 0.0f;
  const TestDays days = test_days(all, Calendar::standard);
  const auto djf = steps_in_months(month, season_months("DJF"));
  const Evaluation e = evaluate_methods(select_steps(obs, 1, djf), 1, {1}, select_days(days, djf),
                                        {Method{"m", {select_steps(pred, 1, djf)}, {}}});
  EXPECT_EQ(e.ndays, 91u);
  EXPECT_EQ(e.observed_domain.at("mean"), 10.0);
  EXPECT_EQ(e.observed_domain.at("WetAnnualMaxSpell"), 60.0);
  EXPECT_EQ(e.methods[0].domain.at("mean_relative_bias"), -0.5);
  EXPECT_EQ(e.methods[0].domain.at("RMSE"), 5.0);
}

TEST(Seasons, JsonAndCsvCarryTheSeasonsBesideTheAnnualFigures) {
  const auto all = days_between(day(2004, 1, 1), day(2004, 1, 10));
  const TestDays days = test_days(all, Calendar::standard);
  const std::vector<float> obs(all.size(), 2.0f);
  const std::vector<Method> methods{{"m", {std::vector<float>(all.size(), 3.0f)}, {}}};
  const Evaluation e = evaluate_methods(obs, 1, {1}, days, methods);
  const std::vector<SeasonEvaluation> seasons{{"DJF", {12, 1, 2}, e}};
  // Without seasons: as before (no season column, no "seasons" object).
  EXPECT_EQ(evaluation_csv(e, {}), evaluation_csv(e));
  EXPECT_EQ(evaluation_json(e).find("seasons"), std::string::npos);
  const std::string csv = evaluation_csv(e, seasons);
  EXPECT_EQ(csv.rfind("season,method,members,mean_relative_bias,", 0), 0u) << csv;
  EXPECT_NE(csv.find("\nannual,m,1,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nDJF,m,1,"), std::string::npos) << csv;
  const auto j = nlohmann::json::parse(evaluation_json(e, seasons));
  EXPECT_EQ(j["test_days"], 10);
  EXPECT_EQ(j["seasons"]["DJF"]["test_days"], 10);
  EXPECT_EQ(j["seasons"]["DJF"]["months"], nlohmann::json({12, 1, 2}));
  EXPECT_EQ(j["seasons"]["DJF"]["methods"]["m"]["mean_relative_bias"], 0.5);
  EXPECT_EQ(j["methods"]["m"]["mean_relative_bias"], 0.5);
}
