#include "io/calendar.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "io/error.h"

namespace ds {

namespace {

// Floor division: day counts before 1970 are negative.
int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// Day of year (0-based) of the first of each month in a 365- and a 366-day year.
constexpr int kCumNoLeap[13] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365};
constexpr int kCumLeap[13] = {0, 31, 60, 91, 121, 152, 182, 213, 244, 274, 305, 335, 366};

// Julian calendar through the Julian day number; JDN 2440588 is 1970-01-01 (Gregorian), so these
// count from Gregorian 1970-01-01 (the standard calendar's Julian part needs exactly that).
constexpr int64_t kJdnUnixEpoch = 2440588;
int64_t days_from_julian(const Date& d) {
  const int64_t a = (14 - d.month) / 12;
  const int64_t y = static_cast<int64_t>(d.year) + 4800 - a;
  const int64_t m = d.month + 12 * a - 3;
  const int64_t jdn = d.day + (153 * m + 2) / 5 + 365 * y + floor_div(y, 4) - 32083;
  return jdn - kJdnUnixEpoch;
}
Date julian_from_days(int64_t days) {
  const int64_t c = days + kJdnUnixEpoch + 32082;
  const int64_t dd = floor_div(4 * c + 3, 1461);
  const int64_t e = c - floor_div(1461 * dd, 4);
  const int64_t m = (5 * e + 2) / 153;
  Date out;
  out.day = static_cast<int>(e - (153 * m + 2) / 5 + 1);
  out.month = static_cast<int>(m + 3 - 12 * (m / 10));
  out.year = static_cast<int>(dd - 4800 + m / 10);
  return out;
}

// Fixed-length years: days_per_year and the cumulative month table of that year.
int64_t days_from_fixed(const Date& d, int days_per_year, const int* cum) {
  return (static_cast<int64_t>(d.year) - 1970) * days_per_year + cum[d.month - 1] + d.day - 1;
}
Date fixed_from_days(int64_t days, int days_per_year, const int* cum) {
  const int64_t y = floor_div(days, days_per_year);
  const int doy = static_cast<int>(days - y * days_per_year);
  Date out;
  out.year = static_cast<int>(1970 + y);
  out.month = static_cast<int>(std::upper_bound(cum, cum + 12, doy) - cum);
  out.day = doy - cum[out.month - 1] + 1;
  return out;
}

const Date kGregorianStart{1582, 10, 15};

}  // namespace

Calendar parse_calendar(const std::string& attribute, const std::string& where) {
  std::string a;
  for (char ch : attribute) a += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  while (!a.empty() && std::isspace(static_cast<unsigned char>(a.back()))) a.pop_back();
  if (a.empty() || a == "standard" || a == "gregorian") return Calendar::standard;
  if (a == "proleptic_gregorian") return Calendar::proleptic_gregorian;
  if (a == "julian") return Calendar::julian;
  if (a == "noleap" || a == "365_day") return Calendar::noleap;
  if (a == "all_leap" || a == "366_day") return Calendar::all_leap;
  if (a == "360_day") return Calendar::day360;
  throw InputError(where + ": calendar '" + attribute +
                   "' is not a CF calendar downscale can count days in (standard, gregorian, proleptic_gregorian, "
                   "julian, noleap, 365_day, all_leap, 366_day, 360_day)");
}

std::string cf_name(Calendar c) {
  switch (c) {
    case Calendar::standard: return "standard";
    case Calendar::proleptic_gregorian: return "proleptic_gregorian";
    case Calendar::julian: return "julian";
    case Calendar::noleap: return "noleap";
    case Calendar::all_leap: return "all_leap";
    case Calendar::day360: return "360_day";
  }
  return "standard";
}

bool same_days_after_1582(Calendar a, Calendar b) {
  auto gregorian = [](Calendar c) { return c == Calendar::standard || c == Calendar::proleptic_gregorian; };
  return a == b || (gregorian(a) && gregorian(b));
}

int days_in_month(int year, int month, Calendar c) {
  switch (c) {
    case Calendar::day360: return 30;
    case Calendar::noleap: return kCumNoLeap[month] - kCumNoLeap[month - 1];
    case Calendar::all_leap: return kCumLeap[month] - kCumLeap[month - 1];
    case Calendar::julian: return month == 2 ? (year % 4 == 0 ? 29 : 28) : kCumNoLeap[month] - kCumNoLeap[month - 1];
    case Calendar::standard:
      if (year < 1582 || (year == 1582 && month < 10)) return days_in_month(year, month, Calendar::julian);
      if (year == 1582 && month == 10) return 21;  // 1..4, then 15..31
      [[fallthrough]];
    case Calendar::proleptic_gregorian:
      return month == 2 ? (is_leap_year(year) ? 29 : 28) : kCumNoLeap[month] - kCumNoLeap[month - 1];
  }
  return 30;
}

int days_in_year(int year, Calendar c) {
  return static_cast<int>(days_from_date({year + 1, 1, 1}, c) - days_from_date({year, 1, 1}, c));
}

bool is_valid_date(const Date& d, Calendar c) {
  if (d.month < 1 || d.month > 12 || d.day < 1) return false;
  if (c == Calendar::standard && d.year == 1582 && d.month == 10) return d.day <= 4 || (d.day >= 15 && d.day <= 31);
  return d.day <= days_in_month(d.year, d.month, c);
}

int64_t days_from_date(const Date& d, Calendar c) {
  switch (c) {
    case Calendar::proleptic_gregorian: return days_from_civil(d);
    case Calendar::julian: return days_from_julian(d) - days_from_julian({1970, 1, 1});  // 0 on Julian 1970-01-01
    case Calendar::noleap: return days_from_fixed(d, 365, kCumNoLeap);
    case Calendar::all_leap: return days_from_fixed(d, 366, kCumLeap);
    case Calendar::day360: return (static_cast<int64_t>(d.year) - 1970) * 360 + (d.month - 1) * 30 + d.day - 1;
    case Calendar::standard: return d < kGregorianStart ? days_from_julian(d) : days_from_civil(d);
  }
  return days_from_civil(d);
}

Date date_from_days(int64_t days, Calendar c) {
  switch (c) {
    case Calendar::proleptic_gregorian: return civil_from_days(days);
    case Calendar::julian: return julian_from_days(days + days_from_julian({1970, 1, 1}));
    case Calendar::noleap: return fixed_from_days(days, 365, kCumNoLeap);
    case Calendar::all_leap: return fixed_from_days(days, 366, kCumLeap);
    case Calendar::day360: {
      const int64_t y = floor_div(days, 360);
      const int doy = static_cast<int>(days - y * 360);
      return {static_cast<int>(1970 + y), doy / 30 + 1, doy % 30 + 1};
    }
    case Calendar::standard:
      return days < days_from_civil(kGregorianStart) ? julian_from_days(days) : civil_from_days(days);
  }
  return civil_from_days(days);
}

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

std::string months_text(const std::vector<int>& months) {
  std::string t;
  for (int m : months) t += (t.empty() ? "" : ", ") + std::to_string(m);
  return t;
}

size_t season_wrap(const std::vector<int>& season) {
  size_t wrap = 0;
  for (size_t i = 1; i < season.size(); ++i)
    if (season[i] < season[i - 1]) wrap = i;
  return wrap;
}

int season_year(int year, int month, const std::vector<int>& season) {
  const size_t wrap = season_wrap(season);
  for (size_t i = 0; i < wrap; ++i)
    if (season[i] == month) return year + 1;  // before the wrap: next year's season
  return year;
}

std::vector<int> months_of(const std::vector<int64_t>& days, Calendar calendar) {
  std::vector<int> m;
  m.reserve(days.size());
  for (int64_t d : days) m.push_back(date_from_days(d, calendar).month);
  return m;
}

bool is_leap_year(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }
int days_in_year(int y) { return is_leap_year(y) ? 366 : 365; }

TimeUnits TimeUnits::parse(const std::string& units, const std::string& calendar_attribute, const std::string& where) {
  std::istringstream in(units);
  std::string unit, since, date, clock;
  in >> unit >> since >> date >> clock;
  // udunits2 and cftime read the unit and "since" in any case ("Days since 1970-01-01").
  for (std::string* word : {&unit, &since})
    for (char& ch : *word) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  TimeUnits t;
  t.calendar = parse_calendar(calendar_attribute, where);
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
  if (!is_valid_date(d, t.calendar))
    throw InputError(where + ": time units '" + units + "': " + to_string(d) + " is not a date of the " +
                     cf_name(t.calendar) + " calendar");
  if (date.find('T') != std::string::npos) clock = date.substr(date.find('T') + 1);
  if (!clock.empty()) std::sscanf(clock.c_str(), "%d:%d:%lf", &h, &m, &s);
  t.epoch_days = days_from_date(d, t.calendar);
  t.epoch_seconds = h * 3600.0 + m * 60.0 + s;
  return t;
}

int64_t TimeUnits::day_of(double value, const std::string& where, double resolution_seconds) const {
  const double seconds = value * seconds_per_unit + epoch_seconds;
  // NaN, infinity or a value past any date (a million years) would be an undefined cast below
  // and a garbage date in the message that follows.
  if (!(std::abs(seconds) < 86400.0 * 366.0 * 1e6))
    throw InputError(where + ": time value " + fmt::format("{}", value) + " is no date (not finite, or a million years or more from the units' origin)");
  // A small tolerance so 23:59:59.9999 stored in float hours still lands on the right day, or
  // the value's own resolution where that is coarser.
  const double tolerance = std::max(1e-6, resolution_seconds / 86400.0);
  return epoch_days + static_cast<int64_t>(std::floor(seconds / 86400.0 + tolerance));
}

Date TimeUnits::date_of(double value, const std::string& where) const {
  return date_from_days(day_of(value, where), calendar);
}

void check_calendar(const std::string& calendar, const std::string& where) {
  const Calendar c = parse_calendar(calendar, where);
  if (c == Calendar::standard || c == Calendar::proleptic_gregorian) return;
  throw InputError(where + ": calendar '" + calendar + "' is not supported here (standard, gregorian or proleptic_gregorian)");
}

}  // namespace ds
