// The model's output grid for an observation grid. DeepESD ends in dense heads over the modelled
// boxes, so any grid will do: it gets the convolutional models' grid when the observations fit
// in it (so one store serves every model) and the observation grid itself otherwise. The
// convolutional models (demo, mnn)
// end in two x2 upsamplings and 'valid' 4x4 heads (model/models.cpp), so they map an H x W
// predictor grid to (4H-3) x (4W-3): a smaller observation grid is centred in it and the rest is
// padding (coordinates continuing the observation grid's step; mask 0, targets NaN), a larger one
// cannot be modelled and is a configuration error naming the smallest predictor grid that fits.
#pragma once
#include <string>

#include "preprocess/grid.h"

namespace ds {

struct OutputGrid {
  Grid grid;                 // the model's output grid (contains the observation grid)
  int row0 = 0, col0 = 0;    // where the observation grid's first row and column sit in it
};

// Rows x columns the convolutional models output for an H x W input.
inline int conv_output_size(int n) { return 4 * n - 3; }

// `model` is model.name; `predictor` the input grid; `obs` the observation grid, `obs_as_fetched`
// when it is the fetched one (no preprocess.predictand_grid: the message offers that key too).
// Throws UsageError (naming `where`, the config file) when the observation grid does not fit.
OutputGrid output_grid(const std::string& model, const Grid& predictor, const Grid& obs, const std::string& where,
                       bool obs_as_fetched = false);

}  // namespace ds
