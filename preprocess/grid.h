// Regular longitude-latitude grids, always held with ascending coordinates (sources with
// descending latitude are flipped when read), cell centres in degrees.
#pragma once
#include <string>
#include <vector>

#include "io/config.h"

namespace ds {

struct Grid {
  std::vector<double> lon, lat;  // ascending cell centres
  int nlon() const { return static_cast<int>(lon.size()); }
  int nlat() const { return static_cast<int>(lat.size()); }
  size_t size() const { return lon.size() * lat.size(); }
  std::string describe() const;  // "53 x 30 (lon -165..-61, lat 12..70)"

  static Grid from_spec(const GridSpec& spec);
  // A grid from coordinate vectors; throws InputError naming `where` if either is not strictly
  // ascending.
  static Grid from_coords(std::vector<double> lon, std::vector<double> lat, const std::string& where);
};

// True if every point of `inner` lies inside the hull of `outer`'s centres (tolerance 1e-6°).
bool covers(const Grid& outer, const Grid& inner);

// Cell edges of ascending centres (n + 1 values): midpoints between neighbours, and half the
// neighbouring spacing beyond the first and last centre, clamped to [lo, hi] (±90 for
// latitude). This is CDO's convention for a regular grid without bounds. A single centre gets
// a cell of width 1e-6° so it is still a point.
std::vector<double> cell_edges(const std::vector<double>& centres, double lo, double hi);

// True if every cell of `inner` lies inside the union of `outer`'s cells (tolerance 1e-6°).
bool covers_cells(const Grid& outer, const Grid& inner);

}  // namespace ds
