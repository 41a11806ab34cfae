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

namespace {
// Area of a lon-lat cell on the unit sphere: (l2 - l1)(sin p2 - sin p1), l in radians.
std::vector<double> cell_areas(const Grid& g) {
  const auto ex = cell_edges(g.lon, -1e9, 1e9), ey = cell_edges(g.lat, -90, 90);
  std::vector<double> a;
  for (int j = 0; j < g.nlat(); ++j)
    for (int i = 0; i < g.nlon(); ++i)
      a.push_back((ex[i + 1] - ex[i]) * M_PI / 180 * (std::sin(ey[j + 1] * M_PI / 180) - std::sin(ey[j] * M_PI / 180)));
  return a;
}
double wavy(double lo, double la, int t) { return 280 + 20 * std::sin(lo * 0.3 + t) * std::cos(la * 0.2) + la; }
double integral(const std::vector<float>& f, const std::vector<double>& area) {
  double s = 0;
  for (size_t k = 0; k < area.size(); ++k) s += f[k] * area[k];
  return s;
}
}  // namespace

// Conservative regridding keeps the area-weighted integral over a domain both grids tile
// exactly (here lon -120..-100, lat 20..40: 2° cells centred on odd degrees, 0.5° and 1.25°
// cells). Tolerance 1e-6 relative: the float32 values (7 significant digits) bound it, the
// weights themselves are exact to 1e-15.
TEST(Regrid, ConservativeKeepsTheAreaWeightedIntegral) {
  const Grid coarse = grid(-119, -101, 21, 39, 2.0), fine = grid(-119.75, -100.25, 20.25, 39.75, 0.5);
  const Grid odd = grid(-119.375, -100.625, 20.625, 39.375, 1.25);
  for (const auto& [src, dst] : {std::pair{fine, coarse}, std::pair{coarse, fine}, std::pair{fine, odd}, std::pair{odd, coarse}}) {
    const auto in = sample(src, 2, wavy);
    const auto out = apply_weights_renormalized(conservative_weights(src, dst, "t"), in, 2);
    const auto as = cell_areas(src), ad = cell_areas(dst);
    for (int t = 0; t < 2; ++t) {
      const std::vector<float> a(in.begin() + t * src.size(), in.begin() + (t + 1) * src.size());
      const std::vector<float> b(out.begin() + t * dst.size(), out.begin() + (t + 1) * dst.size());
      EXPECT_NEAR(integral(b, ad) / integral(a, as), 1.0, 1e-6) << src.describe() << " -> " << dst.describe();
    }
  }
}

// With missing source cells, a target cell is the mean over its valid overlap only; with none
// valid it is missing.
TEST(Regrid, ConservativeRenormalizesOverValidOverlap) {
  const Grid src = grid(0.5, 3.5, 0.5, 3.5, 1.0), dst = grid(1, 3, 1, 3, 2.0);  // 4x4 -> 2x2 cells
  std::vector<float> f{1, 2, 3, NAN,  5, 6, NAN, NAN,  1, 1, 1, 1,  1, 1, 1, 1};  // lat-major
  const auto out = apply_weights_renormalized(conservative_weights(src, dst, "t"), f, 1);
  // Lower-left cell: sources 1, 2 (lat 0..1) and 5, 6 (lat 1..2, slightly smaller on the
  // sphere): their area-weighted mean, not 3.5.
  const double a0 = std::sin(1 * M_PI / 180) - std::sin(0), a1 = std::sin(2 * M_PI / 180) - std::sin(1 * M_PI / 180);
  EXPECT_NEAR(out[0], (a0 * (1 + 2) + a1 * (5 + 6)) / (2 * a0 + 2 * a1), 1e-5);
  EXPECT_NE(out[0], 3.5f);
  EXPECT_NEAR(out[1], 3.0f, 1e-6);  // lower-right: only source 3 is valid
  EXPECT_NEAR(out[2], 1.0f, 1e-6);
  std::vector<float> g{NAN, NAN, 1, 1,  NAN, NAN, 1, 1,  1, 1, 1, 1,  1, 1, 1, 1};
  EXPECT_TRUE(std::isnan(apply_weights_renormalized(conservative_weights(src, dst, "t"), g, 1)[0]));
}

TEST(Regrid, NearestPicksTheClosestCentre) {
  const Grid src = grid(0, 10, 0, 10, 1.0), dst = grid(0.4, 9.4, 0.6, 9.6, 1.5);
  const auto w = nearest_weights(src, dst, "t");
  const auto out = apply_weights(w, sample(src, 1, linear), 1);
  for (int j = 0; j < dst.nlat(); ++j)
    for (int i = 0; i < dst.nlon(); ++i)
      EXPECT_FLOAT_EQ(out[j * dst.nlon() + i], linear(std::round(dst.lon[i]), std::round(dst.lat[j]), 0));
}

TEST(Regrid, ConservativeAndNearestNeedTheTargetCellsCovered) {
  const Grid src = grid(-120, -100, 20, 40, 2.0);
  // Centres inside the source cells (which reach -121), but the first target cell reaches -121.5.
  const Grid dst = grid(-120.5, -100.5, 20, 40, 2.0);
  EXPECT_THROW(conservative_weights(src, dst, "f"), InputError);
  EXPECT_THROW(nearest_weights(src, dst, "f"), InputError);
  EXPECT_THROW(nearest_weights(src, grid(-125, -110, 25, 30, 0.5), "f"), InputError);
  EXPECT_NO_THROW(conservative_weights(src, grid(-120.75, -99.25, 19.25, 40.75, 0.5), "f"));
}

// Source grids with uneven latitudes, as NCEP's T62 Gaussian grid (tas): the latitudes of
// tests/data/iberia/NCEP_Iberia_tas.nc, spacing 1.9047..1.9048 deg. Bilinear stays exact on
// linear fields, conservative keeps constants and the area-weighted integral where both grids
// tile the same band, nearest picks the closest uneven latitude.
TEST(Regrid, UnevenSourceLatitudesLikeAGaussianGrid) {
  Grid gauss;
  gauss.lat = {35.2374992370605, 37.1422004699707, 39.0470008850098, 40.9516983032227, 42.8563995361328, 44.761100769043};
  for (double lo = -11.25; lo <= 5.7; lo += 1.875) gauss.lon.push_back(lo);
  const Grid dst = grid(-10, 4, 36, 44, 2.0);
  const auto out = apply_weights(bilinear_weights(gauss, dst, "t"), sample(gauss, 2, linear), 2);
  const auto want = sample(dst, 2, linear);
  for (size_t k = 0; k < out.size(); ++k) EXPECT_NEAR(out[k], want[k], 1e-4) << k;
  // Strongly uneven latitudes make the difference between interpolating in index and in degrees.
  Grid uneven;
  uneven.lat = {20, 21, 25, 33, 40};
  uneven.lon = {0, 5, 10};
  const Grid mid = grid(1, 9, 20.5, 39.5, 1.0);
  const auto o2 = apply_weights(bilinear_weights(uneven, mid, "t"), sample(uneven, 1, linear), 1);
  const auto w2 = sample(mid, 1, linear);
  for (size_t k = 0; k < o2.size(); ++k) EXPECT_NEAR(o2[k], w2[k], 1e-4) << k;
  // Conservative: a constant stays that constant (weights of a covered cell sum to 1).
  std::vector<float> ones(gauss.size(), 7.0f);
  const Grid inner = grid(-9, 3, 37, 43, 2.0);
  for (float v : apply_weights_renormalized(conservative_weights(gauss, inner, "t"), ones, 1)) EXPECT_NEAR(v, 7.0f, 1e-5);
  // Nearest: the closest Gaussian latitude, not the closest index of a regular grid.
  const Grid pts = grid(0, 0, 36.1, 44.1, 2.0);  // 36.1 -> 35.24 (0.86 away) vs 37.14 (1.04): first
  const auto w = nearest_weights(gauss, pts, "t");
  const auto near = apply_weights(w, sample(gauss, 1, linear), 1);
  for (int j = 0; j < pts.nlat(); ++j) {
    double best = gauss.lat[0];
    for (double la : gauss.lat)
      if (std::abs(la - pts.lat[j]) < std::abs(best - pts.lat[j])) best = la;
    EXPECT_FLOAT_EQ(near[j], float(linear(0.0, best, 0))) << pts.lat[j];
  }
}
