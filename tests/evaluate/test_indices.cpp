// Each index against values worked out by hand on small series (the arithmetic is in the
// comments). Tolerance 1e-12: the sums are exact or nearly so in double.
#include <gtest/gtest.h>

#include <cmath>

#include "evaluate/indices.h"
#include "evaluate/scores.h"

using namespace ds;

namespace {
// n consecutive days of one year: spells that neither a year's end nor a gap cuts.
TestDays consecutive_days(size_t n) {
  TestDays d;
  for (size_t i = 0; i < n; ++i) d.number.push_back(static_cast<int64_t>(i)), d.year.push_back(2000);
  return d;
}
}  // namespace

TEST(Indices, MeanFrequencyIntensityPercentile) {
  const std::vector<double> x{0, 0.5, 1, 3, 10, 0, 2};
  EXPECT_NEAR(mean(x), 16.5 / 7, 1e-12);
  EXPECT_NEAR(wet_day_frequency(x), 4.0 / 7, 1e-12);  // 1, 3, 10, 2 reach 1 mm
  EXPECT_NEAR(sdii(x), 16.0 / 4, 1e-12);
  // Sorted: 0 0 0.5 1 2 3 10; h = 6 * 0.98 = 5.88 -> 3 + 0.88 * (10 - 3) = 9.16 (R type 7).
  EXPECT_NEAR(percentile(x, 0.98), 9.16, 1e-12);
  EXPECT_NEAR(percentile(x, 0.5), 1.0, 1e-12);
  EXPECT_TRUE(std::isnan(sdii({0, 0.2})));
  EXPECT_TRUE(std::isnan(mean({})));
}

TEST(Indices, ErrorsAndCorrelation) {
  Series s{{0, 2, 4, 6}, {1, 2, 5, 4}};
  // Errors 1, 0, 1, -2: MSE 6/4.
  EXPECT_NEAR(rmse(s), std::sqrt(1.5), 1e-12);
  // Observed wet days 2, 4, 6: errors 0, 1, -2 -> MSE 5/3.
  EXPECT_NEAR(rmse_wet(s), std::sqrt(5.0 / 3), 1e-12);
  // Deviations -3 -1 1 3 and -2 -1 2 1: 12 / sqrt(20 * 10).
  EXPECT_NEAR(pearson(s), 12 / std::sqrt(200.0), 1e-12);
  EXPECT_TRUE(std::isnan(pearson({{1, 2, 3}, {5, 5, 5}})));
  EXPECT_TRUE(std::isnan(pearson({{1}, {2}})));
  // Ranks obs 1 2 3 4, pred 1 2 4 3: d^2 = 0 0 1 1 -> 1 - 6 * 2 / (4 * 15) = 0.8.
  EXPECT_NEAR(spearman(s), 0.8, 1e-12);
  // Ties share ranks: pred 1 1 2 3 -> ranks 1.5 1.5 3 4, Pearson with 1 2 3 4 = 0.9486832980505138.
  EXPECT_NEAR(spearman({{0, 2, 4, 6}, {1, 1, 2, 3}}), 0.9486832980505138, 1e-12);
  EXPECT_TRUE(std::isnan(spearman({{1, 2, 3}, {5, 5, 5}})));
}

TEST(Indices, RocSkillScore) {
  // Wet days (obs >= 1) all score higher than dry ones: AUC 1, ROCSS 1; reversed: -1.
  EXPECT_NEAR(roc_skill_score({0, 0, 2, 3}, {0.1, 0.2, 0.8, 0.9}), 1.0, 1e-12);
  EXPECT_NEAR(roc_skill_score({0, 0, 2, 3}, {0.9, 0.8, 0.2, 0.1}), -1.0, 1e-12);
  // Constant score: AUC 0.5, ROCSS 0.
  EXPECT_NEAR(roc_skill_score({0, 5, 0, 5}, {0.3, 0.3, 0.3, 0.3}), 0.0, 1e-12);
  // Pairs (wet, dry): wet scores {0.6, 0.2}, dry {0.4, 0.1}: 0.6>0.4, 0.6>0.1, 0.2<0.4, 0.2>0.1
  // -> AUC 3/4, ROCSS 0.5.
  EXPECT_NEAR(roc_skill_score({1, 0, 1, 0}, {0.6, 0.4, 0.2, 0.1}), 0.5, 1e-12);
  EXPECT_TRUE(std::isnan(roc_skill_score({0, 0}, {0.1, 0.2})));
}

TEST(Indices, MissingValuesAreSkippedPairwise) {
  // Two points, four days (time-major): both points miss the observation of day 1, point 0
  // also misses the prediction of day 2.
  const std::vector<float> obs{1, 2, NAN, NAN, 3, 6, 5, 8};
  const std::vector<float> pred{2, 2, 3, 4, NAN, 6, 5, 9};
  const Series s0 = pair_series(obs, pred, 2, 0), s1 = pair_series(obs, pred, 2, 1);
  EXPECT_EQ(s0.obs, (std::vector<double>{1, 5}));
  EXPECT_EQ(s0.pred, (std::vector<double>{2, 5}));
  EXPECT_EQ(s1.obs, (std::vector<double>{2, 6, 8}));
  EXPECT_EQ(s1.pred, (std::vector<double>{2, 6, 9}));
}

TEST(Scores, DomainAveragesOverLandAndMembers) {
  // Two points (the second is ocean), three days.
  const std::vector<float> obs{2, NAN, 0, NAN, 4, NAN};
  Method perfect{"perfect", {obs}, {}};
  Method twice{"twice", {{4, NAN, 0, NAN, 8, NAN}}, {}};
  // Two members whose means are 1 and 3 mm/day: member-averaged mean 2 = observed -> bias 0.
  Method ens{"ens", {{1, NAN, 1, NAN, 1, NAN}, {3, NAN, 3, NAN, 3, NAN}}, {}};
  const Evaluation e = evaluate_methods(obs, 2, {1, 0}, consecutive_days(3), {perfect, twice, ens});
  EXPECT_NEAR(e.observed_domain.at("mean"), 2.0, 1e-12);
  EXPECT_NEAR(e.methods[0].domain.at("RMSE"), 0.0, 1e-12);
  EXPECT_NEAR(e.methods[0].domain.at("mean_relative_bias"), 0.0, 1e-12);
  EXPECT_NEAR(e.methods[1].domain.at("mean_relative_bias"), 1.0, 1e-12);  // (4 - 2) / 2
  EXPECT_NEAR(e.methods[1].domain.at("R01_bias"), 0.0, 1e-12);           // both 2/3
  EXPECT_NEAR(e.methods[1].domain.at("SDII_relative_bias"), 1.0, 1e-12);  // 6 vs 3
  EXPECT_EQ(e.methods[2].members, 2);
  EXPECT_NEAR(e.methods[2].domain.at("mean_relative_bias"), 0.0, 1e-12);
  // Member RMSEs: sqrt((1+1+9)/3) and sqrt((1+9+1)/3), averaged.
  EXPECT_NEAR(e.methods[2].domain.at("RMSE"), std::sqrt(11.0 / 3), 1e-12);
  EXPECT_NE(evaluation_csv(e).find("twice,1,1,0,1,"), std::string::npos) << evaluation_csv(e);
}

TEST(Scores, MemberMeanSkipsMembersWhereAnIndexIsUndefined) {
  // One box, four days. Member "dry" never reaches 1 mm and is constant, so its SDII and Spearman
  // are undefined; R.VALUE averages members with na.rm = TRUE, so the box takes member "wet"'s
  // values instead of NaN: SDII (2 + 6) / 2 = 4, Spearman 1 (same order as the observations).
  const std::vector<float> obs{0, 2, 4, 6};
  Method ens{"ens", {{0, 0, 2, 6}, {0.5, 0.5, 0.5, 0.5}}, {}};
  const Evaluation e = evaluate_methods(obs, 1, {1}, consecutive_days(4), {ens});
  const MethodScores& m = e.methods[0];
  EXPECT_NEAR(m.indices.sdii[0], 4.0, 1e-12);
  // Ranks obs 1 2 3 4, member "wet" 1.5 1.5 3 4: Pearson 0.9486832980505138 (as ErrorsAndCorrelation).
  EXPECT_NEAR(m.spearman[0], 0.9486832980505138, 1e-12);
  // Defined for both members: the plain mean. R01 (1/2 + 0) / 2; mean (2 + 0.5) / 2.
  EXPECT_NEAR(m.indices.r01[0], 0.25, 1e-12);
  EXPECT_NEAR(m.indices.mean[0], 1.25, 1e-12);
  // SDII relative bias over the one box: observed SDII (2 + 4 + 6) / 3 = 4 -> 0.
  EXPECT_NEAR(m.domain.at("SDII_relative_bias"), 0.0, 1e-12);
}

TEST(Indices, WetDayPercentile) {
  // Wet days of the series of MeanFrequencyIntensityPercentile, sorted: 1 2 3 10;
  // h = 3 * 0.98 = 2.94 -> 3 + 0.94 * (10 - 3) = 9.58 (R type 7 on the wet days only).
  EXPECT_NEAR(wet_percentile({0, 0.5, 1, 3, 10, 0, 2}, 0.98), 9.58, 1e-12);
  EXPECT_TRUE(std::isnan(wet_percentile({0, 0.9}, 0.98)));
}

namespace {
// The spell of days[i] = date i of `dates`, all present.
double spell(const std::vector<double>& x, const std::vector<Date>& dates, Spell kind) {
  std::vector<int64_t> numbers;
  for (const Date& d : dates) numbers.push_back(days_from_date(d, Calendar::standard));
  std::vector<size_t> time(x.size());
  for (size_t i = 0; i < time.size(); ++i) time[i] = i;
  return annual_max_spell(x, time, test_days(numbers, Calendar::standard), kind);
}
}  // namespace

TEST(Indices, AnnualMaxSpellEndsAtTheYearsEnd) {
  // 29 Dec 2000 .. 3 Jan 2001: 0 2 3 | 4 0 0 0. The wet run 2 3 4 crosses 1 January: 2000's
  // longest wet spell is 2 days, 2001's 1 (not 3); median of {2, 1} = 1.5. Dry: {1, 3} -> 2.
  const std::vector<Date> d{{2000, 12, 29}, {2000, 12, 30}, {2000, 12, 31}, {2001, 1, 1},
                            {2001, 1, 2},   {2001, 1, 3},   {2001, 1, 4}};
  const std::vector<double> x{0, 2, 3, 4, 0, 0, 0};
  EXPECT_EQ(spell(x, d, Spell::wet), 1.5);
  EXPECT_EQ(spell(x, d, Spell::dry), 2.0);
}

TEST(Indices, AnnualMaxSpellOfAYearWithoutWetDays) {
  // 2003: 2 2 0 (wet 2, dry 1); 2004: 0 0 0 (wet 0, dry 3). Median of {2, 0} = 1, of {1, 3} = 2.
  // (R.VALUE's max() of no spell would be -Inf and void the median.)
  const std::vector<Date> d{{2003, 6, 1}, {2003, 6, 2}, {2003, 6, 3}, {2004, 6, 1}, {2004, 6, 2}, {2004, 6, 3}};
  const std::vector<double> x{2, 2, 0, 0, 0.5, 0.9};
  EXPECT_EQ(spell(x, d, Spell::wet), 1.0);
  EXPECT_EQ(spell(x, d, Spell::dry), 2.0);
  // Three years: the middle one. No day at all: undefined.
  EXPECT_EQ(spell({2, 0, 5, 5, 5}, {{2001, 1, 1}, {2002, 1, 1}, {2003, 1, 1}, {2003, 1, 2}, {2003, 1, 3}}, Spell::wet),
            1.0);
  EXPECT_TRUE(std::isnan(annual_max_spell({}, {}, TestDays{}, Spell::wet)));
}

TEST(Indices, AnnualMaxSpellEndsAtAMissingDay) {
  // Six consecutive wet days, the third unobserved: pair_series drops it, leaving runs of 2 and 3
  // days (not 5). A gap in the day numbers (between two seasons) cuts the same way.
  const std::vector<float> obs{2, 2, NAN, 2, 2, 2};
  const Series s = pair_series(obs, obs, 1, 0);
  EXPECT_EQ(s.time, (std::vector<size_t>{0, 1, 3, 4, 5}));
  const TestDays days{{0, 1, 2, 3, 4, 5}, {2000, 2000, 2000, 2000, 2000, 2000}};
  EXPECT_EQ(annual_max_spell(s.pred, s.time, days, Spell::wet), 3.0);
  EXPECT_EQ(annual_max_spell(s.pred, s.time, days, Spell::dry), 0.0);
  const TestDays seasons{{0, 1, 90, 91, 92, 93}, {2000, 2000, 2000, 2000, 2000, 2000}};
  EXPECT_EQ(annual_max_spell({2, 2, 2, 2, 2, 2}, {0, 1, 2, 3, 4, 5}, seasons, Spell::wet), 4.0);
}

TEST(Scores, WetPercentileAndSpellBiases) {
  // One box, four days of one year. Observed 2 2 0 0: P98Wet 2, wet spell 2, dry spell 2.
  // "alternate" 2 0 2 0: P98Wet 2 (bias 0), spells 1 and 1 (biases -1 day each).
  // "twice" 4 4 0 0: P98Wet 4 (relative bias 1), spells as observed (biases 0).
  const std::vector<float> obs{2, 2, 0, 0};
  const Evaluation e = evaluate_methods(obs, 1, {1}, consecutive_days(4),
                                        {{"alternate", {{2, 0, 2, 0}}, {}}, {"twice", {{4, 4, 0, 0}}, {}}});
  EXPECT_EQ(e.observed_domain.at("P98Wet"), 2.0);
  EXPECT_EQ(e.observed_domain.at("WetAnnualMaxSpell"), 2.0);
  EXPECT_EQ(e.observed_domain.at("DryAnnualMaxSpell"), 2.0);
  EXPECT_NEAR(e.methods[0].domain.at("P98Wet_relative_bias"), 0.0, 1e-12);
  EXPECT_EQ(e.methods[0].domain.at("WetAnnualMaxSpell_bias"), -1.0);
  EXPECT_EQ(e.methods[0].domain.at("DryAnnualMaxSpell_bias"), -1.0);
  EXPECT_NEAR(e.methods[1].domain.at("P98Wet_relative_bias"), 1.0, 1e-12);
  EXPECT_EQ(e.methods[1].domain.at("WetAnnualMaxSpell_bias"), 0.0);
  EXPECT_EQ(e.methods[1].median.at("DryAnnualMaxSpell_bias"), 0.0);
}
