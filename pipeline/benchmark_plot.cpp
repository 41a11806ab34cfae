// `downscale benchmark --plot RESULTS.jsonl OUT.png`: total throughput against ranks (images/s
// of the synthetic benchmark, samples/s of slurm/scaling.sh's training runs: each line's
// "unit"), one line per series (model, batch, image size, device, precision, allreduce dtype) of the JSON lines that
// `downscale benchmark --json` appended, each with its ideal (linear) line from its 1-rank
// figure (or its fewest ranks' per-rank figure) and the efficiency written at every point.
// Drawn with cairo, as evaluate's maps, so the Slurm scripts need no Python plotting stack.
#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "io/error.h"
#include "pipeline/stages.h"

namespace ds {

namespace {

struct Series {
  std::string label, base;  // base: the label without the allreduce dtype
  std::map<int, double> total;  // ranks -> img/s in total (the last line for each rank count)
  double per_rank_ref = 0;      // the ideal line's slope
  int ref_ranks = 0;
};

// A "nice" step (1, 2 or 5 x 10^k) giving about `ticks` intervals up to `top`.
double nice_step(double top, int ticks) {
  const double raw = top / ticks, mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

}  // namespace

int plot_benchmark(const std::string& jsonl, const std::string& png) {
  std::ifstream in(jsonl);
  if (!in) throw InputError(jsonl + ": cannot read the benchmark results");
  std::map<std::string, Series> series;
  // 1-rank lines by their label without the allreduce dtype: one rank sends nothing, so its line
  // is the reference of every dtype's series (as for the efficiency the benchmark prints).
  std::map<std::string, double> one_rank;
  std::set<std::string> units;  // "images/s" (lines without a unit: benchmark's before it said), "samples/s"
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("ranks") || !j.contains("total") || !j["total"].is_number())
      throw InputError(jsonl + ": line " + std::to_string(line_no) + " is not a `downscale benchmark --json` line");
    // Fields a line lacks ("-", 0: slurm/scaling.sh's lines from train reports) stay out of the label.
    std::string label = j.value("model", "?") + fmt::format(" batch {}", j.value("batch", 0));
    if (j.value("image_size", 0) > 0) label += fmt::format(" {}px", j.value("image_size", 0));
    label += ", " + j.value("device", "?");
    if (j.value("precision", "-") != "-") label += " " + j.value("precision", "-");
    // CPU threads per rank: a series of its own, as for the efficiency line's 1-rank reference (2
    // ranks of 1 thread against 1 rank of 2 would mix thread scaling in).
    if (j.contains("threads") && j["threads"].is_number_integer())
      label += fmt::format(", {} thread{} per rank", j["threads"].get<int>(), j["threads"].get<int>() == 1 ? "" : "s");
    units.insert(j.value("unit", "images/s"));
    const int ranks = j["ranks"].get<int>();
    if (ranks == 1) {
      one_rank[label] = j["total"].get<double>();
      continue;
    }
    const std::string base = label;
    if (j.value("allreduce_dtype", "-") != "-") label += ", " + j.value("allreduce_dtype", "-") + " allreduce";
    Series& s = series[label];
    s.label = label;
    s.base = base;
    s.total[ranks] = j["total"].get<double>();
  }
  for (const auto& [base, total] : one_rank) {
    bool joined = false;
    for (auto& [_, s] : series)
      if (s.base == base) s.total[1] = total, joined = true;
    if (!joined) series[base] = Series{base, base, {{1, total}}};
  }
  if (series.empty()) throw InputError(jsonl + ": no benchmark lines to plot");
  int max_ranks = 1;
  double top = 0;
  for (auto& [_, s] : series) {
    s.ref_ranks = s.total.begin()->first;  // 1 when there is a 1-rank line
    s.per_rank_ref = s.total.begin()->second / s.ref_ranks;
    max_ranks = std::max(max_ranks, s.total.rbegin()->first);
    for (auto& [n, t] : s.total) top = std::max({top, t, s.per_rank_ref * n});
  }
  top = top > 0 ? top * 1.1 : 1;

  const int W = 900, H = 560, left = 80, right = 30, bottom = 60;
  const int top_margin = 50 + 18 * int(series.size());
  cairo_surface_t* surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, W, H);
  cairo_t* cr = cairo_create(surface);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  const double pw = W - left - right, ph = H - top_margin - bottom;
  const double x_max = max_ranks + 0.5;
  auto X = [&](double ranks) { return left + pw * ranks / x_max; };
  auto Y = [&](double v) { return top_margin + ph * (1 - v / top); };

  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, 12);
  auto text = [&](double x, double y, const std::string& t, double align) {
    cairo_text_extents_t e;
    cairo_text_extents(cr, t.c_str(), &e);
    cairo_move_to(cr, x - align * e.width, y);
    cairo_show_text(cr, t.c_str());
  };
  // Axes, grid and ticks.
  cairo_set_line_width(cr, 1);
  const double ystep = nice_step(top, 6);
  for (double v = 0; v <= top + 1e-9; v += ystep) {
    cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
    cairo_move_to(cr, left, Y(v));
    cairo_line_to(cr, left + pw, Y(v));
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    text(left - 6, Y(v) + 4, fmt::format("{:g}", v), 1);
  }
  const int xstep = std::max(1, int(nice_step(max_ranks, 8)));
  for (int n = xstep == 1 ? 1 : xstep; n <= max_ranks; n += xstep) text(X(n), top_margin + ph + 18, std::to_string(n), 0.5);
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_rectangle(cr, left, top_margin, pw, ph);
  cairo_stroke(cr);
  text(left + pw / 2, H - 15, "ranks (GPUs or CPU processes)", 0.5);
  cairo_save(cr);
  cairo_translate(cr, 24, top_margin + ph / 2);
  cairo_rotate(cr, -M_PI / 2);
  std::string unit_text;
  for (const auto& u : units) unit_text += (unit_text.empty() ? "" : " or ") + u;
  text(0, 0, unit_text + " in total", 0.5);
  cairo_restore(cr);
  cairo_set_font_size(cr, 14);
  text(W / 2.0, 22, "downscale benchmark: throughput against ranks (dashed: ideal linear scaling)", 0.5);
  cairo_set_font_size(cr, 11);

  static const double colors[][3] = {{0.12, 0.47, 0.71}, {1.0, 0.5, 0.05}, {0.17, 0.63, 0.17}, {0.84, 0.15, 0.16},
                                     {0.58, 0.4, 0.74},  {0.55, 0.34, 0.29}, {0.89, 0.47, 0.76}, {0.5, 0.5, 0.5}};
  int k = 0;
  for (auto& [_, s] : series) {
    const double* c = colors[k % 8];
    cairo_set_source_rgb(cr, c[0], c[1], c[2]);
    // The ideal line from the origin to the largest rank count.
    const double dash[] = {6, 4};
    cairo_set_dash(cr, dash, 2, 0);
    cairo_set_line_width(cr, 1.2);
    cairo_move_to(cr, X(0), Y(0));
    cairo_line_to(cr, X(max_ranks), Y(s.per_rank_ref * max_ranks));
    cairo_stroke(cr);
    cairo_set_dash(cr, nullptr, 0, 0);
    cairo_set_line_width(cr, 2);
    bool first = true;
    for (auto& [n, t] : s.total) {
      if (first) cairo_move_to(cr, X(n), Y(t)); else cairo_line_to(cr, X(n), Y(t));
      first = false;
    }
    cairo_stroke(cr);
    for (auto& [n, t] : s.total) {
      cairo_arc(cr, X(n), Y(t), 4, 0, 2 * M_PI);
      cairo_fill(cr);
      text(X(n) + 6, Y(t) - 6, fmt::format("{:.0f}%", 100 * t / (s.per_rank_ref * n)), 0);
    }
    // Legend line above the plot.
    const double ly = 40 + 18 * k;
    cairo_move_to(cr, left, ly - 4);
    cairo_line_to(cr, left + 24, ly - 4);
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    text(left + 30, ly, s.label + (s.ref_ranks == 1 ? "" : fmt::format(" (efficiency against {} ranks)", s.ref_ranks)), 0);
    ++k;
  }
  cairo_destroy(cr);
  // The figures the plot shows, as text: what a log keeps, and what a reader can check.
  for (const auto& [_, s] : series) {
    std::string line;
    for (const auto& [n, t] : s.total)
      line += fmt::format("{}{} rank{} {:.1f} ({:.0f}%)", line.empty() ? "" : ", ", n, n == 1 ? "" : "s", t,
                          100 * t / (s.per_rank_ref * n));
    std::printf("%s: %s: %s%s\n", png.c_str(), s.label.c_str(), line.c_str(),
                s.ref_ranks == 1 ? "" : fmt::format(" (efficiency against {} ranks)", s.ref_ranks).c_str());
  }
  const cairo_status_t st = cairo_surface_write_to_png(surface, png.c_str());
  cairo_surface_destroy(surface);
  if (st != CAIRO_STATUS_SUCCESS)
    throw Error(png + ": cannot write the plot (" + cairo_status_to_string(st) + ")");
  return 0;
}

}  // namespace ds
