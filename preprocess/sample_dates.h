// Which days become samples: the dates present in every fetched file, within the configured
// train / validation / test years. Everything else is dropped and reported (how many, which
// first, and which file lacked them), since a silently shorter record changes the statistics.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/config.h"

namespace ds {

// 0 train, 1 validation, 2 test, -1 in no split.
int split_of_day(const Config::Preprocess& pp, int64_t day);

struct SampleDates {
  std::vector<int64_t> split_days[3];   // per split, ascending
  std::vector<int64_t> not_common;      // in some file but not in all, ascending
  std::vector<int64_t> outside_splits;  // in every file but in no split's years
  std::vector<std::string> missing_from;  // "z@500 lacks 3" for each file lacking some date
  size_t total() const { return split_days[0].size() + split_days[1].size() + split_days[2].size(); }
  // One line per kind of drop, with a count and the first few dates; empty when nothing dropped.
  std::vector<std::string> report() const;
};

// names[i] and days[i] (ascending) describe file i.
SampleDates plan_sample_dates(const Config::Preprocess& pp, const std::vector<std::string>& names,
                              const std::vector<const std::vector<int64_t>*>& days);

// Indices into `file_days` (ascending) of `want` (ascending, each present).
std::vector<size_t> indices_of(const std::vector<int64_t>& file_days, const std::vector<int64_t>& want);

}  // namespace ds
