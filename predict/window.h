// The observation window of the model's output grid (training_store.h: obs_row0, obs_col0,
// obs_rows, obs_cols): products and scores cover the observation grid only, never the padding
// rows and columns the model's output rule adds around it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "io/training_store.h"

namespace ds {

struct Window {
  int row0 = 0, col0 = 0, rows = 0, cols = 0;  // inside an H' x W' output grid
  int out_rows = 0, out_cols = 0;
  size_t size() const { return size_t(rows) * cols; }
  size_t out_size() const { return size_t(out_rows) * out_cols; }
  bool whole() const { return rows == out_rows && cols == out_cols; }
};

// A store without a recorded window (or an empty one) is all observation grid.
inline Window observation_window(const StoreMeta& m) {
  Window w{m.obs_row0, m.obs_col0, m.obs_rows, m.obs_cols, m.Hy(), m.Wy()};
  if (w.rows <= 0 || w.cols <= 0) w = Window{0, 0, m.Hy(), m.Wy(), m.Hy(), m.Wy()};
  return w;
}

// (n, H', W') -> (n, rows, cols).
template <class T>
std::vector<T> crop_to_window(const std::vector<T>& v, const Window& w) {
  if (w.whole()) return v;
  const size_t n = w.out_size() ? v.size() / w.out_size() : 0;
  std::vector<T> out(n * w.size());
  for (size_t t = 0; t < n; ++t)
    for (int r = 0; r < w.rows; ++r)
      for (int c = 0; c < w.cols; ++c)
        out[(t * w.rows + r) * w.cols + c] = v[(t * w.out_rows + w.row0 + r) * w.out_cols + w.col0 + c];
  return out;
}
// A field moved in: a whole window hands it back without a copy (a GCM run's 30 years of North
// America are about 1 GB a field).
template <class T>
std::vector<T> crop_to_window(std::vector<T>&& v, const Window& w) {
  if (w.whole()) return std::move(v);
  return crop_to_window(static_cast<const std::vector<T>&>(v), w);
}

// The window's coordinates: the store's obs grid, or the output grid's rows and columns.
inline std::vector<double> window_lat(const StoreMeta& m, const Window& w) {
  if (m.obs_lat.size() == size_t(w.rows)) return m.obs_lat;
  return {m.predictand_lat.begin() + w.row0, m.predictand_lat.begin() + w.row0 + w.rows};
}
inline std::vector<double> window_lon(const StoreMeta& m, const Window& w) {
  if (m.obs_lon.size() == size_t(w.cols)) return m.obs_lon;
  return {m.predictand_lon.begin() + w.col0, m.predictand_lon.begin() + w.col0 + w.cols};
}

}  // namespace ds
