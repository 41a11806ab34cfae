// Which days become samples: the dates present in every fetched file, within the configured
// train / validation / test years. Everything else is dropped and reported (how many, which
// first, and which file lacked them), since a silently shorter record changes the statistics.
//
// Years are calendar years, or season-years when fetch.season crosses the new year (its months
// not ascending, e.g. [12, 1, 2]): then, as fetch cuts them (fetch/plan.h season_months), the
// months before the wrap belong to the next year's season, so DJF 1998 is December 1997 to
// February 1998 and `test_years: [1998, 2002]` puts December 1997 in the test split.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/calendar.h"
#include "io/config.h"

namespace ds {

struct SplitYears {
  YearRange years[3];            // train, validation, test
  std::vector<int> season;       // fetch.season, in the config's order
  Calendar calendar = Calendar::standard;

  static SplitYears from(const Config& cfg, Calendar calendar);
  // Whether the season crosses the new year, so that years are season-years.
  bool season_years() const;
  // The (season-)year a day belongs to.
  int year_of(int64_t day) const;
  // "DJF 1998 is Dec 1997 to Feb 1998": what season-year y holds (with season_years()).
  std::string season_year_example(int y) const;
  // 0 train, 1 validation, 2 test, -1 in no split.
  int split_of(int64_t day) const;
  // "train 1983..1997, validation none, test 1998..2002 (season-years: DJF 1998 is Dec 1997 to Feb 1998)"
  std::string describe() const;
};

struct SampleDates {
  std::vector<int64_t> split_days[3];   // per split, ascending
  std::vector<int64_t> not_common;      // in some file but not in all, ascending
  std::vector<int64_t> outside_splits;  // in every file but in no split's years
  std::vector<std::string> missing_from;  // "z@500 lacks 3" for each file lacking some date
  Calendar calendar = Calendar::standard;  // of the day numbers (for printing dates)
  size_t total() const { return split_days[0].size() + split_days[1].size() + split_days[2].size(); }
  // One line per kind of drop, with a count and the first few dates; empty when nothing dropped.
  std::vector<std::string> report() const;
};

// names[i] and days[i] (ascending, in splits.calendar) describe file i.
SampleDates plan_sample_dates(const SplitYears& splits, const std::vector<std::string>& names,
                              const std::vector<const std::vector<int64_t>*>& days);

// Indices into `file_days` (ascending) of `want` (ascending, each present).
std::vector<size_t> indices_of(const std::vector<int64_t>& file_days, const std::vector<int64_t>& want);

}  // namespace ds
