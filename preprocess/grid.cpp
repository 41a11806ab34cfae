#include "preprocess/grid.h"

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

}  // namespace ds
