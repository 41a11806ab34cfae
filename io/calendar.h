// Dates on the proleptic Gregorian calendar, which is what ERA-Interim and EWEMBI use
// ("standard"/"gregorian" in CF; identical after 1582). Days are counted from 1970-01-01.
#pragma once
#include <cstdint>
#include <string>

namespace ds {

struct Date {
  int year = 1970, month = 1, day = 1;
  bool operator==(const Date& o) const { return year == o.year && month == o.month && day == o.day; }
};

// Days since 1970-01-01 of a civil date, and back (Hinnant's algorithms; exact for all int years).
int64_t days_from_civil(const Date& d);
Date civil_from_days(int64_t days);
std::string to_string(const Date& d);  // YYYY-MM-DD
bool is_leap_year(int year);
int days_in_year(int year);

// A CF time axis: "<unit> since <date>[ <time>]" with unit days, hours, minutes or seconds.
struct TimeUnits {
  double seconds_per_unit = 86400;
  int64_t epoch_days = 0;  // the reference date as days since 1970-01-01
  double epoch_seconds = 0;  // time of day of the reference, in seconds

  // Parses a CF units string; throws InputError naming `where` if it is not a time axis.
  static TimeUnits parse(const std::string& units, const std::string& where);
  // The date a time value falls on (values are floored to the day).
  Date date_of(double value) const;
  // Days since 1970-01-01 of a time value (floored).
  int64_t day_of(double value) const;
};

// Checks a CF calendar attribute is one we can count with; throws InputError naming `where` if not.
void check_calendar(const std::string& calendar, const std::string& where);

}  // namespace ds
