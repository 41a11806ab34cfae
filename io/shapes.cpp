#include "io/shapes.h"

#include <shapefil.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>

#include "io/atomic_file.h"
#include "io/error.h"

namespace ds {

namespace {

bool segment_touches(const LonLat& a, const LonLat& b, const LonLatBox& box) {
  return std::max(a.lon, b.lon) >= box.west && std::min(a.lon, b.lon) <= box.east && std::max(a.lat, b.lat) >= box.south &&
         std::min(a.lat, b.lat) <= box.north;
}

// The runs of consecutive segments of [first, last) that touch the box (a segment's bounding
// box against the box: a cheap test that keeps every segment crossing the map).
void append_clipped(const double* x, const double* y, int first, int last, const LonLatBox& box, std::vector<Polyline>* out) {
  Polyline run;
  for (int k = first + 1; k < last; ++k) {
    const LonLat a{x[k - 1], y[k - 1]}, b{x[k], y[k]};
    if (segment_touches(a, b, box)) {
      if (run.empty()) run.push_back(a);
      run.push_back(b);
    } else if (!run.empty()) {
      out->push_back(std::move(run));
      run.clear();
    }
  }
  if (run.size() >= 2) out->push_back(std::move(run));
}

}  // namespace

std::vector<Polyline> read_shapefile_lines(const std::string& path, const LonLatBox& box) {
  // shapelib prints its own "Unable to open" to stderr; the Error below says it once, in our words.
  SAHooks hooks;
  SASetupDefaultHooks(&hooks);
  hooks.Error = [](const char*) {};
  std::unique_ptr<SHPInfo, decltype(&SHPClose)> shp(SHPOpenLL(path.c_str(), "rb", &hooks), &SHPClose);
  if (!shp) throw Error(path + ": cannot open the shapefile (or its .shx index)");
  int count = 0, type = 0;
  double lo[4], hi[4];
  SHPGetInfo(shp.get(), &count, &type, lo, hi);
  const int base = type % 10;  // Z and M variants (13, 15, 23, 25) are arcs and polygons too
  if (base != SHPT_ARC && base != SHPT_POLYGON)
    throw Error(path + ": shapes of type " + std::to_string(type) + ", not lines or polygons");
  std::vector<Polyline> out;
  for (int i = 0; i < count; ++i) {
    std::unique_ptr<SHPObject, decltype(&SHPDestroyObject)> o(SHPReadObject(shp.get(), i), &SHPDestroyObject);
    if (!o) throw Error(path + ": cannot read shape " + std::to_string(i));
    if (o->nVertices < 2 || o->dfXMax < box.west || o->dfXMin > box.east || o->dfYMax < box.south || o->dfYMin > box.north)
      continue;
    for (int p = 0; p < std::max(1, o->nParts); ++p) {
      const int first = o->nParts ? o->panPartStart[p] : 0;
      const int last = o->nParts && p + 1 < o->nParts ? o->panPartStart[p + 1] : o->nVertices;
      append_clipped(o->padfX, o->padfY, first, last, box, &out);
    }
  }
  return out;
}

std::string natural_earth_resolution(const LonLatBox& box) {
  const double extent = std::max(box.east - box.west, box.north - box.south);
  return extent > 60 ? "110m" : extent > 8 ? "50m" : "10m";
}

std::vector<std::string> natural_earth_dirs() {
  if (const char* env = std::getenv("DOWNSCALE_NATURAL_EARTH"); env && *env) return {env};
  return {"/usr/share/magics", "/usr/share/cartopy/shapefiles/natural_earth/physical",
          "/usr/share/cartopy/shapefiles/natural_earth/cultural"};
}

std::string find_natural_earth(const std::string& layer, const std::string& resolution) {
  const std::string name = "ne_" + resolution + "_" + layer + ".shp";
  for (const auto& dir : natural_earth_dirs())
    for (const auto& candidate : {dir + "/" + resolution + "/" + name, dir + "/" + name})
      if (path_exists(candidate)) return candidate;
  return "";
}

}  // namespace ds
