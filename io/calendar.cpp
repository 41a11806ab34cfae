#include "io/calendar.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "io/error.h"

namespace ds {

int64_t days_from_civil(const Date& d) {
  const int64_t y = d.year - (d.month <= 2);
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (d.month + (d.month > 2 ? -3 : 9)) + 2) / 5 + d.day - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

Date civil_from_days(int64_t z) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  Date d;
  d.day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  d.month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  d.year = static_cast<int>(yoe + era * 400 + (d.month <= 2));
  return d;
}

std::string to_string(const Date& d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d", d.year, d.month, d.day);
  return buf;
}

bool is_leap_year(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }
int days_in_year(int y) { return is_leap_year(y) ? 366 : 365; }

TimeUnits TimeUnits::parse(const std::string& units, const std::string& where) {
  std::istringstream in(units);
  std::string unit, since, date, clock;
  in >> unit >> since >> date >> clock;
  TimeUnits t;
  if (unit == "days" || unit == "day" || unit == "d") t.seconds_per_unit = 86400;
  else if (unit == "hours" || unit == "hour" || unit == "h") t.seconds_per_unit = 3600;
  else if (unit == "minutes" || unit == "minute") t.seconds_per_unit = 60;
  else if (unit == "seconds" || unit == "second" || unit == "s") t.seconds_per_unit = 1;
  else throw InputError(where + ": time units '" + units + "' are not '<days|hours|minutes|seconds> since <date>'");
  Date d;
  int h = 0, m = 0;
  double s = 0;
  if (since != "since" || std::sscanf(date.c_str(), "%d-%d-%d", &d.year, &d.month, &d.day) != 3)
    throw InputError(where + ": time units '" + units + "' have no 'since YYYY-MM-DD'");
  if (date.find('T') != std::string::npos) clock = date.substr(date.find('T') + 1);
  if (!clock.empty()) std::sscanf(clock.c_str(), "%d:%d:%lf", &h, &m, &s);
  t.epoch_days = days_from_civil(d);
  t.epoch_seconds = h * 3600.0 + m * 60.0 + s;
  return t;
}

int64_t TimeUnits::day_of(double value) const {
  const double seconds = value * seconds_per_unit + epoch_seconds;
  // A small tolerance so 23:59:59.9999 stored in float hours still lands on the right day.
  return epoch_days + static_cast<int64_t>(std::floor(seconds / 86400.0 + 1e-6));
}

Date TimeUnits::date_of(double value) const { return civil_from_days(day_of(value)); }

void check_calendar(const std::string& calendar, const std::string& where) {
  if (calendar.empty() || calendar == "standard" || calendar == "gregorian" ||
      calendar == "proleptic_gregorian")
    return;
  throw InputError(where + ": calendar '" + calendar +
                   "' is not supported (standard, gregorian or proleptic_gregorian)");
}

}  // namespace ds
