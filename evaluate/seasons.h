// The seasons of the VALUE reports (Maraun et al. 2015; Gutierrez et al. 2019): each index and
// score is also computed on the test days of one season's calendar months only. DJF is December,
// January and February by calendar month, whatever their year: the test split's December with
// its own January and February, as VALUE's season subsetting (R.VALUE, climate4R subsetGrid).
// The subset keeps the days' numbers, so the spells see the gap between two seasons' days (the
// end of February to 1 December) as a gap: a spell ends there (evaluate/indices.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "evaluate/indices.h"
#include "io/calendar.h"

namespace ds {

// "annual", "DJF", "MAM", "JJA", "SON": the names evaluate.seasons accepts.
const std::vector<std::string>& season_names();
// The calendar months of a season (1..12; all twelve for annual). Error for an unknown name.
std::vector<int> season_months(const std::string& season);
// The time steps (ascending) whose month is one of `months`.
std::vector<size_t> steps_in_months(const std::vector<int>& month_of_step, const std::vector<int>& months);
// Rows `steps` of a (time, point) array of np points, in that order.
std::vector<float> select_steps(const std::vector<float>& x, size_t np, const std::vector<size_t>& steps);
// The same days of TestDays (numbers and years kept, so gaps stay gaps).
TestDays select_days(const TestDays& days, const std::vector<size_t>& steps);

}  // namespace ds
