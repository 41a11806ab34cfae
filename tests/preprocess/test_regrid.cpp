#include <gtest/gtest.h>

#include <cmath>

#include "io/error.h"
#include "preprocess/regrid.h"

using namespace ds;

namespace {
Grid grid(double lon0, double lon1, double lat0, double lat1, double step) {
  return Grid::from_spec(GridSpec{lon0, lon1, lat0, lat1, step});
}
std::vector<float> sample(const Grid& g, int ntime, double (*f)(double, double, int)) {
  std::vector<float> v;
  for (int t = 0; t < ntime; ++t)
    for (double la : g.lat)
      for (double lo : g.lon) v.push_back(static_cast<float>(f(lo, la, t)));
  return v;
}
double linear(double lo, double la, int t) { return 3.0 + 0.5 * lo - 0.25 * la + t; }
}  // namespace

// Bilinear interpolation reproduces any field linear in lon and lat exactly; the tolerance only
// covers float32 storage of values of order 100 (relative 1e-6 -> absolute 1e-4).
TEST(Regrid, BilinearIsExactOnLinearFields) {
  const Grid src = grid(-120, -100, 20, 40, 2.0), dst = grid(-119.75, -100.25, 20.25, 39.75, 0.5);
  const auto w = bilinear_weights(src, dst, "test");
  const auto out = apply_weights(w, sample(src, 3, linear), 3);
  const auto want = sample(dst, 3, linear);
  ASSERT_EQ(out.size(), want.size());
  for (size_t k = 0; k < out.size(); ++k) EXPECT_NEAR(out[k], want[k], 1e-4);
}

TEST(Regrid, WeightsSumToOneAndSubsetIsAnExactCopy) {
  const Grid src = grid(-120, -100, 20, 40, 0.5), dst = grid(-110, -105, 25, 30, 0.5);
  const auto w = bilinear_weights(src, dst, "test");
  for (int r = 0; r < w.rows(); ++r) {
    EXPECT_NEAR(w.row(r).sum(), 1.0, 1e-12);
    EXPECT_EQ(w.row(r).nonZeros(), 1);  // on a source point: only that point
  }
  // A NaN next to (but not on) a target point must not leak into it.
  auto field = sample(src, 1, linear);
  field[0] = NAN;  // (-120, 20): outside dst, neighbour of nothing in dst
  field[static_cast<size_t>(src.nlon()) * 10 + 19] = NAN;  // (-110.5, 25): next to dst's corner
  const auto out = apply_weights(w, field, 1);
  for (float v : out) EXPECT_TRUE(std::isfinite(v));
}

TEST(Regrid, NaNPropagatesWhereItHasWeight) {
  const Grid src = grid(0, 4, 0, 4, 2.0), dst = grid(1, 3, 1, 3, 2.0);
  auto field = sample(src, 1, linear);
  field[4] = NAN;  // centre point (2, 2) touches every target point
  const auto out = apply_weights(bilinear_weights(src, dst, "t"), field, 1);
  for (float v : out) EXPECT_TRUE(std::isnan(v));
}

TEST(Regrid, UncoveredTargetIsAnError) {
  try {
    bilinear_weights(grid(-120, -100, 20, 40, 2.0), grid(-125, -110, 25, 30, 0.5), "era.nc: variable 'z'");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("era.nc: variable 'z': source grid 11 x 11"), std::string::npos) << e.what();
  }
}

TEST(Grid, FromCoordsRejectsNonMonotonic) {
  EXPECT_THROW(Grid::from_coords({0, 2, 1}, {0, 1}, "f"), InputError);
  EXPECT_THROW(Grid::from_coords({0, 1}, {3, 2}, "f"), InputError);
  EXPECT_EQ(Grid::from_spec({-164.75, -60.75, 11.75, 69.75, 0.5}).size(), 209u * 117u);
}
