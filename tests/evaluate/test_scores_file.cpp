// evaluate/scores.nc and the medians of the report, on a 1 x 3 grid worked out by hand.
// Tolerances: values go through float32 in the file (relative 1e-6); medians are exact in double.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "evaluate/indices.h"
#include "evaluate/scores.h"
#include "evaluate/scores_file.h"
#include "io/calendar.h"
#include "io/netcdf_file.h"
#include "support/log_capture.h"
#include "support/test_support.h"

using namespace ds;

namespace {

// Three points (the third is ocean), two days; a method that doubles the observations.
Evaluation small_evaluation() {
  const std::vector<float> obs{2, 4, NAN, 6, 8, NAN};
  Method twice{"twice", {{4, 8, NAN, 12, 16, NAN}}, {}};
  return evaluate_methods(obs, 3, {1, 1, 0}, {{12418, 12419}, {2004, 2004}}, {twice});
}

// small_evaluation's fields on its 1 x 3 grid, over `days`.
ScoresFile small_scores_file(std::vector<int64_t> days) {
  ScoresFile f;
  f.lat = {40};
  f.lon = {-100, -99.5, -99};
  f.days = std::move(days);
  f.title = "test";
  f.fields = precipitation_score_fields(small_evaluation());
  return f;
}

}  // namespace

TEST(ScoresFile, MediansOverBoxesInTheReport) {
  EXPECT_NEAR(domain_median({3, NAN, 1, 2}), 2.0, 0);
  EXPECT_NEAR(domain_median({4, 1, NAN}), 2.5, 0);
  EXPECT_TRUE(std::isnan(domain_median({NAN})));
  const Evaluation e = small_evaluation();
  // Per-box RMSE of doubling: sqrt((2^2 + 6^2) / 2) = sqrt(20) and sqrt((4^2 + 8^2) / 2) = sqrt(40).
  EXPECT_NEAR(e.methods[0].median.at("RMSE"), 0.5 * (std::sqrt(20.0) + std::sqrt(40.0)), 1e-12);
  EXPECT_NEAR(e.methods[0].median.at("mean_relative_bias"), 1.0, 1e-12);
  const auto j = nlohmann::json::parse(evaluation_json(e));
  EXPECT_NEAR(j["methods"]["twice"]["median"]["RMSE"].get<double>(), e.methods[0].median.at("RMSE"), 1e-12);
  EXPECT_NE(evaluation_csv(e).find(",RMSE_median,"), std::string::npos) << evaluation_csv(e);
}

TEST(ScoresFile, EveryIndexOfEveryMethodWithUnitsPeriodAndFill) {
  test::TempDir d;
  ScoresFile f = small_scores_file({12418, 12419});  // 2004-01-01, 2004-01-02
  f.history = "downscale evaluate --config x.yaml";
  write_scores_file(d / "scores.nc", f);

  NcFile nc = NcFile::open(d / "scores.nc");
  // Seven indices of the observations; seven indices and five scores per method.
  EXPECT_EQ(f.fields.size(), 7u + 12u);
  for (const char* v : {"mean_observed", "r01_observed", "sdii_observed", "p98_observed", "p98wet_observed",
                        "wetmaxspell_observed", "drymaxspell_observed", "p98wet_twice", "wetmaxspell_twice",
                        "drymaxspell_twice", "mean_twice", "bias_twice",
                        "rmse_twice", "rmse_wet_twice", "spearman_twice", "rocss_twice"})
    EXPECT_TRUE(nc.has_var(v)) << v;
  const int vm = nc.var_id("mean_twice");
  EXPECT_EQ(nc.var_dims(vm), (std::vector<std::string>{"time", "lat", "lon"}));
  EXPECT_EQ(nc.att_text(vm, "standard_name"), "precipitation_flux");
  EXPECT_EQ(nc.att_text(vm, "units"), "kg m-2 s-1");
  EXPECT_EQ(nc.att_text(vm, "cell_methods"), "time: mean");
  EXPECT_EQ(nc.att_text(vm, "method"), "twice");
  EXPECT_EQ(nc.att_text(nc.var_id("rmse_twice"), "cell_methods"), "time: root_mean_square");
  EXPECT_FALSE(nc.has_att(nc.var_id("spearman_twice"), "standard_name"));
  // Values: mean of 4 and 12 mm/day = 8 mm/day in kg m-2 s-1; the ocean point is _FillValue.
  std::vector<float> v(3);
  nc.read(vm, {0, 0, 0}, {1, 1, 3}, v.data());
  EXPECT_NEAR(v[0], 8.0 / 86400, 1e-6 * 8.0 / 86400);
  EXPECT_NEAR(v[1], 12.0 / 86400, 1e-6 * 12.0 / 86400);
  EXPECT_EQ(v[2], 1.0e20f);
  // The period: one step in its middle, bounded by the first day and the day after the last.
  EXPECT_EQ(nc.read_coord("time"), std::vector<double>{12419.0});
  std::vector<double> b(2);
  nc.read(nc.var_id("time_bnds"), {0, 0}, {1, 2}, b.data());
  EXPECT_EQ(b, (std::vector<double>{12418, 12420}));
  std::vector<double> lon_bnds(6);
  nc.read(nc.var_id("lon_bnds"), {0, 0}, {3, 2}, lon_bnds.data());
  EXPECT_EQ(lon_bnds, (std::vector<double>{-100.25, -99.75, -99.75, -99.25, -99.25, -98.75}));
  EXPECT_FALSE(nc.has_var("lat_bnds"));  // one latitude: no neighbour to size its box by
  EXPECT_FALSE(nc.has_att(nc.var_id("lat"), "bounds"));
  EXPECT_EQ(nc.att_text(nc.var_id("lon"), "bounds"), "lon_bnds");
  EXPECT_EQ(nc.att_text(NC_GLOBAL, "Conventions"), "CF-1.8");
  EXPECT_EQ(nc.att_text(NC_GLOBAL, "test_period_start"), "2004-01-01");
  EXPECT_EQ(nc.att_text(NC_GLOBAL, "test_period_end"), "2004-01-02");
  EXPECT_NE(nc.att_text(NC_GLOBAL, "history").find("downscale evaluate --config x.yaml"), std::string::npos);
}

TEST(ScoresFile, ContinuousFieldsCarryThePredictandsStandardName) {
  const std::vector<float> obs{280, 281, 282, 284};
  const ContinuousEvaluation e =
      evaluate_continuous(obs, 2, {1, 1}, {{"plus_one", {281, 282, 283, 285}}}, "tas", "K");
  const auto fields = continuous_score_fields(e, "air_temperature");
  ASSERT_EQ(fields.size(), 2u + 5u);
  EXPECT_EQ(fields[1].index, "sd");
  EXPECT_EQ(fields[1].standard_name, "air_temperature");
  EXPECT_EQ(fields[1].cell_methods, "time: standard_deviation");
  EXPECT_EQ(fields[3].index, "bias");
  EXPECT_NEAR(fields[3].values[0], 1.0, 1e-12);
  EXPECT_TRUE(fields[3].standard_name.empty());  // a bias is no air temperature
  EXPECT_NEAR(e.methods[0].median.at("bias"), 1.0, 1e-12);
}

// The scores of tas are of the air temperature at 2 m, as the prediction's fields: a scalar
// height every field names; precipitation's have none.
TEST(ScoresFile, TemperatureScoresAreAtTwoMetres) {
  test::TempDir d;
  const std::vector<float> obs{280, 281, 282, 284};
  const ContinuousEvaluation e =
      evaluate_continuous(obs, 2, {1, 1}, {{"plus_one", {281, 282, 283, 285}}}, "tas", "K");
  ScoresFile f;
  f.lat = {40};
  f.lon = {-100, -99.5};
  f.days = {12418, 12419};
  f.title = "test";
  f.variable = "tas";
  f.fields = continuous_score_fields(e, "air_temperature");
  f.seasons.push_back({"DJF", {12418, 12419}, continuous_score_fields(e, "air_temperature")});
  write_scores_file(d / "tas.nc", f);
  {
    NcFile nc = NcFile::open(d / "tas.nc");
    const int h = nc.var_id("height");
    EXPECT_EQ(nc.att_text(h, "units"), "m");
    EXPECT_EQ(nc.att_text(h, "positive"), "up");
    double metres = 0;
    nc.read(h, {}, {}, &metres);
    EXPECT_EQ(metres, 2.0);
    EXPECT_EQ(nc.att_text(nc.var_id("bias_plus_one"), "coordinates"), "height");
    EXPECT_EQ(nc.att_text(nc.var_id("mean_observed_DJF"), "coordinates"), "height");
    // A bias, RMSE or sd of a temperature is a difference (CF-1.11 units_metadata): a tool
    // converting it to another temperature unit must not shift it; a mean is on the scale.
    EXPECT_EQ(nc.att_text(nc.var_id("bias_plus_one"), "units_metadata"), "temperature: difference");
    EXPECT_EQ(nc.att_text(nc.var_id("rmse_plus_one"), "units_metadata"), "temperature: difference");
    EXPECT_EQ(nc.att_text(nc.var_id("sd_observed"), "units_metadata"), "temperature: difference");
    EXPECT_EQ(nc.att_text(nc.var_id("mean_observed_DJF"), "units_metadata"), "temperature: on_scale");
    EXPECT_EQ(nc.att_text(NC_GLOBAL, "Conventions"), "CF-1.11");  // units_metadata's version
    EXPECT_FALSE(nc.has_att(nc.var_id("pearson_plus_one"), "units_metadata"));
  }
  ScoresFile p = small_scores_file({12418, 12419});
  p.variable = "pr";
  write_scores_file(d / "pr.nc", p);
  NcFile nc = NcFile::open(d / "pr.nc");
  EXPECT_FALSE(nc.has_var("height"));
  EXPECT_FALSE(nc.has_att(nc.var_id("mean_twice"), "coordinates"));
}

// Scoring names the method in its progress lines (every ~5 s, and once when a method is done);
// members are counted only where the method has several (the stochastic ones).
TEST(ScoresFile, ScoringLogsTheMethodItScores) {
  {
    test::LogCapture log;
    small_evaluation();
    EXPECT_NE(log.str().find("scoring twice (boxes of the observation grid): 3/3 done"), std::string::npos) << log.str();
    EXPECT_EQ(log.str().find("x members"), std::string::npos) << log.str();
  }
  test::LogCapture log;
  const std::vector<float> obs{2, 4, NAN, 6, 8, NAN};
  Method two{"two", {{4, 8, NAN, 12, 16, NAN}, {2, 4, NAN, 6, 8, NAN}}, {}};
  evaluate_methods(obs, 3, {1, 1, 0}, {{12418, 12419}, {2004, 2004}}, {two});
  EXPECT_NE(log.str().find("scoring two (boxes of the observation grid x members): 6/6 done"), std::string::npos)
      << log.str();
}

// A test split of some months of each year (fetch.season DJF): the annual fields are over those
// months only, a climatological time (CF 7.4) as each season's, not a mean over their bounds.
TEST(ScoresFile, ATestSplitOfSomeMonthsIsAClimatologicalTime) {
  test::TempDir d;
  ScoresFile f = small_scores_file({12418, 12784});  // 2004-01-01 and 2005-01-01: January only, a year apart
  f.calendar = "standard";
  write_scores_file(d / "scores.nc", f);
  NcFile nc = NcFile::open(d / "scores.nc");
  EXPECT_EQ(nc.att_text(nc.var_id("time"), "climatology"), "climatology_bnds");
  EXPECT_FALSE(nc.has_att(nc.var_id("time"), "bounds"));
  EXPECT_EQ(nc.att_text(nc.var_id("mean_twice"), "cell_methods"), "time: mean within years time: mean over years");
  std::vector<double> b(2);
  nc.read(nc.var_id("climatology_bnds"), {0, 0}, {1, 2}, b.data());
  // January within each year (2004-01-01 .. 2005-02-01), CF 7.4: the bounds' month and day say
  // which part of a year, not the days' own ends (2005-01-02 read as the whole year and a day).
  EXPECT_EQ(b, (std::vector<double>{12418, 12815}));

  // Every month, with a day dropped: still one period with bounds.
  f.days.clear();
  for (int64_t day = 12418; day < 12418 + 366; ++day)
    if (day != 12500) f.days.push_back(day);
  write_scores_file(d / "scores.nc", f);
  NcFile all = NcFile::open(d / "scores.nc");
  EXPECT_EQ(all.att_text(all.var_id("time"), "bounds"), "time_bnds");
  EXPECT_EQ(all.att_text(all.var_id("mean_twice"), "cell_methods"), "time: mean");
  // Within one year, a gap of a month (data missing, not a season): one period with bounds too.
  f.days = {12418, 12419, 12478, 12479};  // 2004-01-01/02 and 2004-03-01/02
  write_scores_file(d / "scores.nc", f);
  NcFile gap = NcFile::open(d / "scores.nc");
  EXPECT_EQ(gap.att_text(gap.var_id("time"), "bounds"), "time_bnds");
}

// Each season's climatological bounds (CF 7.4): the month and day of the bounds are the season's
// interval within a year, their years the first and last season-year the days fall in.
TEST(ScoresFile, SeasonBoundsAreTheSeasonWithinEachYear) {
  const auto bounds_of = [](std::vector<int64_t> season_days) {
    test::TempDir d;
    ScoresFile f = small_scores_file({12418, 12419});
    f.seasons.push_back({"S", season_days, f.fields});
    write_scores_file(d / "scores.nc", f);
    NcFile nc = NcFile::open(d / "scores.nc");
    EXPECT_EQ(nc.att_text(nc.var_id("time_S"), "climatology"), "climatology_bnds_S");
    std::vector<double> b(2);
    nc.read(nc.var_id("climatology_bnds_S"), {0, 0}, {1, 2}, b.data());
    return std::pair{date_from_days(int64_t(b[0]), Calendar::standard), date_from_days(int64_t(b[1]), Calendar::standard)};
  };
  const auto days = [](Date a, Date b) {  // every day from a to b
    std::vector<int64_t> v;
    for (int64_t d = days_from_date(a, Calendar::standard); d <= days_from_date(b, Calendar::standard); ++d) v.push_back(d);
    return v;
  };
  const auto join = [](std::vector<int64_t> a, const std::vector<int64_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  // DJF of a calendar-year test split (2004): January and February of the winter 2003/04 and
  // December of 2004/05, in part: two winters, Dec 2003 .. Mar 2005 (it was 2004-01-01 .. 2005-01-01).
  const auto djf = bounds_of(join(days({2004, 1, 1}, {2004, 2, 29}), days({2004, 12, 1}, {2004, 12, 31})));
  EXPECT_EQ(djf.first, (Date{2003, 12, 1}));
  EXPECT_EQ(djf.second, (Date{2005, 3, 1}));
  // Whole winters (fetch.season [12, 1, 2], season-years 2001 and 2002).
  const auto winters = bounds_of(join(days({2000, 12, 1}, {2001, 2, 28}), days({2001, 12, 1}, {2002, 2, 28})));
  EXPECT_EQ(winters.first, (Date{2000, 12, 1}));
  EXPECT_EQ(winters.second, (Date{2002, 3, 1}));
  // JJA of one year; SON of two; a July-only split of JJA: its month only.
  EXPECT_EQ(bounds_of(days({2004, 6, 1}, {2004, 8, 31})), (std::pair{Date{2004, 6, 1}, Date{2004, 9, 1}}));
  const auto son = bounds_of(join(days({2003, 9, 1}, {2003, 11, 30}), days({2004, 9, 1}, {2004, 11, 30})));
  EXPECT_EQ(son, (std::pair{Date{2003, 9, 1}, Date{2004, 12, 1}}));
  EXPECT_EQ(bounds_of(days({2004, 7, 1}, {2004, 7, 31})), (std::pair{Date{2004, 7, 1}, Date{2004, 8, 1}}));
  // A season ending in December (OND) crosses no new year: it ends on the next January 1st.
  EXPECT_EQ(bounds_of(days({2004, 10, 1}, {2004, 12, 31})), (std::pair{Date{2004, 10, 1}, Date{2005, 1, 1}}));
  // Months in two runs (January and March) have no interval within a year: the days' own ends.
  EXPECT_EQ(bounds_of({12418, 12478}), (std::pair{Date{2004, 1, 1}, Date{2004, 3, 2}}));
}
