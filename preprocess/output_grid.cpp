#include "preprocess/output_grid.h"

#include <algorithm>

#include "io/error.h"

namespace ds {

namespace {

// `c` extended by `before` and `after` points, continuing the spacing of its ends (one point
// alone has no spacing: padding it is refused).
std::vector<double> pad(const std::vector<double>& c, int before, int after, const std::string& what) {
  if ((before || after) && c.size() < 2)
    throw InputError("the observation grid has a single " + what + ": it cannot be padded to the model's output grid");
  std::vector<double> out;
  const double d0 = c.size() > 1 ? c[1] - c[0] : 0, d1 = c.size() > 1 ? c[c.size() - 1] - c[c.size() - 2] : 0;
  for (int i = before; i > 0; --i) out.push_back(c.front() - i * d0);
  out.insert(out.end(), c.begin(), c.end());
  for (int i = 1; i <= after; ++i) out.push_back(c.back() + i * d1);
  return out;
}

}  // namespace

OutputGrid output_grid(const std::string& model, const Grid& predictor, const Grid& obs, const std::string& where,
                       bool obs_as_fetched) {
  OutputGrid g;
  const int want_h = conv_output_size(predictor.nlat()), want_w = conv_output_size(predictor.nlon());
  const bool fits = obs.nlat() <= want_h && obs.nlon() <= want_w;
  // DeepESD takes any grid, padded or not; padding it whenever the convolutional models' grid
  // holds the observations keeps one store good for every model (train.name compares them).
  if (model == "deepesd" && !fits) {
    g.grid = obs;
    return g;
  }
  if (!fits) {
    // The smallest H with 4H-3 >= rows, and likewise W.
    const int h = std::max(predictor.nlat(), (obs.nlat() + 3 + 3) / 4), w = std::max(predictor.nlon(), (obs.nlon() + 3 + 3) / 4);
    throw UsageError(where + ": the observation grid is " + std::to_string(obs.nlat()) + " x " + std::to_string(obs.nlon()) +
                     (obs_as_fetched ? " (lat x lon, as fetched: preprocess.predictand_grid is not given)"
                                     : " (lat x lon, preprocess.predictand_grid)") +
                     " but model '" + model + "' maps the predictor grid " + std::to_string(predictor.nlat()) +
                     " x " + std::to_string(predictor.nlon()) + " to " + std::to_string(want_h) + " x " +
                     std::to_string(want_w) + "; the smallest predictor grid that fits it is " + std::to_string(h) + " x " +
                     std::to_string(w) + " (4H-3 >= " + std::to_string(obs.nlat()) + ", 4W-3 >= " +
                     std::to_string(obs.nlon()) + "; widen preprocess.predictor_grid)" +
                     (obs_as_fetched ? ", or give preprocess.predictand_grid a grid that fits, onto which the observations "
                                       "are regridded,"
                                     : ", or give preprocess.predictand_grid a coarser or smaller grid,") +
                     " or use model deepesd");
  }
  g.row0 = (want_h - obs.nlat()) / 2;
  g.col0 = (want_w - obs.nlon()) / 2;
  g.grid.lat = pad(obs.lat, g.row0, want_h - obs.nlat() - g.row0, "latitude");
  g.grid.lon = pad(obs.lon, g.col0, want_w - obs.nlon() - g.col0, "longitude");
  return g;
}

}  // namespace ds
