#include <gtest/gtest.h>

#include "io/calendar.h"
#include "io/error.h"

using namespace ds;

TEST(Calendar, CivilRoundTripAndKnownDays) {
  EXPECT_EQ(days_from_civil({1970, 1, 1}), 0);
  EXPECT_EQ(days_from_civil({2000, 3, 1}) - days_from_civil({2000, 2, 28}), 2);  // 2000 is a leap year
  EXPECT_EQ(days_from_civil({1900, 3, 1}) - days_from_civil({1900, 2, 28}), 1);  // 1900 is not
  for (int64_t d = -100000; d < 100000; d += 37) EXPECT_EQ(days_from_civil(civil_from_days(d)), d);
  EXPECT_EQ(to_string(civil_from_days(days_from_civil({1979, 12, 31}))), "1979-12-31");
}

TEST(Calendar, TimeUnits) {
  const auto h = TimeUnits::parse("hours since 1979-01-01 00:00:00", "f");
  EXPECT_EQ(to_string(h.date_of(24.0 * 365 + 23.99)), "1980-01-01");
  const auto d = TimeUnits::parse("days since 1860-1-1", "f");
  EXPECT_EQ(to_string(d.date_of(0.5)), "1860-01-01");
  // The unit and "since" in any case, as udunits2 and cftime read them.
  EXPECT_EQ(to_string(TimeUnits::parse("Days Since 1860-1-1", "f").date_of(1.5)), "1860-01-02");
  EXPECT_EQ(TimeUnits::parse("HOURS since 1979-01-01", "f").seconds_per_unit, 3600);
  EXPECT_THROW(TimeUnits::parse("months since 2000-01-01", "f"), InputError);
  EXPECT_THROW(TimeUnits::parse("days", "f"), InputError);
  EXPECT_THROW(check_calendar("360_day", "f"), InputError);
  EXPECT_NO_THROW(check_calendar("proleptic_gregorian", "f"));
}

TEST(Calendar, ParsesEveryCfNameAndAlias) {
  EXPECT_EQ(parse_calendar("", "f"), Calendar::standard);
  EXPECT_EQ(parse_calendar("Gregorian", "f"), Calendar::standard);
  EXPECT_EQ(parse_calendar("proleptic_gregorian", "f"), Calendar::proleptic_gregorian);
  EXPECT_EQ(parse_calendar("julian", "f"), Calendar::julian);
  EXPECT_EQ(parse_calendar("365_day", "f"), Calendar::noleap);
  EXPECT_EQ(parse_calendar("noleap", "f"), Calendar::noleap);
  EXPECT_EQ(parse_calendar("366_day", "f"), Calendar::all_leap);
  EXPECT_EQ(parse_calendar("all_leap", "f"), Calendar::all_leap);
  EXPECT_EQ(parse_calendar("360_day", "f"), Calendar::day360);
  EXPECT_THROW(parse_calendar("none", "f"), InputError);
  EXPECT_THROW(parse_calendar("lunar", "f"), InputError);
  EXPECT_EQ(cf_name(Calendar::day360), "360_day");
  EXPECT_TRUE(same_days_after_1582(Calendar::standard, Calendar::proleptic_gregorian));
  EXPECT_FALSE(same_days_after_1582(Calendar::standard, Calendar::noleap));
}

// References from cftime 1.6 (Debian's python3-netcdf4), an independent implementation:
//   cftime.num2date(v, 'days since 1850-01-01', cal) for v in (56940.5, -1000, 100000)
//   cftime.date2num(cftime.datetime(2001, 2, 28), 'days since 1970-01-01', cal)
//   cftime.date2num(cftime.datetime(1500, 3, 1), 'days since 1970-01-01', cal)
struct CftimeCase {
  const char* calendar;
  const char* dates[3];
  int64_t feb28_2001, mar1_1500;
};

TEST(Calendar, MatchesCftimeOnEveryCalendar) {
  const CftimeCase cases[] = {
      {"standard", {"2005-11-24", "1847-04-07", "2123-10-17"}, 11381, -171595},
      {"proleptic_gregorian", {"2005-11-24", "1847-04-07", "2123-10-17"}, 11381, -171605},
      {"julian", {"2005-11-23", "1847-04-07", "2123-10-15"}, 11381, -171608},
      {"noleap", {"2006-01-01", "1847-04-06", "2123-12-22"}, 11373, -171491},
      {"all_leap", {"2005-07-29", "1847-04-08", "2123-03-23"}, 11404, -171960},
      {"360_day", {"2008-03-01", "1847-03-21", "2127-10-11"}, 11217, -169140},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.calendar);
    const auto tu = TimeUnits::parse("days since 1850-01-01", c.calendar, "f");
    EXPECT_EQ(to_string(tu.date_of(56940.5)), c.dates[0]);
    EXPECT_EQ(to_string(tu.date_of(-1000)), c.dates[1]);
    EXPECT_EQ(to_string(tu.date_of(100000)), c.dates[2]);
    const Calendar cal = parse_calendar(c.calendar, "f");
    EXPECT_EQ(days_from_date({2001, 2, 28}, cal), c.feb28_2001);
    EXPECT_EQ(days_from_date({1500, 3, 1}, cal), c.mar1_1500);
    EXPECT_EQ(days_from_date({1970, 1, 1}, cal), 0);
  }
}

TEST(Calendar, RoundTripAndMonthLengths) {
  for (Calendar cal : {Calendar::standard, Calendar::proleptic_gregorian, Calendar::julian, Calendar::noleap,
                       Calendar::all_leap, Calendar::day360}) {
    SCOPED_TRACE(cf_name(cal));
    for (int64_t d = -200000; d < 200000; d += 13) {
      const Date date = date_from_days(d, cal);
      ASSERT_TRUE(is_valid_date(date, cal)) << to_string(date);
      ASSERT_EQ(days_from_date(date, cal), d) << to_string(date);
    }
    // Consecutive days: the day after the last of a month is the first of the next.
    for (int y : {1900, 2000, 2001, 2004, 2100})
      for (int m = 1; m <= 12; ++m) {
        const int n = days_in_month(y, m, cal);
        const Date next = m == 12 ? Date{y + 1, 1, 1} : Date{y, m + 1, 1};
        EXPECT_EQ(days_from_date(next, cal) - days_from_date({y, m, n}, cal), 1) << y << "-" << m;
      }
  }
  EXPECT_EQ(days_in_month(2000, 2, Calendar::noleap), 28);
  EXPECT_EQ(days_in_month(2001, 2, Calendar::all_leap), 29);
  EXPECT_EQ(days_in_month(2000, 2, Calendar::day360), 30);
  EXPECT_EQ(days_in_month(1900, 2, Calendar::julian), 29);
  EXPECT_EQ(days_in_month(1900, 2, Calendar::standard), 28);
  EXPECT_EQ(days_in_year(2000, Calendar::day360), 360);
  EXPECT_EQ(days_in_year(2000, Calendar::noleap), 365);
  EXPECT_FALSE(is_valid_date({2000, 2, 29}, Calendar::noleap));
  EXPECT_TRUE(is_valid_date({2001, 2, 30}, Calendar::day360));
  EXPECT_FALSE(is_valid_date({1582, 10, 10}, Calendar::standard));  // the days the reform skipped
  // The reform: Julian 1582-10-04 is followed by Gregorian 1582-10-15.
  EXPECT_EQ(days_from_date({1582, 10, 15}, Calendar::standard) - days_from_date({1582, 10, 4}, Calendar::standard), 1);
  EXPECT_THROW(TimeUnits::parse("days since 2001-02-29", "noleap", "f"), InputError);
  EXPECT_NO_THROW(TimeUnits::parse("days since 2001-02-30", "360_day", "f"));
}

// One season-year rule for fetch's chunks, preprocess's splits and evaluate's climatology bounds:
// a season crossing the new year is labelled by the year of its last month.
TEST(Calendar, SeasonYearsAreLabelledByTheYearOfTheLastMonth) {
  const std::vector<int> djf{12, 1, 2}, ndjfm{11, 12, 1, 2, 3}, jja{6, 7, 8}, all{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  EXPECT_EQ(season_wrap(djf), 1u);
  EXPECT_EQ(season_wrap(ndjfm), 2u);
  EXPECT_EQ(season_wrap(jja), 0u);
  EXPECT_EQ(season_wrap(all), 0u);
  EXPECT_EQ(season_year(1997, 12, djf), 1998);
  EXPECT_EQ(season_year(1998, 1, djf), 1998);
  EXPECT_EQ(season_year(1998, 2, djf), 1998);
  EXPECT_EQ(season_year(1997, 11, ndjfm), 1998);
  EXPECT_EQ(season_year(1998, 3, ndjfm), 1998);
  EXPECT_EQ(season_year(1998, 12, jja), 1998);  // a month outside the season keeps its year
  EXPECT_EQ(season_year(1998, 12, all), 1998);
}
