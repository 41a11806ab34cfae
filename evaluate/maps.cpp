#include "evaluate/maps.h"

#include <cairo.h>

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

// Piecewise-linear colour scales; t in [0, 1].
Rgb colour(double t, bool diverging) {
  static const Rgb seq[] = {{0.27, 0.00, 0.33}, {0.23, 0.32, 0.55}, {0.13, 0.57, 0.55}, {0.37, 0.79, 0.38}, {0.99, 0.91, 0.15}};
  static const Rgb div[] = {{0.02, 0.19, 0.38}, {0.26, 0.58, 0.76}, {0.97, 0.97, 0.97}, {0.84, 0.38, 0.30}, {0.40, 0.00, 0.05}};
  const Rgb* c = diverging ? div : seq;
  t = std::clamp(t, 0.0, 1.0) * 4;
  const int i = std::min(3, static_cast<int>(t));
  return lerp(c[i], c[i + 1], t - i);
}

std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof b, std::abs(v) >= 100 || v == 0 ? "%.0f" : std::abs(v) >= 1 ? "%.2f" : "%.3f", v);
  return b;
}

// 110°W rather than -110°E: how maps are labelled.
std::string lon_label(double lon) { return fmt(std::abs(lon)) + (lon < 0 ? "\u00b0W" : "\u00b0E"); }
std::string lat_label(double lat) { return fmt(std::abs(lat)) + (lat < 0 ? "\u00b0S" : "\u00b0N"); }

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

void text(cairo_t* cr, double x, double y, const std::string& s, double size, bool bold = false) {
  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
  cairo_move_to(cr, x, y);
  cairo_show_text(cr, s.c_str());
}

}  // namespace

void write_map_png(const std::string& path, const MapField& f) {
  const int nx = static_cast<int>(f.lon.size()), ny = static_cast<int>(f.lat.size());
  if (nx == 0 || ny == 0 || f.values.size() != size_t(nx) * ny) throw Error(path + ": map field has the wrong size");
  // The colour range: robust (2nd..98th percentile) so one extreme box does not wash out the map.
  std::vector<double> finite;
  for (double v : f.values)
    if (std::isfinite(v)) finite.push_back(v);
  std::sort(finite.begin(), finite.end());
  double lo = 0, hi = 1;
  if (!finite.empty()) {
    lo = finite[finite.size() * 2 / 100];
    hi = finite[std::min(finite.size() - 1, finite.size() * 98 / 100)];
  }
  if (f.diverging) {
    const double m = std::max({std::abs(lo), std::abs(hi), 1e-12});
    lo = -m, hi = m;
  } else if (hi <= lo) {
    hi = lo + 1;
  }
  const int cell = std::max(3, std::min(16, 640 / std::max(nx, ny)));
  const int left = 60, top = 40, bar_w = 18, right = 90, bottom = 40;
  const int W = left + nx * cell + 20 + bar_w + right, H = top + ny * cell + bottom;
  cairo_surface_t* s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, W, H);
  cairo_t* cr = cairo_create(s);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  for (int j = 0; j < ny; ++j)
    for (int i = 0; i < nx; ++i) {
      const double v = f.values[size_t(j) * nx + i];
      const Rgb c = std::isfinite(v) ? colour((v - lo) / (hi - lo), f.diverging) : Rgb{0.82, 0.82, 0.82};
      cairo_set_source_rgb(cr, c.r, c.g, c.b);
      cairo_rectangle(cr, left + i * cell, top + (ny - 1 - j) * cell, cell, cell);  // north up
      cairo_fill(cr);
    }
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_line_width(cr, 1);
  cairo_rectangle(cr, left, top, nx * cell, ny * cell);
  cairo_stroke(cr);
  text(cr, left, 24, f.title + (f.units.empty() ? "" : " (" + f.units + ")"), 15, true);
  text(cr, left, top + ny * cell + 16, lon_label(f.lon.front()), 11);
  text(cr, left + nx * cell - 50, top + ny * cell + 16, lon_label(f.lon.back()), 11);
  text(cr, 4, top + ny * cell, lat_label(f.lat.front()), 11);
  text(cr, 4, top + 10, lat_label(f.lat.back()), 11);
  // Colour bar.
  const int bx = left + nx * cell + 20, bh = ny * cell;
  for (int y = 0; y < bh; ++y) {
    const Rgb c = colour(1.0 - double(y) / std::max(1, bh - 1), f.diverging);
    cairo_set_source_rgb(cr, c.r, c.g, c.b);
    cairo_rectangle(cr, bx, top + y, bar_w, 1);
    cairo_fill(cr);
  }
  cairo_set_source_rgb(cr, 0, 0, 0);
  text(cr, bx + bar_w + 6, top + 10, fmt(hi), 11);
  text(cr, bx + bar_w + 6, top + bh / 2 + 4, fmt((lo + hi) / 2), 11);
  text(cr, bx + bar_w + 6, top + bh, fmt(lo), 11);
  cairo_destroy(cr);
  write_surface(s, path);
}

void write_table_png(const std::string& path, const std::string& title, const std::vector<std::string>& cols,
                     const std::vector<TableRow>& rows, const std::string& footer) {
  const int name_w = 190, col_w = 130, row_h = 24, top = 56;
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
