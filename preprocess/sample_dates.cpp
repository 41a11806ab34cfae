#include "preprocess/sample_dates.h"

#include <algorithm>
#include <iterator>

#include "io/calendar.h"
#include "io/error.h"

namespace ds {

namespace {

const char* const kMonthAbbrev[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

}  // namespace

SplitYears SplitYears::from(const Config& cfg, Calendar calendar) {
  SplitYears s;
  s.years[0] = cfg.preprocess.train_years;
  s.years[1] = cfg.preprocess.validation_years;
  s.years[2] = cfg.preprocess.test_years;
  s.season = cfg.fetch.season;
  s.calendar = calendar;
  return s;
}

bool SplitYears::season_years() const { return season_wrap(season) > 0; }

int SplitYears::year_of(int64_t day) const {
  const Date d = date_from_days(day, calendar);
  return season_year(d.year, d.month, season);
}

int SplitYears::split_of(int64_t day) const {
  const int y = year_of(day);
  for (int k = 0; k < 3; ++k)
    if (years[k].contains(y)) return k;
  return -1;
}

std::string SplitYears::describe() const {
  static const char* const names[] = {"train", "validation", "test"};
  std::string out;
  for (int k = 0; k < 3; ++k) {
    out += std::string(k ? ", " : "") + names[k] + " ";
    out += years[k].empty() ? std::string("none")
                            : std::to_string(years[k].first) + ".." + std::to_string(years[k].last);
  }
  if (season_years())
    out += " (season-years, as fetch cuts them: " + season_year_example(years[0].empty() ? 2000 : years[0].first) + ")";
  return out;
}

std::string SplitYears::season_year_example(int y) const {
  std::string months;
  for (int m : season) months += kMonthAbbrev[m - 1][0];
  return months + " " + std::to_string(y) + " is " + kMonthAbbrev[season.front() - 1] + " " + std::to_string(y - 1) +
         " to " + kMonthAbbrev[season.back() - 1] + " " + std::to_string(y);
}

SampleDates plan_sample_dates(const SplitYears& splits, const std::vector<std::string>& names,
                              const std::vector<const std::vector<int64_t>*>& days) {
  SampleDates s;
  s.calendar = splits.calendar;
  std::vector<int64_t> all, common = *days.at(0);
  for (const auto* d : days) {
    std::vector<int64_t> u, c;
    std::set_union(all.begin(), all.end(), d->begin(), d->end(), std::back_inserter(u));
    std::set_intersection(common.begin(), common.end(), d->begin(), d->end(), std::back_inserter(c));
    all.swap(u);
    common.swap(c);
  }
  std::set_difference(all.begin(), all.end(), common.begin(), common.end(), std::back_inserter(s.not_common));
  for (size_t i = 0; i < days.size(); ++i) {
    const size_t lacks = all.size() - days[i]->size();
    if (lacks > 0) s.missing_from.push_back(names[i] + " lacks " + std::to_string(lacks));
  }
  for (int64_t d : common) {
    const int k = splits.split_of(d);
    (k < 0 ? s.outside_splits : s.split_days[k]).push_back(d);
  }
  return s;
}

std::vector<std::string> SampleDates::report() const {
  auto first_few = [this](const std::vector<int64_t>& v) {
    std::string out;
    for (size_t i = 0; i < v.size() && i < 5; ++i) out += (i ? ", " : "") + to_string(date_from_days(v[i], calendar));
    if (v.size() > 5) out += ", ...";
    return out;
  };
  std::vector<std::string> lines;
  if (!not_common.empty()) {
    std::string who;
    for (const auto& m : missing_from) who += (who.empty() ? "" : "; ") + m;
    lines.push_back(std::to_string(not_common.size()) + " dates are not in every file and are dropped (" +
                    first_few(not_common) + "; " + who + ")");
  }
  if (!outside_splits.empty())
    lines.push_back(std::to_string(outside_splits.size()) +
                    " dates are outside the train, validation and test years and are dropped (" + first_few(outside_splits) + ")");
  return lines;
}

std::vector<size_t> indices_of(const std::vector<int64_t>& file_days, const std::vector<int64_t>& want) {
  std::vector<size_t> idx;
  idx.reserve(want.size());
  size_t k = 0;
  for (int64_t d : want) {
    while (k < file_days.size() && file_days[k] < d) ++k;
    if (k == file_days.size() || file_days[k] != d) throw Error("indices_of: date not in file");
    idx.push_back(k);
  }
  return idx;
}

}  // namespace ds
