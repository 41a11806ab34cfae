#include "preprocess/sample_dates.h"

#include <algorithm>
#include <iterator>

#include "io/calendar.h"
#include "io/error.h"

namespace ds {

int split_of_day(const Config::Preprocess& pp, int64_t day) {
  const int y = civil_from_days(day).year;
  if (pp.train_years.contains(y)) return 0;
  if (pp.validation_years.contains(y)) return 1;
  if (pp.test_years.contains(y)) return 2;
  return -1;
}

SampleDates plan_sample_dates(const Config::Preprocess& pp, const std::vector<std::string>& names,
                              const std::vector<const std::vector<int64_t>*>& days) {
  SampleDates s;
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
    const int k = split_of_day(pp, d);
    (k < 0 ? s.outside_splits : s.split_days[k]).push_back(d);
  }
  return s;
}

std::vector<std::string> SampleDates::report() const {
  auto first_few = [](const std::vector<int64_t>& v) {
    std::string out;
    for (size_t i = 0; i < v.size() && i < 5; ++i) out += (i ? ", " : "") + to_string(civil_from_days(v[i]));
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
