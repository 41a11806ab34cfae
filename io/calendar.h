// Dates on the CF calendars. Every day number in downscale is "days since 1970-01-01 in the
// calendar of the data": on the standard calendar that is the civil day count, on noleap or
// 360_day it is the count of that calendar's days, which is exactly what a CF time axis
// "days since 1970-01-01" with that calendar attribute holds. Files of one calendar are never
// mixed with files of another (preprocess and predict check), so day numbers of one run are
// always comparable.
//
// CF calendars (CF 1.8, section 4.4.1):
//   standard (= gregorian): Julian before 1582-10-15, Gregorian from then on
//   proleptic_gregorian: Gregorian rules for every year (ERA-Interim, ERA5, E-OBS after 1950
//                        are identical on both)
//   julian: a leap year every 4 years
//   noleap (= 365_day): no 29 February (most CMIP models)
//   all_leap (= 366_day): every year has 29 February
//   360_day: twelve months of 30 days (HadGEM)
// "none" (no calendar) is refused: daily data needs dates.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ds {

struct Date {
  int year = 1970, month = 1, day = 1;
  bool operator==(const Date& o) const { return year == o.year && month == o.month && day == o.day; }
  bool operator<(const Date& o) const {
    return year != o.year ? year < o.year : month != o.month ? month < o.month : day < o.day;
  }
};

enum class Calendar { standard, proleptic_gregorian, julian, noleap, all_leap, day360 };

// Parses a CF calendar attribute (case-insensitive; "" is standard, as CF says). Aliases map to
// one value: gregorian -> standard, 365_day -> noleap, 366_day -> all_leap. Throws InputError
// naming `where` for anything else.
Calendar parse_calendar(const std::string& attribute, const std::string& where);
// The CF name written to outputs: standard, proleptic_gregorian, julian, noleap, all_leap, 360_day.
std::string cf_name(Calendar c);
// Whether two calendars count the same days for every date after 1582-10-15 (standard and
// proleptic_gregorian do): such files may be combined.
bool same_days_after_1582(Calendar a, Calendar b);

int days_in_month(int year, int month, Calendar c);
int days_in_year(int year, Calendar c);
bool is_valid_date(const Date& d, Calendar c);  // 30 February on 360_day is valid, 29 February on noleap is not

// Days since 1970-01-01 of a date in calendar `c`, and back. Exact for every int year.
int64_t days_from_date(const Date& d, Calendar c);
Date date_from_days(int64_t days, Calendar c);

// The proleptic Gregorian day count (what the two above give for Calendar::proleptic_gregorian):
// Hinnant's algorithms.
int64_t days_from_civil(const Date& d);
Date civil_from_days(int64_t days);
std::string to_string(const Date& d);  // YYYY-MM-DD
std::string months_text(const std::vector<int>& months);  // {12, 1, 2} as "12, 1, 2", for messages
// Season-years. A season crossing the new year (its months not ascending, as [12, 1, 2] or
// [11, 12, 1, 2, 3]) is labelled by the year of its last month: DJF 1998 is December 1997 to
// February 1998. Fetch cuts chunks, preprocess splits years and evaluate bounds climatologies by
// this one rule.
// The position after which `season` wraps into the next year: the last position where the month
// number falls (0: it does not wrap).
size_t season_wrap(const std::vector<int>& season);
// The season-year a day of calendar year `year`, month `month` belongs to.
int season_year(int year, int month, const std::vector<int>& season);
// The calendar month of each day (days since 1970-01-01 in `calendar`).
std::vector<int> months_of(const std::vector<int64_t>& days, Calendar calendar);
bool is_leap_year(int year);           // Gregorian rule
int days_in_year(int year);            // Gregorian

// A CF time axis: "<unit> since <date>[ <time>]" with unit days, hours, minutes or seconds, on
// a calendar.
struct TimeUnits {
  double seconds_per_unit = 86400;
  int64_t epoch_days = 0;     // the reference date as days since 1970-01-01 in `calendar`
  double epoch_seconds = 0;   // time of day of the reference, in seconds
  Calendar calendar = Calendar::standard;

  // Parses a CF units string and calendar attribute; throws InputError naming `where` if it is
  // not a time axis, or the reference date does not exist in the calendar.
  static TimeUnits parse(const std::string& units, const std::string& calendar_attribute, const std::string& where);
  // The same on the standard calendar (files downscale wrote before calendars were recorded).
  static TimeUnits parse(const std::string& units, const std::string& where) { return parse(units, "", where); }
  // The date a time value falls on (values are floored to the day).
  Date date_of(double value, const std::string& where = "time") const;
  // Days since 1970-01-01 (in the calendar) of a time value (floored). A value that is no date
  // (NaN, infinite, a million years or more from the origin) is an InputError naming `where`.
  // `resolution_seconds`: how far the stored value may be from the time meant (a 32-bit float's
  // spacing, cf_days); a value that close below a day's start is that day's.
  int64_t day_of(double value, const std::string& where = "time", double resolution_seconds = 0) const;
};

// Kept for callers that can only count standard days: throws InputError naming `where` unless
// the calendar is standard, gregorian or proleptic_gregorian.
void check_calendar(const std::string& calendar, const std::string& where);

}  // namespace ds
