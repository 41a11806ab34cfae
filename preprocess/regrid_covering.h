// Regridding onto a grid whose edge cells the source covers only in part (a GCM's grid under a
// reanalysis-sized predictor grid; NCEP's T62 Gaussian grid under a 2-degree grid whose edge
// cells reach a fraction of a cell beyond the last centre), as CDO's remapcon and remapnn do:
// conservative takes the mean over the covered part of each cell (renormalized by that area),
// nearest the nearest centre, the source cell at the edge. A target cell without any source
// cell under it is refused, naming it. Bilinear needs every target point inside the source
// centres. Used by preprocess (the training grids) and predict (new predictors) alike, so both
// stages accept the same grids.
#pragma once
#include <cstddef>
#include <string>

#include "preprocess/grid.h"
#include "preprocess/regrid.h"

namespace ds {

// Weights from `src` to `dst` (see above); `renormalize` tells apply_weights
// to divide by the valid (covered) weight. InputError naming `where` and the uncovered cells.
struct CoverageRegrid {
  RegridWeights weights;
  bool renormalize = false;
  size_t partial = 0;        // target cells the source covers only in part
  double least_covered = 1;  // the smallest covered share of a target cell's area
};
CoverageRegrid regrid_covering(RegridMethod m, const Grid& src, const Grid& dst, const std::string& where);

}  // namespace ds
