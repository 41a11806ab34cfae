#include "evaluate/maps.h"

#include <cairo.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "io/atomic_file.h"
#include "io/error.h"

namespace ds {

namespace {

struct Rgb {
  double r, g, b;
};

Rgb lerp(const Rgb& a, const Rgb& b, double t) { return {a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t}; }

Rgb hex(unsigned v) { return {((v >> 16) & 255) / 255.0, ((v >> 8) & 255) / 255.0, (v & 255) / 255.0}; }

// The ColorBrewer (and matplotlib viridis) classes, low to high, interpolated linearly.
const std::vector<Rgb>& stops(Palette p) {
  static const std::vector<Rgb> viridis = {hex(0x440154), hex(0x472d7b), hex(0x3b528b), hex(0x2c728e), hex(0x21918c),
                                           hex(0x28ae80), hex(0x5ec962), hex(0xaddc30), hex(0xfde725)};
  static const std::vector<Rgb> ylgnbu = {hex(0xffffd9), hex(0xedf8b1), hex(0xc7e9b4), hex(0x7fcdbb), hex(0x41b6c4),
                                          hex(0x1d91c0), hex(0x225ea8), hex(0x253494), hex(0x081d58)};
  static const std::vector<Rgb> brbg = {hex(0x543005), hex(0x8c510a), hex(0xbf812d), hex(0xdfc27d),
                                        hex(0xf6e8c3), hex(0xf5f5f5), hex(0xc7eae5), hex(0x80cdc1),
                                        hex(0x35978f), hex(0x01665e), hex(0x003c30)};
  static const std::vector<Rgb> rdbu = {hex(0x053061), hex(0x2166ac), hex(0x4393c3), hex(0x92c5de),
                                        hex(0xd1e5f0), hex(0xf7f7f7), hex(0xfddbc7), hex(0xf4a582),
                                        hex(0xd6604d), hex(0xb2182b), hex(0x67001f)};
  static const std::vector<Rgb> piyg = {hex(0x8e0152), hex(0xc51b7d), hex(0xde77ae), hex(0xf1b6da),
                                        hex(0xfde0ef), hex(0xf7f7f7), hex(0xe6f5d0), hex(0xb8e186),
                                        hex(0x7fbc41), hex(0x4d9221), hex(0x276419)};
  switch (p) {
    case Palette::kYlGnBu: return ylgnbu;
    case Palette::kBrBG: return brbg;
    case Palette::kRdBu: return rdbu;
    case Palette::kPiYG: return piyg;
    default: return viridis;
  }
}

// t in [0, 1], clamped.
Rgb colour(Palette p, double t) {
  const auto& c = stops(p);
  const int last = static_cast<int>(c.size()) - 1;
  t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0) * last;
  const int i = std::min(last - 1, static_cast<int>(t));
  return lerp(c[i], c[i + 1], t - i);
}

Rgb colour(const ColourScale& s, double v) { return colour(s.palette, (v - s.lo) / (s.hi - s.lo)); }

// Cells without data (ocean, undefined scores): a mid grey no palette uses.
const Rgb kNoData{0.78, 0.78, 0.78};

std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof b, std::abs(v) >= 100 || v == 0 ? "%.0f" : std::abs(v) >= 1 ? "%.2f" : "%.3f", v);
  return b;
}

// A colour bar or axis label at a round step: as many decimals as the step needs.
std::string fmt_step(double v, double step) {
  int decimals = 0;  // the fewest that write the step exactly: 2.5 -> 1, 0.25 -> 2, 5 -> 0
  while (decimals < 6 && std::abs(step * std::pow(10.0, decimals) - std::round(step * std::pow(10.0, decimals))) > 1e-6)
    ++decimals;
  if (std::abs(v) < step * 1e-6) v = 0;  // no "-0"
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

// 110°W rather than -110°E: how maps are labelled; 0° has no hemisphere.
std::string degrees(double v, double step, const char* neg, const char* pos) {
  if (std::abs(v) < step * 1e-6) return "0\u00b0";
  std::string a = fmt_step(std::abs(v), step);  // then 40 rather than 40.0 beside 42.5, as cartopy
  if (a.find('.') != std::string::npos) {
    while (a.back() == '0') a.pop_back();
    if (a.back() == '.') a.pop_back();
  }
  return a + "\u00b0" + (v < 0 ? neg : pos);
}

void write_surface(cairo_surface_t* s, const std::string& path) {
  // Encoded in memory, then written and renamed like every other output: cairo's own file
  // writer goes through stdio and reports a full disk only as "write error", without the cause.
  std::string png;
  auto append = [](void* closure, const unsigned char* data, unsigned int length) -> cairo_status_t {
    static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
    return CAIRO_STATUS_SUCCESS;
  };
  const cairo_status_t st = cairo_surface_write_to_png_stream(s, append, &png);
  cairo_surface_destroy(s);
  if (st != CAIRO_STATUS_SUCCESS) throw Error(path + ": cannot encode PNG: " + cairo_status_to_string(st));
  write_file_atomically(path, png);
}

void font(cairo_t* cr, double size, bool bold = false) {
  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
}

double text_width(cairo_t* cr, const std::string& s) {
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  return e.x_advance;
}

// align: 0 left, 0.5 centred, 1 right of x.
void text(cairo_t* cr, double x, double y, const std::string& s, double size, bool bold = false, double align = 0) {
  font(cr, size, bold);
  cairo_move_to(cr, x - align * text_width(cr, s), y);
  cairo_show_text(cr, s.c_str());
}

std::string with_units(const std::string& title, const std::string& units) {
  return title + " (" + (units.empty() ? "dimensionless" : units) + ")";
}

// Grid spacing from the centres (one cell: one degree).
double spacing(const std::vector<double>& c) { return c.size() > 1 ? (c.back() - c.front()) / (c.size() - 1) : 1.0; }

std::vector<Tick> ticks(double lo, double hi, double step, const char* neg, const char* pos, bool lon,
                        const MapGeometry& g) {
  std::vector<Tick> out;
  for (double k = std::ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; ++k) {
    const double v = k * step;
    // A longitude past +-180 (a box across the antimeridian) is labelled as a map reads it: 190
    // is 170°W.
    const double named = lon && std::abs(v) > 180 ? v - 360 * std::round(v / 360) : v;
    out.push_back({v, lon ? g.x(v) : g.y(v), degrees(named, step, neg, pos)});
  }
  return out;
}

// Degrees divide by 15, 30, 45 and 90 too: a global map gets lines every 60 degrees, not 100.
double graticule_step(const MapGeometry& g) {
  const double raw = std::max(g.east - g.west, g.north - g.south) / 6;
  if (raw < 0.1) return round_step(raw);
  for (double s : {0.1, 0.2, 0.25, 0.5, 1.0, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 90.0})
    if (s >= raw * (1 - 1e-9)) return s;
  return 90;
}

// Layout of one map panel, in pixels from the panel's top-left corner.
constexpr double kMapLeft = 62, kMapTop = 40, kMaxMapW = 560, kMaxMapH = 460, kBarGap = 22, kBarW = 16,
                 kBarRight = 96, kBelow = 58;

double panel_width(const MapGeometry& g) { return kMapLeft + g.width() + kBarGap + kBarW + kBarRight; }
double panel_height(const MapGeometry& g) { return kMapTop + g.height() + kBelow; }

void draw_lines(cairo_t* cr, const std::vector<Polyline>& lines, const MapGeometry& g) {
  for (const auto& l : lines) {
    cairo_move_to(cr, g.x(l.front().lon), g.y(l.front().lat));
    for (size_t k = 1; k < l.size(); ++k) cairo_line_to(cr, g.x(l[k].lon), g.y(l[k].lat));
  }
  cairo_stroke(cr);
}

void draw_colour_bar(cairo_t* cr, const ColourScale& s, const std::string& units, double x, double top, double h) {
  // Triangles (extend arrows) take a bar width's height at either end when values are clamped.
  const double tri = kBarW * 1.1;
  const double y0 = top + (s.extend_high ? tri : 0), y1 = top + h - (s.extend_low ? tri : 0);
  const int n = std::max(2, static_cast<int>(y1 - y0));
  for (int i = 0; i < n; ++i) {
    const Rgb c = colour(s.palette, 1.0 - (i + 0.5) / n);
    cairo_set_source_rgb(cr, c.r, c.g, c.b);
    cairo_rectangle(cr, x, y0 + (y1 - y0) * i / n, kBarW, (y1 - y0) / n + 0.5);
    cairo_fill(cr);
  }
  auto triangle = [&](double base, double tip, double t) {
    const Rgb c = colour(s.palette, t);
    cairo_move_to(cr, x, base);
    cairo_line_to(cr, x + kBarW, base);
    cairo_line_to(cr, x + kBarW / 2, tip);
    cairo_close_path(cr);
    cairo_set_source_rgb(cr, c.r, c.g, c.b);
    cairo_fill_preserve(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_line_width(cr, 0.8);
    cairo_stroke(cr);
  };
  if (s.extend_high) triangle(y0, top, 1);
  if (s.extend_low) triangle(y1, top + h, 0);
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_line_width(cr, 0.8);
  cairo_rectangle(cr, x, y0, kBarW, y1 - y0);
  cairo_stroke(cr);
  const double step = round_step((s.hi - s.lo) / 6);
  double widest = 0;
  for (double k = std::ceil(s.lo / step - 1e-9); k * step <= s.hi + step * 1e-9; ++k) {
    const double v = k * step, y = y1 - (v - s.lo) / (s.hi - s.lo) * (y1 - y0);
    cairo_move_to(cr, x + kBarW, y);
    cairo_line_to(cr, x + kBarW + 4, y);
    cairo_stroke(cr);
    const std::string label = fmt_step(v, step);
    text(cr, x + kBarW + 7, y + 4, label, 11);
    widest = std::max(widest, text_width(cr, label));
  }
  // The units along the bar, read bottom to top.
  cairo_save(cr);
  cairo_move_to(cr, x + kBarW + 7 + widest + 18, top + h / 2);
  cairo_rotate(cr, -M_PI / 2);
  font(cr, 11);
  const std::string u = units.empty() ? "dimensionless" : units;
  cairo_rel_move_to(cr, -text_width(cr, u) / 2, 0);
  cairo_show_text(cr, u.c_str());
  cairo_restore(cr);
}

// One map with its title, graticule, labels, colour bar and no-data swatch at (ox, oy).
void draw_panel(cairo_t* cr, double ox, double oy, const MapField& f, const Basemap& basemap) {
  const size_t nx = f.lon.size(), ny = f.lat.size();
  const MapGeometry g = map_geometry(f.lon, f.lat, ox + kMapLeft, oy + kMapTop, kMaxMapW, kMaxMapH);
  const double dx = spacing(f.lon), dy = spacing(f.lat);
  cairo_set_source_rgb(cr, 0, 0, 0);
  text(cr, ox + kMapLeft, oy + 24, with_units(f.title, f.units), 14, true);
  for (size_t j = 0; j < ny; ++j)
    for (size_t i = 0; i < nx; ++i) {
      const double v = f.values[j * nx + i];
      const Rgb c = std::isfinite(v) ? colour(f.scale, v) : kNoData;
      cairo_set_source_rgb(cr, c.r, c.g, c.b);
      // Edge to edge; the half-pixel overlap hides seams between neighbours.
      const double x = g.x(f.lon[i] - dx / 2), y = g.y(f.lat[j] + dy / 2);
      cairo_rectangle(cr, x, y, g.x(f.lon[i] + dx / 2) - x + 0.5, g.y(f.lat[j] - dy / 2) - y + 0.5);
      cairo_fill(cr);
    }
  const std::vector<Tick> lons = longitude_ticks(g), lats = latitude_ticks(g);
  cairo_save(cr);
  cairo_rectangle(cr, g.x0, g.y0, g.width(), g.height());
  cairo_clip(cr);
  // Graticule under the coastlines: thin and faint, so it guides without hiding cells.
  cairo_set_source_rgba(cr, 0.25, 0.25, 0.25, 0.45);
  cairo_set_line_width(cr, 0.6);
  for (const auto& t : lons) cairo_move_to(cr, t.pixel, g.y0), cairo_line_to(cr, t.pixel, g.y0 + g.height());
  for (const auto& t : lats) cairo_move_to(cr, g.x0, t.pixel), cairo_line_to(cr, g.x0 + g.width(), t.pixel);
  cairo_stroke(cr);
  cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
  cairo_set_source_rgb(cr, 0.35, 0.35, 0.35);
  cairo_set_line_width(cr, 0.8);
  draw_lines(cr, basemap.borders, g);
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_line_width(cr, 1.1);
  draw_lines(cr, basemap.coastlines, g);
  cairo_restore(cr);
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_line_width(cr, 1);
  cairo_rectangle(cr, g.x0, g.y0, g.width(), g.height());
  cairo_stroke(cr);
  const double bottom = g.y0 + g.height();
  for (const auto& t : lons) {
    cairo_move_to(cr, t.pixel, bottom);
    cairo_line_to(cr, t.pixel, bottom + 4);
    cairo_stroke(cr);
    text(cr, t.pixel, bottom + 17, t.label, 11, false, 0.5);
  }
  for (const auto& t : lats) {
    cairo_move_to(cr, g.x0 - 4, t.pixel);
    cairo_line_to(cr, g.x0, t.pixel);
    cairo_stroke(cr);
    text(cr, g.x0 - 7, t.pixel + 4, t.label, 11, false, 1);
  }
  // The no-data swatch, below the longitude labels.
  const double sy = bottom + 28;
  cairo_set_source_rgb(cr, kNoData.r, kNoData.g, kNoData.b);
  cairo_rectangle(cr, g.x0, sy, 16, 12);
  cairo_fill_preserve(cr);
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_line_width(cr, 0.8);
  cairo_stroke(cr);
  text(cr, g.x0 + 22, sy + 10, "no data (ocean, or score undefined)", 11);
  draw_colour_bar(cr, f.scale, f.units, g.x0 + g.width() + kBarGap, g.y0, g.height());
}

void check_field(const std::string& path, const MapField& f) {
  if (f.lon.empty() || f.lat.empty() || f.values.size() != f.lon.size() * f.lat.size())
    throw Error(path + ": map field '" + f.title + "' has the wrong size");
}

}  // namespace

double round_step(double raw) {
  if (!(raw > 0) || !std::isfinite(raw)) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw * (1 - 1e-9)) return m * p;
  return 10 * p;
}

ColourScale colour_scale(const std::vector<const std::vector<double>*>& fields, Palette palette, bool centred) {
  std::vector<double> finite;
  for (const auto* f : fields)
    for (double v : *f)
      if (std::isfinite(v)) finite.push_back(v);
  std::sort(finite.begin(), finite.end());
  ColourScale s;
  s.palette = palette;
  double lo = 0, hi = 1;
  if (!finite.empty()) {
    lo = finite[finite.size() * 2 / 100];
    hi = finite[std::min(finite.size() - 1, finite.size() * 98 / 100)];
  }
  if (centred) {
    double m = std::max(std::abs(lo), std::abs(hi));
    if (!(m > 0)) m = 1;
    const double step = round_step(2 * m / 6);
    m = std::ceil(m / step - 1e-9) * step;
    lo = -m, hi = m;
  } else {
    if (!(hi > lo)) hi = lo + 1;
    const double step = round_step((hi - lo) / 6);
    lo = std::floor(lo / step + 1e-9) * step;
    hi = std::ceil(hi / step - 1e-9) * step;
  }
  s.lo = lo, s.hi = hi;
  s.extend_low = !finite.empty() && finite.front() < lo;
  s.extend_high = !finite.empty() && finite.back() > hi;
  return s;
}

MapGeometry map_geometry(const std::vector<double>& lon, const std::vector<double>& lat, double x0, double y0,
                         double max_width, double max_height) {
  const double dx = spacing(lon), dy = spacing(lat);
  MapGeometry g{lon.front() - dx / 2, lon.back() + dx / 2, lat.front() - dy / 2, lat.back() + dy / 2, x0, y0, 0};
  g.px_per_degree = std::min(max_width / (g.east - g.west), max_height / (g.north - g.south));
  return g;
}

std::vector<Tick> longitude_ticks(const MapGeometry& g) { return ticks(g.west, g.east, graticule_step(g), "W", "E", true, g); }
std::vector<Tick> latitude_ticks(const MapGeometry& g) { return ticks(g.south, g.north, graticule_step(g), "S", "N", false, g); }

Basemap load_basemap(const std::vector<double>& lon, const std::vector<double>& lat) {
  Basemap b;
  if (lon.empty() || lat.empty()) return b;
  const double dx = spacing(lon), dy = spacing(lat);
  const LonLatBox box{lon.front() - dx / 2, lon.back() + dx / 2, lat.front() - dy / 2, lat.back() + dy / 2};
  const std::string res = natural_earth_resolution(box);
  static bool warned = false;  // once per process: evaluate draws several maps
  auto read = [&](const std::string& layer, std::vector<Polyline>* out) {
    // The extent's resolution, else a coarser one (a bundle ships 1:50m and 1:110m only).
    const std::vector<std::string> tries = res == "10m" ? std::vector<std::string>{"10m", "50m", "110m"}
                                           : res == "50m" ? std::vector<std::string>{"50m", "110m"}
                                                          : std::vector<std::string>{"110m"};
    std::string file;
    for (const auto& r : tries)
      if (file.empty()) file = find_natural_earth(layer, r);
    if (file.empty()) {
      if (!warned) {
        std::string dirs;
        for (const auto& d : natural_earth_dirs()) dirs += (dirs.empty() ? "" : ", ") + d;
        spdlog::warn("no Natural Earth {} data (ne_{}_{}.shp) in {}: maps drawn without coastlines and borders (install "
                     "Debian's libmagics++-data or set DOWNSCALE_NATURAL_EARTH to a folder holding it)",
                     res, res, layer, dirs);
        warned = true;
      }
      return;
    }
    try {
      // Natural Earth is in -180..180; a grid past 180 (east of it, or a box across the
      // antimeridian) or past -180 reads the box a turn over too, and moves its lines back.
      *out = read_shapefile_lines(file, box);
      for (const double turn : {360.0, -360.0}) {
        if (!(turn > 0 ? box.east > 180 : box.west < -180)) continue;
        for (auto& l : read_shapefile_lines(file, {box.west - turn, box.east - turn, box.south, box.north})) {
          for (auto& p : l) p.lon += turn;
          out->push_back(std::move(l));
        }
      }
    } catch (const Error& e) {
      spdlog::warn("{}; maps drawn without it", e.what());
    }
  };
  read("land", &b.coastlines);
  read("admin_0_boundary_lines_land", &b.borders);
  return b;
}

void write_map_png(const std::string& path, const MapField& f, const Basemap& basemap) {
  check_field(path, f);
  const MapGeometry g = map_geometry(f.lon, f.lat, kMapLeft, kMapTop, kMaxMapW, kMaxMapH);
  const int W = static_cast<int>(std::ceil(panel_width(g))), H = static_cast<int>(std::ceil(panel_height(g)));
  cairo_surface_t* s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, W, H);
  cairo_t* cr = cairo_create(s);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  draw_panel(cr, 0, 0, f, basemap);
  cairo_destroy(cr);
  write_surface(s, path);
}

void write_figure_png(const std::string& path, const std::string& title, const std::vector<MapField>& panels,
                      const Basemap& basemap, int columns) {
  if (panels.empty()) throw Error(path + ": a figure needs at least one panel");
  for (const auto& f : panels) check_field(path, f);
  columns = std::max(1, std::min(columns, static_cast<int>(panels.size())));
  const int rows = (static_cast<int>(panels.size()) + columns - 1) / columns;
  // Every panel gets the largest panel's cell: panels of one evaluation share the grid anyway.
  double pw = 0, ph = 0;
  for (const auto& f : panels) {
    const MapGeometry g = map_geometry(f.lon, f.lat, 0, 0, kMaxMapW, kMaxMapH);
    pw = std::max(pw, panel_width(g));
    ph = std::max(ph, panel_height(g));
  }
  const double head = 36;
  const int W = static_cast<int>(std::ceil(pw * columns)), H = static_cast<int>(std::ceil(head + ph * rows));
  cairo_surface_t* s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, W, H);
  cairo_t* cr = cairo_create(s);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_set_source_rgb(cr, 0, 0, 0);
  text(cr, 12, 26, title, 17, true);
  for (size_t k = 0; k < panels.size(); ++k)
    draw_panel(cr, pw * (k % columns), head + ph * (k / columns), panels[k], basemap);
  cairo_destroy(cr);
  write_surface(s, path);
}

void write_table_png(const std::string& path, const std::string& title, const std::vector<std::string>& cols,
                     const std::vector<TableRow>& rows, const std::string& footer) {
  // Columns as wide as the longest heading needs (11 pt bold: under 8 px a character), at least 130.
  size_t longest = 0;
  for (const auto& c : cols) longest = std::max(longest, c.size());
  const int name_w = 190, col_w = std::max(130, 8 * static_cast<int>(longest) + 12), row_h = 24, top = 56;
  const int W = name_w + col_w * static_cast<int>(cols.size()) + 20, H = top + row_h * (1 + int(rows.size())) + 30;
  cairo_surface_t* s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, W, H);
  cairo_t* cr = cairo_create(s);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_set_source_rgb(cr, 0, 0, 0);
  text(cr, 10, 24, title, 15, true);
  for (size_t c = 0; c < cols.size(); ++c) text(cr, name_w + c * col_w, top, cols[c], 11, true);
  for (size_t r = 0; r < rows.size(); ++r) {
    const double y = top + row_h * (r + 1);
    if (r % 2 == 0) {
      cairo_set_source_rgb(cr, 0.94, 0.95, 0.97);
      cairo_rectangle(cr, 5, y - 16, W - 10, row_h);
      cairo_fill(cr);
      cairo_set_source_rgb(cr, 0, 0, 0);
    }
    text(cr, 10, y, rows[r].name, 12);
    for (size_t c = 0; c < cols.size() && c < rows[r].values.size(); ++c) {
      const double v = rows[r].values[c];
      text(cr, name_w + c * col_w, y, std::isfinite(v) ? fmt(v) : "-", 12);
    }
  }
  text(cr, 10, H - 10, footer, 10);
  cairo_destroy(cr);
  write_surface(s, path);
}

void write_table_png(const std::string& path, const Evaluation& e, const std::string& title) {
  std::vector<TableRow> rows;
  for (const auto& m : e.methods) {
    TableRow r{m.name + (m.members > 1 ? " (" + std::to_string(m.members) + " members)" : ""), {}};
    for (const auto& c : score_names()) r.values.push_back(m.domain.at(c));
    rows.push_back(std::move(r));
  }
  write_table_png(path, title, score_names(), rows,
                  "land-box averages over " + std::to_string(e.ndays) + " test days; see scores.json for definitions");
}

}  // namespace ds
