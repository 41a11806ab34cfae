// Nearest-neighbour regridding: each target point takes the value of the source centre nearest
// to it on the sphere (haversine distance), as CDO's remapnn does. On a regular grid the nearest
// centre is among the neighbours of the nearest latitude and longitude indices, so only those
// few candidates are measured. Ties go to the lower index (south, then west).
#include <algorithm>
#include <cmath>

#include "io/error.h"
#include "preprocess/regrid.h"

namespace ds {

namespace {

constexpr double kDegToRad = M_PI / 180.0;

// Haversine of the central angle: monotonic in the distance, so enough to compare.
double hav_distance(double lon1, double lat1, double lon2, double lat2) {
  const double sl = std::sin(0.5 * (lat2 - lat1) * kDegToRad), so = std::sin(0.5 * (lon2 - lon1) * kDegToRad);
  return sl * sl + std::cos(lat1 * kDegToRad) * std::cos(lat2 * kDegToRad) * so * so;
}

// Index of the centre nearest to x along one ascending axis.
int nearest_index(const std::vector<double>& c, double x) {
  const auto it = std::lower_bound(c.begin(), c.end(), x);
  if (it == c.begin()) return 0;
  if (it == c.end()) return static_cast<int>(c.size()) - 1;
  const int k = static_cast<int>(it - c.begin());
  return (x - c[k - 1] <= c[k] - x) ? k - 1 : k;
}

}  // namespace

RegridWeights nearest_weights(const Grid& src, const Grid& dst, const std::string& where) {
  if (!covers_cells(src, dst))
    throw InputError(where + ": source grid " + src.describe() + " does not cover the cells of target grid " + dst.describe());
  std::vector<Eigen::Triplet<double>> t;
  t.reserve(dst.size());
  for (int j = 0; j < dst.nlat(); ++j) {
    const int jn = nearest_index(src.lat, dst.lat[j]);
    for (int i = 0; i < dst.nlon(); ++i) {
      const int in = nearest_index(src.lon, dst.lon[i]);
      int best = -1;
      double best_d = 1e300;
      // Away from the equator a neighbour one row poleward can be nearer than the nearest row.
      for (int jj = std::max(0, jn - 1); jj <= std::min(src.nlat() - 1, jn + 1); ++jj)
        for (int ii = std::max(0, in - 1); ii <= std::min(src.nlon() - 1, in + 1); ++ii) {
          const double d = hav_distance(dst.lon[i], dst.lat[j], src.lon[ii], src.lat[jj]);
          if (d < best_d - 1e-18) best_d = d, best = jj * src.nlon() + ii;
        }
      t.emplace_back(static_cast<long>(j) * dst.nlon() + i, best, 1.0);
    }
  }
  RegridWeights w(static_cast<long>(dst.size()), static_cast<long>(src.size()));
  w.setFromTriplets(t.begin(), t.end());
  return w;
}

}  // namespace ds
