// First-order conservative regridding between regular lon-lat grids on the sphere.
// On a sphere of radius 1 the area of the lon-lat rectangle [l1, l2] x [p1, p2] is
//   (l2 - l1) (sin p2 - sin p1)      (l in radians),
// and the overlap of two such rectangles is again one, so the weight of source cell s in target
// cell d, overlap(d, s) / area(d), factorizes into a longitude part and a latitude part. This is
// exact for cells bounded by meridians and parallels (no great-circle edge approximation).
// Cells are bounded halfway between centres (grid.h: cell_edges), as CDO does for a regular grid
// without bounds.
#include <algorithm>
#include <cmath>

#include "io/error.h"
#include "preprocess/regrid.h"

namespace ds {

namespace {

constexpr double kDegToRad = M_PI / 180.0;

struct Overlap {
  int src;
  double share;  // part of the target cell's extent along this axis covered by this source cell
};

// For each target interval [te[i], te[i+1]], the source intervals it overlaps and the share of
// its measure (under `measure`, monotonic) each one covers.
template <class Measure>
std::vector<std::vector<Overlap>> overlaps_1d(const std::vector<double>& se, const std::vector<double>& te, Measure measure) {
  std::vector<std::vector<Overlap>> out(te.size() - 1);
  for (size_t i = 0; i + 1 < te.size(); ++i) {
    const double lo = te[i], hi = te[i + 1];
    const double whole = measure(hi) - measure(lo);
    // First source cell whose upper edge lies above lo.
    size_t s = std::upper_bound(se.begin(), se.end(), lo) - se.begin();
    s = s == 0 ? 0 : s - 1;
    for (; s + 1 < se.size() && se[s] < hi; ++s) {
      const double a = std::max(lo, se[s]), b = std::min(hi, se[s + 1]);
      if (b <= a) continue;
      const double part = (measure(b) - measure(a)) / whole;
      if (part > 1e-15) out[i].push_back({static_cast<int>(s), part});
    }
  }
  return out;
}

}  // namespace

RegridWeights conservative_weights(const Grid& src, const Grid& dst, const std::string& where) {
  if (!covers_cells(src, dst))
    throw InputError(where + ": source grid " + src.describe() + " does not cover the cells of target grid " + dst.describe() +
                     " (conservative regridding needs every target cell inside the source cells)");
  const auto slon = cell_edges(src.lon, -1e9, 1e9), slat = cell_edges(src.lat, -90, 90);
  const auto dlon = cell_edges(dst.lon, -1e9, 1e9), dlat = cell_edges(dst.lat, -90, 90);
  const auto ox = overlaps_1d(slon, dlon, [](double l) { return l; });
  const auto oy = overlaps_1d(slat, dlat, [](double p) { return std::sin(p * kDegToRad); });
  std::vector<Eigen::Triplet<double>> t;
  t.reserve(dst.size() * 9);
  for (int j = 0; j < dst.nlat(); ++j)
    for (int i = 0; i < dst.nlon(); ++i) {
      const long row = static_cast<long>(j) * dst.nlon() + i;
      for (const auto& y : oy[j])
        for (const auto& x : ox[i])
          t.emplace_back(row, static_cast<long>(y.src) * src.nlon() + x.src, y.share * x.share);
    }
  RegridWeights w(static_cast<long>(dst.size()), static_cast<long>(src.size()));
  w.setFromTriplets(t.begin(), t.end());
  return w;
}

}  // namespace ds
