// A local file through the path `downscale fetch` takes (plan, chunks, join; support/
// fetch_support.h): the box, level, years and season cut from an ERA-like source with descending
// latitude, missing values, and errors that name the source and variable and leave nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "io/calendar.h"
#include "io/error.h"
#include "fetch/plan.h"
#include "support/fetch_support.h"
#include "support/test_support.h"

using namespace ds;
using test::fetch_local;
using test::Field;
using test::read_field;

namespace {

// 2° source with descending latitude like ERA-Interim: 40..20 N, -120..-100 E, levels 1000..500,
// 2000-2001 daily. Each value encodes its indices so any misplaced read shows.
test::SourceSpec era_like() {
  test::SourceSpec s;
  s.levels = {1000, 850, 700, 500};
  for (double la = 40; la >= 20; la -= 2) s.lat.push_back(la);
  for (double lo = -120; lo <= -100; lo += 2) s.lon.push_back(lo);
  s.ndays = 366 + 365;
  s.value = [](int t, int z, int j, int i) { return t * 1000.0 + z * 100.0 + j * 10.0 + i * 0.1; };
  return s;
}

// z@850 over -116..-110 E, 24..30 N, in January, February and December of 2001.
const FieldWanted kZ850{"z@850", "z", 850};
Config::Fetch request() { return test::fetch_request(-116, -110, 24, 30, {2001, 2001}, {1, 2, 12}); }

bool no_temp_files(const std::string& dir) {
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.path().string().find(".tmp-") != std::string::npos) return false;
  return true;
}

}  // namespace

TEST(FetchLocal, CutsBoxLevelYearAndSeasonWithAscendingLatitude) {
  test::TempDir d;
  test::write_source(d / "src.nc", era_like());
  const auto res = fetch_local(d / "src.nc", kZ850, request(), d / "out.nc");
  EXPECT_EQ(res.ntime, 31u + 28u + 31u);  // Jan, Feb and Dec of 2001
  EXPECT_EQ(res.plan.fields[0].lat.size(), 4u);
  EXPECT_EQ(res.plan.fields[0].lon.size(), 4u);
  const Field f = read_field(d / "out.nc", "z");
  EXPECT_EQ(f.lat, (std::vector<double>{24, 26, 28, 30}));
  EXPECT_EQ(f.lon, (std::vector<double>{-116, -114, -112, -110}));
  EXPECT_EQ(to_string(civil_from_days(f.days.front())), "2001-01-01");
  EXPECT_EQ(to_string(civil_from_days(f.days[59])), "2001-12-01");
  // The value at output (t, j, i) equals the source at its own indices: source day index is
  // 366 + day-of-2001, level 850 is index 1, lat 24 is source row 8 (40, 38, ... descending).
  for (size_t t : {size_t(0), size_t(58), size_t(59), res.ntime - 1}) {
    const int doy = static_cast<int>(f.days[t] - days_from_civil({2001, 1, 1}));
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 4; ++i) {
        const int sj = 8 - j, si = 2 + i;
        const double want = (366 + doy) * 1000.0 + 100.0 + sj * 10.0 + si * 0.1;
        EXPECT_FLOAT_EQ(f.values[(t * 4 + j) * 4 + i], static_cast<float>(want));
      }
  }
  EXPECT_TRUE(no_temp_files(d.path()));
}

TEST(FetchLocal, MissingValuesBecomeNaNOnReadBack) {
  test::TempDir d;
  auto s = era_like();
  s.levels.clear();
  s.variable = "pr";
  s.value = [](int, int, int j, int i) { return (i + j) % 3 == 0 ? NAN : 1e-5; };
  test::write_source(d / "pr.nc", s);
  const auto res = fetch_local(d / "pr.nc", {"pr", "pr", 0}, request(), d / "out.nc");
  EXPECT_GT(res.missing_share, 0.2);
  const Field f = read_field(d / "out.nc", "pr");
  size_t nan = 0;
  for (float v : f.values) nan += std::isnan(v);
  EXPECT_NEAR(static_cast<double>(nan) / f.values.size(), res.missing_share, 1e-12);
}

TEST(FetchLocal, ErrorsNameSourceAndVariableAndLeaveNothing) {
  test::TempDir d;
  test::write_source(d / "src.nc", era_like());
  auto expect_input_error = [&](const std::string& src, FieldWanted w, Config::Fetch r, const std::string& needle) {
    try {
      fetch_local(d / src, w, r, d / "out.nc");
      ADD_FAILURE() << "no error for " << needle;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(d / "out.nc"));
    EXPECT_TRUE(no_temp_files(d.path()));
  };
  expect_input_error("src.nc", {"zg@850", "zg", 850}, request(), "no variable 'zg' (the file has: time, plev, lat, lon, z)");
  expect_input_error("src.nc", {"z@925", "z", 925}, request(), "variable 'z': no level 925 hPa (levels: 1000, 850, 700, 500)");
  auto r = request();
  r.years = {2001, 2002};
  expect_input_error("src.nc", kZ850, r, "no data for 2002");
  r = request();
  r.lon_min = 0, r.lon_max = 10;
  expect_input_error("src.nc", kZ850, r, "no longitudes inside");
  expect_input_error("missing.nc", kZ850, request(), "missing.nc: no such file");
}
