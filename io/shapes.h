// Polylines in lon/lat from ESRI shapefiles (libshp), and where Debian keeps Natural Earth's
// coastlines and borders. Used to draw maps; no stage logic.
#pragma once
#include <string>
#include <vector>

namespace ds {

struct LonLat {
  double lon, lat;
};
using Polyline = std::vector<LonLat>;

// A lon/lat rectangle (degrees east, degrees north).
struct LonLatBox {
  double west, east, south, north;
};

// Every arc (polyline shapes) or ring (polygon shapes: a land polygon's rings are its
// coastline) of `path` that touches `box`, cut to the runs of segments that touch it, so a
// continent's outline costs only the part on the map. Throws Error when the file cannot be read.
std::vector<Polyline> read_shapefile_lines(const std::string& path, const LonLatBox& box);

// Natural Earth's resolution for a map of this extent: "110m" for continents, "50m" for
// countries, "10m" for regions smaller than about 8 degrees, so the lines stay smooth at the
// size a map is drawn without reading 60 MB for a continent.
std::string natural_earth_resolution(const LonLatBox& box);

// The folders searched for Natural Earth data, in order: $DOWNSCALE_NATURAL_EARTH if set (and
// then only it), else /usr/share/magics (Debian's libmagics++-data) and
// /usr/share/cartopy/shapefiles/natural_earth/physical and /cultural (python3-cartopy-data's layout).
std::vector<std::string> natural_earth_dirs();

// The file of one Natural Earth layer ("land", "admin_0_boundary_lines_land") at a
// resolution, e.g. <dir>/50m/ne_50m_land.shp or <dir>/ne_50m_land.shp, from the folders of
// natural_earth_dirs(); "" when none has it.
std::string find_natural_earth(const std::string& layer, const std::string& resolution);

}  // namespace ds
