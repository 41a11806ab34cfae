#include "preprocess/regrid_covering.h"

#include <algorithm>
#include <sstream>
#include <vector>

#include "io/error.h"

namespace ds {

namespace {

std::string point(double lon, double lat) {
  std::ostringstream s;
  s << "(lon " << lon << ", lat " << lat << ")";
  return s.str();
}

// "(lon -10, lat 35), (lon -10, lat 37), ... and 3 more".
std::string list_points(const std::vector<std::string>& pts) {
  std::string s;
  for (size_t i = 0; i < pts.size() && i < 8; ++i) s += (i ? ", " : "") + pts[i];
  if (pts.size() > 8) s += " and " + std::to_string(pts.size() - 8) + " more";
  return s;
}

// Centres continued beyond both ends of an axis by its end spacing until their cells reach past
// [lo, hi] (latitudes stop short of the poles). `before` gets how many were added in front.
std::vector<double> extend_axis(const std::vector<double>& c, double lo, double hi, double limit, int& before) {
  std::vector<double> out = c;
  before = 0;
  if (c.size() < 2) return out;
  const double d0 = c[1] - c[0], d1 = c[c.size() - 1] - c[c.size() - 2];
  while (out.front() - 0.5 * d0 > lo && out.front() - d0 > -limit) out.insert(out.begin(), out.front() - d0), ++before;
  while (out.back() + 0.5 * d1 < hi && out.back() + d1 < limit) out.push_back(out.back() + d1);
  return out;
}

}  // namespace

CoverageRegrid regrid_covering(RegridMethod m, const Grid& src, const Grid& dst, const std::string& where) {
  if (m == RegridMethod::bilinear) {
    if (!covers(src, dst)) {
      std::vector<std::string> out;
      for (double la : dst.lat)
        for (double lo : dst.lon)
          if (lo < src.lon.front() - 1e-6 || lo > src.lon.back() + 1e-6 || la < src.lat.front() - 1e-6 ||
              la > src.lat.back() + 1e-6)
            out.push_back(point(lo, la));
      throw InputError(where + ": source grid " + src.describe() + " does not cover " + std::to_string(out.size()) +
                       " points of target grid " + dst.describe() + ": " + list_points(out) +
                       "; bilinear regridding needs every target point inside the source centres" +
                       " (nearest or conservative regridding accept a grid that only partly covers the edge cells)");
    }
    return {bilinear_weights(src, dst, where), false};
  }
  const bool conservative = m == RegridMethod::conservative;
  if (covers_cells(src, dst))  // every target cell inside the source cells: the plain weights
    return {conservative ? conservative_weights(src, dst, where) : nearest_weights(src, dst, where), conservative};

  // The source continued by empty cells until it covers the target cells. Conservative drops
  // the weights on those cells, so a target cell's value is the mean over the part of it the
  // source covers (renormalized by that area); nearest moves a weight on an empty cell to the
  // source cell at the edge next to it, the nearest centre there. A target cell without any
  // source cell under it is not covered.
  const auto tlon = cell_edges(dst.lon, -1e9, 1e9), tlat = cell_edges(dst.lat, -90, 90);
  int wlon = 0, slat = 0;
  const Grid ext = Grid::from_coords(extend_axis(src.lon, tlon.front(), tlon.back(), 1e9, wlon),
                                     extend_axis(src.lat, tlat.front(), tlat.back(), 90, slat), where);
  const RegridWeights we = conservative ? conservative_weights(ext, dst, where) : nearest_weights(ext, dst, where);
  const RegridWeights cover = conservative ? RegridWeights() : conservative_weights(ext, dst, where);
  std::vector<Eigen::Triplet<double>> t;
  std::vector<std::string> uncovered;
  size_t partial = 0;
  double least = 1;
  auto real = [&](long col, int& j, int& i) {
    j = static_cast<int>(col / ext.nlon()) - slat, i = static_cast<int>(col % ext.nlon()) - wlon;
    return j >= 0 && j < src.nlat() && i >= 0 && i < src.nlon();
  };
  for (int row = 0; row < we.outerSize(); ++row) {
    double covered = 0;
    int j = 0, i = 0;
    for (RegridWeights::InnerIterator it(conservative ? we : cover, row); it; ++it)
      if (real(it.col(), j, i)) covered += it.value();
    if (covered <= 1e-12) {
      uncovered.push_back(point(dst.lon[row % dst.nlon()], dst.lat[row / dst.nlon()]));
      continue;
    }
    if (covered < 1 - 1e-6) ++partial, least = std::min(least, covered);
    for (RegridWeights::InnerIterator it(we, row); it; ++it) {
      if (!real(it.col(), j, i)) {
        if (conservative) continue;
        j = std::clamp(j, 0, src.nlat() - 1), i = std::clamp(i, 0, src.nlon() - 1);
      }
      t.emplace_back(row, static_cast<long>(j) * src.nlon() + i, it.value());
    }
  }
  if (!uncovered.empty())
    throw InputError(where + ": source grid " + src.describe() + " does not cover " + std::to_string(uncovered.size()) +
                     " cells of target grid " + dst.describe() + " at all: " + list_points(uncovered) + " (" + to_string(m) +
                     " regridding)");
  RegridWeights w(static_cast<long>(dst.size()), static_cast<long>(src.size()));
  w.setFromTriplets(t.begin(), t.end());
  return {std::move(w), conservative, partial, least};
}

}  // namespace ds
