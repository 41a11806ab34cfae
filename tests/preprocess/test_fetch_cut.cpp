// fetch's cut widened for the grid preprocess regrids onto (plan_field's regridded_onto,
// fetch/plan.h): a GCM-like source whose cells do not line up with the predictor grid's covers
// every predictor-grid cell whole once fetch cuts one source cell beyond those cells, where the
// box as asked leaves the edge cells partly covered (preprocess/regrid_covering.h) and their
// values would come from part of their area.
#include <gtest/gtest.h>

#include <map>

#include "fetch/dataset.h"
#include "fetch/plan.h"
#include "io/netcdf_file.h"
#include "preprocess/grid.h"
#include "preprocess/regrid_covering.h"
#include "support/fetch_support.h"
#include "support/test_support.h"

using namespace ds;

namespace {

// CNRM-CM5's spacing (1.40625 degrees in longitude, about 1.4 in latitude), over 40W..40E and
// 10N..70N: centres nowhere on the 2-degree predictor grid's cell edges. January 2000, daily.
void write_gcm_like(const std::string& path, std::vector<double>& lon, std::vector<double>& lat) {
  lon.clear(), lat.clear();
  for (int k = -28; k <= 28; ++k) lon.push_back(1.40625 * k);
  for (int j = 0; j < 43; ++j) lat.push_back(10.3 + 1.4 * j);
  NcFile nc = NcFile::create(path);
  const int dt = nc.def_dim("time", 31), dy = nc.def_dim("lat", lat.size()), dx = nc.def_dim("lon", lon.size());
  const int t = nc.def_var("time", NC_DOUBLE, {dt});
  nc.put_att(t, "units", "days since 2000-01-01");
  nc.put_att(t, "calendar", "standard");
  const int y = nc.def_var("lat", NC_DOUBLE, {dy}), x = nc.def_var("lon", NC_DOUBLE, {dx});
  const int v = nc.def_var("psl", NC_FLOAT, {dt, dy, dx});
  nc.put_att(v, "units", "Pa");
  nc.end_define();
  nc.write(y, lat.data());
  nc.write(x, lon.data());
  std::vector<double> days(31);
  for (size_t i = 0; i < days.size(); ++i) days[i] = static_cast<double>(i);
  nc.write(t, days.data());
  std::vector<float> values(31 * lat.size() * lon.size(), 101325.0f);
  nc.write(v, {0, 0, 0}, {31, lat.size(), lon.size()}, values.data());
}

FieldPlan plan_psl(const std::string& path, const Config::Fetch& req, const GridSpec* onto) {
  std::map<std::string, NcFile> opened;
  const SourceOpener open = [&](const std::string& url) -> const NcFile& {
    auto it = opened.find(url);
    if (it == opened.end()) it = opened.emplace(url, open_source(url)).first;
    return it->second;
  };
  FetchPlan p;
  plan_field(open, path, passthrough_dataset(path), {"psl", "psl", 0}, req, p, onto);
  return p.fields.at(0);
}

CoverageRegrid coverage(const FieldPlan& f, const GridSpec& onto) {
  return regrid_covering(RegridMethod::conservative, Grid::from_coords(f.lon, f.lat, "fetched psl"),
                         Grid::from_spec(onto), "fetched psl");
}

}  // namespace

// The Iberia experiment's box and predictor grid (configs/iberia_tas.yaml): the grid's cells
// reach 1 degree past the box to the west, south and north.
TEST(FetchCut, WidenedForThePredictorGridCoversItsEdgeCellsWhole) {
  test::TempDir d;
  std::vector<double> lon, lat;
  write_gcm_like(d / "psl.nc", lon, lat);
  const Config::Fetch req = test::fetch_request(-10, 5, 35, 45, {2000, 2000}, {1});
  const GridSpec grid{-10, 4, 35, 45, 2.0};  // cells -11..5, 34..46

  const FieldPlan asked = plan_psl(d / "psl.nc", req, nullptr);
  EXPECT_GE(asked.lon.front(), -10.0);
  EXPECT_LE(asked.lon.back(), 5.0);
  EXPECT_TRUE(asked.widened.empty()) << asked.widened;
  const CoverageRegrid partly = coverage(asked, grid);
  EXPECT_GT(partly.partial, 0u);  // the box alone: edge cells partly covered
  EXPECT_LT(partly.least_covered, 0.9);

  const FieldPlan cut = plan_psl(d / "psl.nc", req, &grid);
  // One source step (1.40625; 1.4 in latitude) beyond the cells: -11 - 1.40625 = -12.40625, the
  // centre at -11.25 is the first inside; 5 + 1.40625 = 6.40625: 5.625 the last.
  EXPECT_DOUBLE_EQ(cut.lon.front(), -11.25);
  EXPECT_DOUBLE_EQ(cut.lon.back(), 5.625);
  EXPECT_NEAR(cut.lat.front(), 32.7, 1e-9);  // 34 - 1.4 = 32.6: 32.7 first
  EXPECT_NEAR(cut.lat.back(), 46.7, 1e-9);   // 46 + 1.4 = 47.4: 46.7 last (48.1 is past it)
  EXPECT_EQ(cut.widened.rfind("lon -11.25..5.625, lat 32.7", 0), 0u) << cut.widened;
  const CoverageRegrid whole = coverage(cut, grid);
  EXPECT_EQ(whole.partial, 0u);
  EXPECT_DOUBLE_EQ(whole.least_covered, 1.0);
}

// A box already one source cell past the grid's cells is cut as asked (the North America
// configs' predictor box); the cut stops at the poles, and goes past the -180/180 seam
// (lon_selection then takes the source's columns across it, with longitudes past 180, so the
// cells there are regridded whole).
TEST(FetchCut, WidenedOnlyWhereTheGridNeedsItNeverPastAPoleButPastTheSeam) {
  Config::Fetch na = test::fetch_request(-167, -58, 10, 72, {2000, 2000}, {1});
  const GridSpec na_grid{-165, -61, 12, 70, 2.0};
  CutBox b = widened_cut(na, na_grid, 0.75, 0.75);
  EXPECT_DOUBLE_EQ(b.lon_min, -167);
  EXPECT_DOUBLE_EQ(b.lon_max, -58);
  EXPECT_DOUBLE_EQ(b.lat_min, 10);
  EXPECT_DOUBLE_EQ(b.lat_max, 72);

  b = widened_cut(na, na_grid, 2.8125, 2.8);  // a 2.8-degree GCM: past the box
  EXPECT_DOUBLE_EQ(b.lon_min, -166 - 2.8125);
  EXPECT_DOUBLE_EQ(b.lon_max, -60 + 2.8125);
  EXPECT_DOUBLE_EQ(b.lat_min, 11 - 2.8);
  EXPECT_DOUBLE_EQ(b.lat_max, 71 + 2.8);

  const Config::Fetch polar = test::fetch_request(170, 180, 80, 90, {2000, 2000}, {1});
  b = widened_cut(polar, GridSpec{170, 180, 80, 90, 2.0}, 2.5, 2.5);
  EXPECT_DOUBLE_EQ(b.lon_min, 170 - 1 - 2.5);
  EXPECT_DOUBLE_EQ(b.lon_max, 180 + 1 + 2.5);
  EXPECT_DOUBLE_EQ(b.lat_min, 80 - 1 - 2.5);
  EXPECT_DOUBLE_EQ(b.lat_max, 90);

  // A global grid: past both ends of the seam, wider than a turn.
  const Config::Fetch global = test::fetch_request(-180, 180, 30, 50, {2000, 2000}, {1});
  b = widened_cut(global, GridSpec{-180, 178, 36, 44, 2.0}, 2.5, 2.5);
  EXPECT_DOUBLE_EQ(b.lon_min, -180 - 1 - 2.5);
  EXPECT_DOUBLE_EQ(b.lon_max, 178 + 1 + 2.5);
}

// A cut widened for the grid's edge cells may reach into a source that does not cover the box
// itself: refused, naming the source's extent, rather than fetching the grid's edge alone.
TEST(FetchCut, ASourceThatDoesNotReachTheBoxIsRefused) {
  test::TempDir d;
  std::vector<double> lon, lat;
  write_gcm_like(d / "psl.nc", lon, lat);  // lon -39.375..39.375
  const Config::Fetch req = test::fetch_request(45, 50, 35, 45, {2000, 2000}, {1});
  const GridSpec grid{38, 50, 35, 45, 2.0};  // cells 37..51: the widened cut reaches 35.6
  try {
    plan_psl(d / "psl.nc", req, &grid);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("its grid (lon -39.375..39.375, lat 10.3..69.1) does not reach the box "
                                         "fetch.lon [45, 50], fetch.lat [35, 45]"),
              std::string::npos)
        << e.what();
  }
  // A box the source reaches within a step is planned as before.
  const Config::Fetch near = test::fetch_request(40, 50, 35, 45, {2000, 2000}, {1});
  EXPECT_NO_THROW(plan_psl(d / "psl.nc", near, &grid));
}

// The source's cell_methods in the fetched file's dimension names, or none where it names a
// dimension the fetched file does not have.
TEST(FetchCut, CellMethodsNameTheFetchedDimensions) {
  const std::map<std::string, std::string> names{{"valid_time", "time"}, {"latitude", "lat"}, {"longitude", "lon"}};
  EXPECT_EQ(fetched_cell_methods("valid_time: mean", names), "time: mean");
  EXPECT_EQ(fetched_cell_methods("valid_time: mean (interval: 1 day comment: from 24 hours)", names),
            "time: mean (interval: 1 day comment: from 24 hours)");
  EXPECT_EQ(fetched_cell_methods("area: mean valid_time: maximum", names), "area: mean time: maximum");
  EXPECT_EQ(fetched_cell_methods("latitude: longitude: mean", names), "lat: lon: mean");
  EXPECT_EQ(fetched_cell_methods("plev: mean valid_time: mean", names), "");
  EXPECT_EQ(fetched_cell_methods("", names), "");
}
