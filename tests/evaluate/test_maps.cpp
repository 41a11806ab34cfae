// The evaluation maps: colour scales (shared limits, extend decisions, BrBG centred at 0),
// graticule ticks at true degrees (not at cell edges by accident), and the rendered PNG read
// back: the bias palette's colours, and coastline pixels over Iberia (skipped without Natural
// Earth data), drawn without a crash when the data is missing; a season's maps on the annual
// map's colour scale.
#include <cairo.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <fstream>

#include "evaluate/evaluation_maps.h"
#include "evaluate/maps.h"
#include "support/test_support.h"
#include "support/scoped_env.h"

using namespace ds;
using ds::test::TempDir;

namespace {

std::vector<double> linspace(double a, double b, int n) {
  std::vector<double> v(n);
  for (int i = 0; i < n; ++i) v[i] = a + (b - a) * i / (n - 1);
  return v;
}

struct Image {
  int w = 0, h = 0;
  std::vector<uint32_t> px;  // 0xRRGGBB
  uint32_t at(double x, double y) const { return px[size_t(int(y)) * w + int(x)]; }
};

Image read_png(const std::string& path) {
  cairo_surface_t* s = cairo_image_surface_create_from_png(path.c_str());
  EXPECT_EQ(cairo_surface_status(s), CAIRO_STATUS_SUCCESS) << path;
  cairo_surface_flush(s);
  Image im;
  im.w = cairo_image_surface_get_width(s), im.h = cairo_image_surface_get_height(s);
  const int stride = cairo_image_surface_get_stride(s);
  const unsigned char* data = cairo_image_surface_get_data(s);
  for (int y = 0; y < im.h; ++y)
    for (int x = 0; x < im.w; ++x) im.px.push_back(reinterpret_cast<const uint32_t*>(data + y * stride)[x] & 0xffffff);
  cairo_surface_destroy(s);
  return im;
}

int channel(uint32_t c, int shift) { return (c >> shift) & 255; }

// Iberia at 0.5 degrees: cell centres -9.75..3.75 E, 36.25..43.75 N.
MapField iberia(const std::vector<double>& values, ColourScale s) {
  return MapField{"test", "mm/day", linspace(-9.75, 3.75, 28), linspace(36.25, 43.75, 16), values, s};
}

}  // namespace

TEST(Maps, RoundSteps) {
  EXPECT_DOUBLE_EQ(round_step(3.75), 5);
  EXPECT_DOUBLE_EQ(round_step(0.3), 0.5);
  EXPECT_DOUBLE_EQ(round_step(1), 1);
  EXPECT_DOUBLE_EQ(round_step(0.12), 0.2);
  EXPECT_DOUBLE_EQ(round_step(11), 20);
}

TEST(Maps, SharedLimitsCoverBothFields) {
  // Observed 1..3, predicted 2..5 mm/day: one scale from both (the 1.29-4.74 against
  // 1.77-4.05), rounded outward to round numbers, nothing clamped.
  const auto obs = linspace(1, 3, 100), pred = linspace(2, 5, 100);
  const ColourScale s = colour_scale({&obs, &pred}, Palette::kYlGnBu, false);
  EXPECT_DOUBLE_EQ(s.lo, 1);
  EXPECT_DOUBLE_EQ(s.hi, 5);
  EXPECT_FALSE(s.extend_low);
  EXPECT_FALSE(s.extend_high);
  EXPECT_EQ(s.palette, Palette::kYlGnBu);
  // Alone, each would get its own (different) range.
  EXPECT_LT(colour_scale({&pred}, Palette::kYlGnBu, false).lo, 2.0001);
  EXPECT_GT(colour_scale({&obs}, Palette::kYlGnBu, false).hi, 2.99);
  EXPECT_LT(colour_scale({&obs}, Palette::kYlGnBu, false).hi, 4);
}

TEST(Maps, ExtendsWhereValuesAreClamped) {
  // One box at 50 among values 0..1: the 98th percentile keeps the range at 0..1 and the bar
  // gets an arrow at the top only; NaN (ocean) plays no part.
  auto v = linspace(0, 1, 200);
  v.push_back(50);
  v.push_back(NAN);
  const ColourScale s = colour_scale({&v}, Palette::kViridis, false);
  EXPECT_DOUBLE_EQ(s.lo, 0);
  EXPECT_LE(s.hi, 1.2);
  EXPECT_TRUE(s.extend_high);
  EXPECT_FALSE(s.extend_low);
}

TEST(Maps, DivergingScalesAreCentredAtZero) {
  auto v = linspace(-0.3, 1.2, 100);
  const ColourScale s = colour_scale({&v}, Palette::kBrBG, true);
  EXPECT_DOUBLE_EQ(s.lo, -s.hi);
  EXPECT_GE(s.hi, 1.15);
  EXPECT_FALSE(s.extend_low);
  std::vector<double> none{NAN, NAN};
  const ColourScale e = colour_scale({&none}, Palette::kBrBG, true);  // all ocean: a valid scale
  EXPECT_GT(e.hi, e.lo);
}

TEST(Maps, TicksAtTrueDegreesNotCellEdges) {
  // Cell centres -110..-100 (1 degree): the map spans -110.5..-99.5 and 110°W is the first
  // cell's centre, half a cell in from the map's edge.
  const MapGeometry g = map_geometry(linspace(-110, -100, 11), linspace(30, 40, 11), 50, 20, 550, 550);
  EXPECT_DOUBLE_EQ(g.west, -110.5);
  EXPECT_DOUBLE_EQ(g.px_per_degree, 50);
  const auto lons = longitude_ticks(g);
  ASSERT_FALSE(lons.empty());
  EXPECT_EQ(lons.front().label, "110\u00b0W");
  EXPECT_DOUBLE_EQ(lons.front().pixel, 50 + 0.5 * 50);
  for (const auto& t : lons) EXPECT_DOUBLE_EQ(t.pixel, g.x(t.degrees));
  // The demo's 0.5-degree grid (centres -109.75..-87.75): 110°W is the map's west edge, and the
  // first centre -109.75 carries no label of its own.
  const MapGeometry d = map_geometry(linspace(-109.75, -87.75, 45), linspace(29.75, 43.75, 29), 0, 0, 560, 460);
  const auto dl = longitude_ticks(d);
  EXPECT_EQ(dl.front().label, "110\u00b0W");
  EXPECT_DOUBLE_EQ(dl.front().pixel, 0);
  EXPECT_EQ(dl.back().label, "90\u00b0W");
  EXPECT_DOUBLE_EQ(dl[1].pixel, 5 * d.px_per_degree);  // 105°W
  const auto la = latitude_ticks(d);
  EXPECT_EQ(la.front().label, "30\u00b0N");
  EXPECT_DOUBLE_EQ(la.front().pixel, (44.0 - 30.0) * d.px_per_degree);  // north edge 44
  // Hemispheres and 0.
  const MapGeometry z = map_geometry(linspace(-10, 10, 21), linspace(-10, 10, 21), 0, 0, 400, 400);
  std::vector<std::string> labels;
  for (const auto& t : longitude_ticks(z)) labels.push_back(t.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"10\u00b0W", "5\u00b0W", "0\u00b0", "5\u00b0E", "10\u00b0E"}));
  // Every 2.5 degrees (a 14-degree box at 0.25): the labels keep the half degree.
  const MapGeometry q = map_geometry(linspace(0.125, 13.875, 56), linspace(40.125, 53.875, 56), 0, 0, 440, 440);
  labels.clear();
  for (const auto& t : latitude_ticks(q)) labels.push_back(t.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"40\u00b0N", "42.5\u00b0N", "45\u00b0N", "47.5\u00b0N", "50\u00b0N", "52.5\u00b0N"}));
  // A global grid (1-degree centres -179.5..179.5): every 60 degrees, 180 at the edges.
  const MapGeometry w = map_geometry(linspace(-179.5, 179.5, 360), linspace(-89.5, 89.5, 180), 0, 0, 720, 360);
  labels.clear();
  for (const auto& t : longitude_ticks(w)) labels.push_back(t.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"180\u00b0W", "120\u00b0W", "60\u00b0W", "0\u00b0", "60\u00b0E", "120\u00b0E",
                                              "180\u00b0E"}));
}

TEST(Maps, BiasPaletteIsBrownDrierGreenWetterWhiteAtZero) {
  TempDir dir;
  // Three columns of cells: -1 (drier), 0, +1 (wetter) mm/day; a NaN row of ocean.
  const std::vector<double> lon{0, 1, 2}, lat{0, 1};
  const std::vector<double> v{-1, 0, 1, NAN, NAN, NAN};
  const ColourScale s = colour_scale({&v}, Palette::kBrBG, true);
  const std::string path = dir.path() + "/bias.png";
  write_map_png(path, MapField{"bias", "mm/day", lon, lat, v, s}, Basemap{});
  const Image im = read_png(path);
  const MapGeometry g = map_geometry(lon, lat, 62, 40, 560, 460);  // the panel's layout
  // Sampled 0.3 degrees off the centres: the graticule (every 0.5 degrees here) runs through them.
  auto at = [&](double lon, double lat) { return im.at(g.x(lon + 0.3), g.y(lat + 0.3)); };
  const uint32_t dry = at(0, 0), zero = at(1, 0), wet = at(2, 0), ocean = at(1, 1);
  EXPECT_EQ(zero, 0xf5f5f5u) << std::hex << zero;  // BrBG's centre class
  EXPECT_GT(channel(dry, 16), channel(dry, 0) + 40) << std::hex << dry;  // brown: red above blue
  EXPECT_GT(channel(wet, 8), channel(wet, 16) + 40) << std::hex << wet;  // green-teal: green above red
  EXPECT_EQ(channel(ocean, 16), channel(ocean, 0));  // grey
  EXPECT_NE(ocean, zero);
}

TEST(Maps, CoastlinesOverIberia) {
  const MapField f = iberia(std::vector<double>(28 * 16, 2.0), ColourScale{Palette::kYlGnBu, 0, 4, false, false});
  const Basemap b = load_basemap(f.lon, f.lat);
  if (b.coastlines.empty()) GTEST_SKIP() << "no Natural Earth data (install libmagics++-data)";
  EXPECT_FALSE(b.borders.empty());
  TempDir dir;
  write_map_png(dir.path() + "/with.png", f, b);
  write_map_png(dir.path() + "/without.png", f, Basemap{});
  const Image with = read_png(dir.path() + "/with.png"), without = read_png(dir.path() + "/without.png");
  ASSERT_EQ(with.w, without.w);
  // Dark line pixels inside the map area: the coast of Iberia is ~ 3000 km, 28 px per degree.
  const MapGeometry g = map_geometry(f.lon, f.lat, 62, 40, 560, 460);
  int dark_with = 0, dark_without = 0;
  for (int y = int(g.y0) + 2; y < int(g.y0 + g.height()) - 2; ++y)
    for (int x = int(g.x0) + 2; x < int(g.x0 + g.width()) - 2; ++x) {
      dark_with += channel(with.at(x, y), 8) < 80;
      dark_without += channel(without.at(x, y), 8) < 80;
    }
  EXPECT_EQ(dark_without, 0);
  EXPECT_GT(dark_with, 500);
  // Lisbon's coast (Cabo da Roca, 9.50 W 38.78 N) is drawn: a dark pixel within 3 px.
  int near = 0;
  for (int dy = -3; dy <= 3; ++dy)
    for (int dx = -3; dx <= 3; ++dx) near += channel(with.at(g.x(-9.50) + dx, g.y(38.78) + dy), 8) < 80;
  EXPECT_GT(near, 0);
}

TEST(Maps, MissingNaturalEarthDrawsTheMapWithoutCoastlines) {
  const ds::test::ScopedEnv no_data("DOWNSCALE_NATURAL_EARTH", "/nonexistent/natural_earth");
  const MapField f = iberia(std::vector<double>(28 * 16, 1.0), ColourScale{});
  const Basemap b = load_basemap(f.lon, f.lat);  // a warning, no throw
  EXPECT_TRUE(b.coastlines.empty());
  EXPECT_TRUE(b.borders.empty());
  TempDir dir;
  write_map_png(dir.path() + "/map.png", f, b);
  write_figure_png(dir.path() + "/figure.png", "two panels", {f, f}, b);
  EXPECT_GT(read_png(dir.path() + "/figure.png").w, read_png(dir.path() + "/map.png").w * 3 / 2);
}

TEST(Maps, ARegionalMapFallsBackToACoarserResolution) {
  // A 5-degree box wants 1:10m; a copy holding only 1:50m (as the relocatable bundle) still
  // gives coastlines.
  const std::string src = find_natural_earth("land", "50m");
  if (src.empty()) GTEST_SKIP() << "no Natural Earth 50m data (install libmagics++-data)";
  TempDir dir;
  const std::string stem = src.substr(0, src.size() - 4), to = dir.path() + "/50m/ne_50m_land";
  ASSERT_EQ(system(("mkdir -p " + dir.path() + "/50m && cp " + stem + ".shp " + to + ".shp && cp " + stem + ".shx " +
                    to + ".shx && cp " + stem + ".dbf " + to + ".dbf")
                       .c_str()),
            0);
  const ds::test::ScopedEnv copy("DOWNSCALE_NATURAL_EARTH", dir.path().c_str());
  const Basemap b = load_basemap(linspace(-9.75, -5.25, 10), linspace(36.25, 39.75, 8));  // SW Iberia
  EXPECT_FALSE(b.coastlines.empty());
}

// evaluate.seasons: each season's maps beside the annual ones, every kind on one colour scale
// over the periods (evaluate/evaluation_maps.h), so one amount is one colour in every map.
TEST(Maps, SeasonMapsShareTheAnnualColourScale) {
  TempDir dir;
  // Open Atlantic (no coastline through the sampled cells): 3 x 2 boxes, the top row ocean.
  const std::vector<double> lon{-40, -39, -38}, lat{40, 41};
  auto evaluation = [](std::vector<double> mean) {
    Evaluation e;
    e.npoints = mean.size();
    e.ndays = 90;
    e.observed.mean = mean;
    MethodScores cnn;
    cnn.name = "cnn_deterministic";
    cnn.indices.mean = mean;
    cnn.rocss = std::vector<double>(mean.size(), 0.5);
    e.methods.push_back(cnn);
    return e;
  };
  // 3 mm/day is the wettest box of the year and the driest of DJF.
  const Evaluation annual = evaluation({1, 2, 3, NAN, NAN, NAN});
  const SeasonEvaluation djf{"DJF", {12, 1, 2}, evaluation({3, 4, 5, NAN, NAN, NAN})};
  write_precipitation_maps(dir.path(), {lon, lat}, "test.yaml", annual, {djf});
  for (const char* name : {"observed_mean", "predicted_mean", "bias", "rocss", "summary"}) {
    EXPECT_TRUE(std::ifstream(dir.path() + "/" + name + "_DJF.png").good()) << name;
    EXPECT_FALSE(std::ifstream(dir.path() + "/" + name + "_JJA.png").good()) << name;
  }
  const Image year = read_png(dir.path() + "/observed_mean.png"), winter = read_png(dir.path() + "/observed_mean_DJF.png");
  ASSERT_EQ(year.w, winter.w);
  ASSERT_EQ(year.h, winter.h);
  const MapGeometry g = map_geometry(lon, lat, 62, 40, 560, 460);  // the panel's layout
  auto at = [&](const Image& im, double lon, double lat) { return im.at(g.x(lon + 0.3), g.y(lat + 0.3)); };
  EXPECT_EQ(at(year, -38, 40), at(winter, -40, 40)) << std::hex << at(year, -38, 40) << " " << at(winter, -40, 40);
  EXPECT_NE(at(year, -40, 40), at(winter, -40, 40));  // 1 and 3 mm/day: not one colour
}

// A box across the antimeridian (fetch.lon [170, 190]): ticks past 180 read as the west they are,
// and the coastlines on both sides of 180 are drawn, whichever side the grid's longitudes run past.
TEST(Maps, AcrossTheAntimeridian) {
  const MapGeometry g = map_geometry(linspace(170.25, 189.75, 40), linspace(60.25, 69.75, 20), 0, 0, 400, 200);
  std::vector<std::string> labels;
  for (const auto& t : longitude_ticks(g)) labels.push_back(t.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"170\u00b0E", "175\u00b0E", "180\u00b0E", "175\u00b0W", "170\u00b0W"}));
  for (const auto& [west, east] : {std::pair<double, double>{170.25, 189.75}, {-189.75, -170.25}}) {
    const Basemap b = load_basemap(linspace(west, east, 40), linspace(60.25, 69.75, 20));
    if (b.coastlines.empty()) GTEST_SKIP() << "no Natural Earth data (install libmagics++-data)";
    // Chukotka (west of 180) and Alaska's St Lawrence Island (east of it, 170 W) both drawn.
    int west_of_180 = 0, east_of_180 = 0;
    const double seam = west > 0 ? 180 : -180;
    for (const auto& line : b.coastlines)
      for (const auto& p : line) (p.lon < seam ? west_of_180 : east_of_180) += 1;
    EXPECT_GT(west_of_180, 10) << west;
    EXPECT_GT(east_of_180, 10) << west;
  }
}
