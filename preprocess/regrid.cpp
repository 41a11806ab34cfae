#include "preprocess/regrid.h"

#include <algorithm>
#include <cmath>

#include "io/error.h"

namespace ds {

namespace {

// Index of the source interval [c[k], c[k+1]] holding x, and the fraction along it. Points within
// 1e-9 of a source centre snap to it (fraction exactly 0) so identity regrids are exact.
void locate(const std::vector<double>& c, double x, int& k, double& f) {
  const double snap = 1e-9;
  auto it = std::upper_bound(c.begin(), c.end(), x + snap);
  k = static_cast<int>(it - c.begin()) - 1;
  k = std::clamp(k, 0, std::max(0, static_cast<int>(c.size()) - 2));
  if (c.size() == 1) { f = 0; return; }
  f = (x - c[k]) / (c[k + 1] - c[k]);
  if (std::abs(f) < snap) f = 0;
  if (std::abs(f - 1) < snap) { f = 0; k += 1; }
}

}  // namespace

RegridWeights bilinear_weights(const Grid& src, const Grid& dst, const std::string& where) {
  if (!covers(src, dst))
    throw InputError(where + ": source grid " + src.describe() + " does not cover target grid " + dst.describe());
  std::vector<Eigen::Triplet<double>> t;
  t.reserve(dst.size() * 4);
  for (int j = 0; j < dst.nlat(); ++j) {
    int kj;
    double fj;
    locate(src.lat, dst.lat[j], kj, fj);
    for (int i = 0; i < dst.nlon(); ++i) {
      int ki;
      double fi;
      locate(src.lon, dst.lon[i], ki, fi);
      const long row = static_cast<long>(j) * dst.nlon() + i;
      auto add = [&](int jj, int ii, double w) {
        if (w > 1e-12) t.emplace_back(row, static_cast<long>(jj) * src.nlon() + ii, w);
      };
      add(kj, ki, (1 - fj) * (1 - fi));
      if (fi > 0) add(kj, ki + 1, (1 - fj) * fi);
      if (fj > 0) add(kj + 1, ki, fj * (1 - fi));
      if (fi > 0 && fj > 0) add(kj + 1, ki + 1, fj * fi);
    }
  }
  RegridWeights w(static_cast<long>(dst.size()), static_cast<long>(src.size()));
  w.setFromTriplets(t.begin(), t.end());
  return w;
}

std::vector<float> apply_weights(const RegridWeights& w, const std::vector<float>& src, size_t ntime) {
  const long ns = w.cols(), nd = w.rows();
  if (src.size() != static_cast<size_t>(ns) * ntime) throw Error("apply_weights: source size mismatch");
  // Fields as columns: (ns x ntime) column-major is exactly the time-major storage we hold.
  Eigen::Map<const Eigen::MatrixXf> in(src.data(), ns, static_cast<long>(ntime));
  std::vector<float> out(static_cast<size_t>(nd) * ntime);
  Eigen::Map<Eigen::MatrixXf> res(out.data(), nd, static_cast<long>(ntime));
  res = (w.cast<float>() * in);
  return out;
}

}  // namespace ds
