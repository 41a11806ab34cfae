// Regridding between regular lon-lat grids as a sparse weight matrix (Eigen), computed once per
// grid pair and applied to all time steps at once: out(t, :) = W * in(t, :).
//   bilinear      in (lon, lat) between the four surrounding centres (regrid.cpp). A target
//                 point that falls exactly on a source point gets that point alone, so
//                 regridding onto a subset of the source grid is an exact copy and missing
//                 values (NaN) do not spread.
//   conservative  first order, area weighted on the sphere (regrid_conservative.cpp): a target
//                 cell is the area-weighted mean of the source cells it overlaps; with missing
//                 values the mean is renormalized over the valid overlap (CDO's "fracarea").
//   nearest       the source centre nearest on the sphere (regrid_nearest.cpp).
#pragma once
#include <Eigen/Sparse>
#include <string>
#include <vector>

#include "preprocess/grid.h"

namespace ds {

using RegridWeights = Eigen::SparseMatrix<double, Eigen::RowMajor>;

enum class RegridMethod { bilinear, conservative, nearest };
// "bilinear" | "conservative" | "nearest"; UsageError naming `where` otherwise.
RegridMethod parse_regrid_method(const std::string& name, const std::string& where);
const char* to_string(RegridMethod m);

// Rows: target points (lat-major: j * nlon + i); columns: source points likewise.
// Each throws InputError naming `where` if the source does not cover the target (bilinear: the
// target centres inside the hull of the source centres; conservative and nearest: the target
// cells inside the source cells).
RegridWeights bilinear_weights(const Grid& src, const Grid& dst, const std::string& where);
RegridWeights conservative_weights(const Grid& src, const Grid& dst, const std::string& where);
RegridWeights nearest_weights(const Grid& src, const Grid& dst, const std::string& where);

// Applies the weights to `ntime` fields stored one after another (each src.size() floats).
// A NaN in any source point with non-zero weight makes the target point NaN.
std::vector<float> apply_weights(const RegridWeights& w, const std::vector<float>& src, size_t ntime);

// Applies the weights skipping missing sources: out = sum(w x over valid x) / sum(w over valid x),
// NaN where no valid source has weight. The conservative method's treatment of missing values.
std::vector<float> apply_weights_renormalized(const RegridWeights& w, const std::vector<float>& src, size_t ntime);

// Both of the above into `out` (resized); renormalize selects the second.
void apply_weights(const RegridWeights& w, const std::vector<float>& src, size_t ntime, std::vector<float>& out, bool renormalize);

// One grid pair and method: the weights, built once, applied block after block.
class Regridder {
 public:
  Regridder(RegridMethod m, const Grid& src, const Grid& dst, const std::string& where);
  Regridder(RegridMethod m, RegridWeights w) : method_(m), w_(std::move(w)) {}  // regrid_covering.h's
  RegridMethod method() const { return method_; }
  // `ntime` source fields -> `ntime` target fields.
  std::vector<float> apply(const std::vector<float>& src, size_t ntime) const;
  // The same into `out` (resized), so block after block reuses one buffer.
  void apply(const std::vector<float>& src, size_t ntime, std::vector<float>& out) const;

 private:
  RegridMethod method_;
  RegridWeights w_;
};

}  // namespace ds
