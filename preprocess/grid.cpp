#include "preprocess/grid.h"

#include <algorithm>
#include <cstdio>

#include "io/error.h"

namespace ds {

std::string Grid::describe() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%d x %d (lon %g..%g, lat %g..%g)", nlon(), nlat(), lon.empty() ? 0 : lon.front(),
                lon.empty() ? 0 : lon.back(), lat.empty() ? 0 : lat.front(), lat.empty() ? 0 : lat.back());
  return buf;
}

Grid Grid::from_spec(const GridSpec& s) {
  Grid g;
  // Multiply rather than accumulate so 0.5° steps stay exact over hundreds of points.
  for (int i = 0; i < s.nlon(); ++i) g.lon.push_back(s.lon_first + i * s.step);
  for (int j = 0; j < s.nlat(); ++j) g.lat.push_back(s.lat_first + j * s.step);
  return g;
}

Grid Grid::from_coords(std::vector<double> lon, std::vector<double> lat, const std::string& where) {
  for (size_t i = 1; i < lon.size(); ++i)
    if (!(lon[i] > lon[i - 1])) throw InputError(where + ": longitude is not strictly ascending at index " + std::to_string(i));
  for (size_t j = 1; j < lat.size(); ++j)
    if (!(lat[j] > lat[j - 1])) throw InputError(where + ": latitude is not strictly ascending at index " + std::to_string(j));
  if (lon.empty() || lat.empty()) throw InputError(where + ": empty grid");
  return Grid{std::move(lon), std::move(lat)};
}

bool covers(const Grid& outer, const Grid& inner) {
  const double tol = 1e-6;
  return inner.lon.front() >= outer.lon.front() - tol && inner.lon.back() <= outer.lon.back() + tol &&
         inner.lat.front() >= outer.lat.front() - tol && inner.lat.back() <= outer.lat.back() + tol;
}

std::vector<double> cell_edges(const std::vector<double>& c, double lo, double hi) {
  const size_t n = c.size();
  std::vector<double> e(n + 1);
  if (n == 1) {
    e[0] = c[0] - 0.5e-6, e[1] = c[0] + 0.5e-6;
  } else {
    for (size_t i = 1; i < n; ++i) e[i] = 0.5 * (c[i - 1] + c[i]);
    e[0] = c[0] - 0.5 * (c[1] - c[0]);
    e[n] = c[n - 1] + 0.5 * (c[n - 1] - c[n - 2]);
  }
  for (auto& x : e) x = std::clamp(x, lo, hi);
  return e;
}

bool covers_cells(const Grid& outer, const Grid& inner) {
  const double tol = 1e-6;
  const auto ox = cell_edges(outer.lon, -1e9, 1e9), oy = cell_edges(outer.lat, -90, 90);
  const auto ix = cell_edges(inner.lon, -1e9, 1e9), iy = cell_edges(inner.lat, -90, 90);
  return ix.front() >= ox.front() - tol && ix.back() <= ox.back() + tol && iy.front() >= oy.front() - tol &&
         iy.back() <= oy.back() + tol;
}

}  // namespace ds
