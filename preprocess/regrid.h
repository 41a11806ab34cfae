// Bilinear regridding between regular lon-lat grids as a sparse weight matrix (Eigen), computed
// once per grid pair and applied to all time steps at once: out(t, :) = W * in(t, :).
// A target point that falls exactly on a source point gets that point alone, so regridding onto
// a subset of the source grid is an exact copy and missing values (NaN) do not spread.
#pragma once
#include <Eigen/Sparse>
#include <vector>

#include "preprocess/grid.h"

namespace ds {

using RegridWeights = Eigen::SparseMatrix<double, Eigen::RowMajor>;

// Rows: target points (lat-major: j * nlon + i); columns: source points likewise.
// Throws InputError naming `where` if the source does not cover the target.
RegridWeights bilinear_weights(const Grid& src, const Grid& dst, const std::string& where);

// Applies the weights to `ntime` fields stored one after another (each src.size() floats).
// A NaN in any source point with non-zero weight makes the target point NaN.
std::vector<float> apply_weights(const RegridWeights& w, const std::vector<float>& src, size_t ntime);

}  // namespace ds
