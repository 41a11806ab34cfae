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
  EXPECT_THROW(TimeUnits::parse("months since 2000-01-01", "f"), InputError);
  EXPECT_THROW(TimeUnits::parse("days", "f"), InputError);
  EXPECT_THROW(check_calendar("360_day", "f"), InputError);
  EXPECT_NO_THROW(check_calendar("proleptic_gregorian", "f"));
}
