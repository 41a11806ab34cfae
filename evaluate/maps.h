// PNG figures of an evaluation, drawn with cairo: maps on the predictand grid (plate carrée,
// north up, each cell a box from edge to edge) with Natural Earth's coastlines and borders, a
// graticule labelled at round degrees, a colour bar with extend arrows and a swatch for
// missing (ocean) cells; a multi-panel figure of several maps; the table of domain scores.
#pragma once
#include <string>
#include <vector>

#include "evaluate/scores.h"
#include "io/shapes.h"

namespace ds {

// ColorBrewer / matplotlib scales. Sequential: kYlGnBu for precipitation amounts (white-yellow
// dry to dark blue wet), kViridis for anything else. Diverging, centred at 0: kBrBG for
// precipitation differences (IPCC AR6: brown drier, green wetter), kRdBu for other differences
// (blue lower, red higher, as temperature), kPiYG for skill scores (pink worse, green better).
enum class Palette { kViridis, kYlGnBu, kBrBG, kRdBu, kPiYG };

// The colours of a map: limits shared by every panel that uses the scale, and whether values
// beyond them exist (drawn clamped; the colour bar gets a triangle at that end).
struct ColourScale {
  Palette palette = Palette::kViridis;
  double lo = 0, hi = 1;
  bool extend_low = false, extend_high = false;
};

// One scale for several fields in the same units (e.g. observed and predicted mean): the 2nd
// and 98th percentile of their finite values together, so one extreme box does not wash out the
// map, rounded outward to a round step; `centred`: symmetric about 0. Extend flags where any
// value of any field lies beyond the limits.
ColourScale colour_scale(const std::vector<const std::vector<double>*>& fields, Palette palette, bool centred);

// A round step (1, 2 or 5 times a power of ten) of at least `raw`.
double round_step(double raw);

struct MapField {
  std::string title, units;      // units "" for dimensionless scores
  std::vector<double> lon, lat;   // ascending, evenly spaced cell centres
  std::vector<double> values;     // (lat, lon); NaN: no data (ocean, undefined)
  ColourScale scale;
};

// Coastlines and borders of the map's extent (Natural Earth at a resolution chosen from the
// extent). When the data is not installed: a warning (once per process) and empty lines, and
// the maps are drawn without them.
struct Basemap {
  std::vector<Polyline> coastlines, borders;
};
Basemap load_basemap(const std::vector<double>& lon, const std::vector<double>& lat);

// Where a map's cells and degrees land in pixels: cells span centre +- half the spacing, so a
// longitude lands at x = x0 + (lon - west) * px_per_degree, whatever the grid's offset.
struct MapGeometry {
  double west, east, south, north;  // outer cell edges
  double x0, y0, px_per_degree;     // top-left corner of the map area
  double x(double lon) const { return x0 + (lon - west) * px_per_degree; }
  double y(double lat) const { return y0 + (north - lat) * px_per_degree; }
  double width() const { return (east - west) * px_per_degree; }
  double height() const { return (north - south) * px_per_degree; }
};
MapGeometry map_geometry(const std::vector<double>& lon, const std::vector<double>& lat, double x0, double y0,
                         double max_width, double max_height);

// Graticule lines and labels: round degrees (every 1, 2, 5, 10, ... degrees, 3 to 7 lines
// across the longer side) inside the map, placed at their true position.
struct Tick {
  double degrees, pixel;
  std::string label;  // "105°W", "35°N", "0°"
};
std::vector<Tick> longitude_ticks(const MapGeometry& g);
std::vector<Tick> latitude_ticks(const MapGeometry& g);

// Written atomically.
void write_map_png(const std::string& path, const MapField& f, const Basemap& basemap);
// Panels side by side, `columns` per row, under one title.
void write_figure_png(const std::string& path, const std::string& title, const std::vector<MapField>& panels,
                      const Basemap& basemap, int columns = 2);

void write_table_png(const std::string& path, const Evaluation& e, const std::string& title);

// Any table of domain scores: one row per method, one column per score.
struct TableRow {
  std::string name;
  std::vector<double> values;  // one per column; NaN shown as "-"
};
void write_table_png(const std::string& path, const std::string& title, const std::vector<std::string>& columns,
                     const std::vector<TableRow>& rows, const std::string& footer);

}  // namespace ds
