#include "evaluate/seasons.h"

#include <algorithm>

#include "io/error.h"

namespace ds {

const std::vector<std::string>& season_names() {
  static const std::vector<std::string> names{"annual", "DJF", "MAM", "JJA", "SON"};
  return names;
}

std::vector<int> season_months(const std::string& season) {
  if (season == "annual") return {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  if (season == "DJF") return {12, 1, 2};
  if (season == "MAM") return {3, 4, 5};
  if (season == "JJA") return {6, 7, 8};
  if (season == "SON") return {9, 10, 11};
  throw Error("unknown season '" + season + "' (annual, DJF, MAM, JJA or SON)");
}

std::vector<size_t> steps_in_months(const std::vector<int>& month_of_step, const std::vector<int>& months) {
  std::vector<size_t> steps;
  for (size_t t = 0; t < month_of_step.size(); ++t)
    if (std::find(months.begin(), months.end(), month_of_step[t]) != months.end()) steps.push_back(t);
  return steps;
}

std::vector<float> select_steps(const std::vector<float>& x, size_t np, const std::vector<size_t>& steps) {
  std::vector<float> out;
  out.reserve(steps.size() * np);
  for (size_t t : steps) out.insert(out.end(), x.begin() + t * np, x.begin() + (t + 1) * np);
  return out;
}

TestDays select_days(const TestDays& days, const std::vector<size_t>& steps) {
  TestDays d;
  for (size_t t : steps) d.number.push_back(days.number[t]), d.year.push_back(days.year[t]);
  return d;
}

}  // namespace ds
