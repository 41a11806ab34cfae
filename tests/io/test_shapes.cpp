// The shapefile reader against Debian's Natural Earth data (libmagics++-data): Iberia's
// coastline and the Spain-Portugal border are found in an Iberia box, cut to it; the search
// path honours DOWNSCALE_NATURAL_EARTH. Skips with a message when the data is not installed.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>

#include "io/error.h"
#include "io/shapes.h"
#include "support/scoped_env.h"

namespace {

const ds::LonLatBox kIberia{-10, 4, 36, 44};

// Distance in degrees from p to the nearest vertex of any line.
double nearest(const std::vector<ds::Polyline>& lines, ds::LonLat p) {
  double best = 1e9;
  for (const auto& l : lines)
    for (const auto& q : l) best = std::min(best, std::hypot(q.lon - p.lon, q.lat - p.lat));
  return best;
}

}  // namespace

TEST(Shapes, ResolutionFollowsTheExtent) {
  EXPECT_EQ(ds::natural_earth_resolution({-180, 180, -90, 90}), "110m");
  EXPECT_EQ(ds::natural_earth_resolution({-110, -87.5, 29.5, 44}), "50m");  // the demo
  EXPECT_EQ(ds::natural_earth_resolution(kIberia), "50m");
  EXPECT_EQ(ds::natural_earth_resolution({-4, 1, 40, 43}), "10m");
}

TEST(Shapes, FindsIberiasCoastWithinTheIberiaBox) {
  const std::string land = ds::find_natural_earth("land", "50m");
  if (land.empty()) GTEST_SKIP() << "no Natural Earth 50m land (install libmagics++-data or set DOWNSCALE_NATURAL_EARTH)";
  const auto lines = ds::read_shapefile_lines(land, kIberia);
  ASSERT_FALSE(lines.empty());
  // Cabo da Roca (9.50 W, 38.78 N), Gibraltar (5.35 W, 36.14 N), Cap de Creus (3.32 E, 42.32 N):
  // within a few km of a vertex at 1:50m.
  EXPECT_LT(nearest(lines, {-9.50, 38.78}), 0.1);
  EXPECT_LT(nearest(lines, {-5.35, 36.14}), 0.1);
  EXPECT_LT(nearest(lines, {3.32, 42.32}), 0.1);
  // Cut to the box: every segment touches it, so nothing of Africa's far coast or of Scandinavia.
  size_t vertices = 0;
  for (const auto& l : lines) {
    ASSERT_GE(l.size(), 2u);
    for (size_t k = 1; k < l.size(); ++k) {
      const auto &a = l[k - 1], &b = l[k];
      EXPECT_TRUE(std::max(a.lon, b.lon) >= kIberia.west && std::min(a.lon, b.lon) <= kIberia.east &&
                  std::max(a.lat, b.lat) >= kIberia.south && std::min(a.lat, b.lat) <= kIberia.north);
    }
    vertices += l.size();
  }
  EXPECT_LT(vertices, 5000u);  // Eurasia's ring has ~20000 vertices at 50m: only the Iberian part is kept
}

TEST(Shapes, FindsTheSpainPortugalBorder) {
  const std::string borders = ds::find_natural_earth("admin_0_boundary_lines_land", "50m");
  if (borders.empty()) GTEST_SKIP() << "no Natural Earth 50m borders (install libmagics++-data)";
  const auto lines = ds::read_shapefile_lines(borders, kIberia);
  ASSERT_FALSE(lines.empty());
  EXPECT_LT(nearest(lines, {-7.0, 38.2}), 0.3);  // the Guadiana stretch of the border
  EXPECT_LT(nearest(lines, {1.5, 42.5}), 0.3);   // Andorra / the Pyrenees
}

TEST(Shapes, EnvironmentOverridesTheSearchPath) {
  const ds::test::ScopedEnv no_data("DOWNSCALE_NATURAL_EARTH", "/nonexistent/natural_earth");
  EXPECT_EQ(ds::natural_earth_dirs(), std::vector<std::string>{"/nonexistent/natural_earth"});
  EXPECT_EQ(ds::find_natural_earth("land", "50m"), "");
}

TEST(Shapes, AMissingFileIsAnErrorNamingIt) {
  try {
    ds::read_shapefile_lines("/nonexistent/ne_50m_land.shp", kIberia);
    FAIL() << "no error";
  } catch (const ds::Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/ne_50m_land.shp"), std::string::npos) << e.what();
  }
}
