#include "evaluate/baselines.h"

#include <spdlog/spdlog.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "io/error.h"
#include "io/stop_signal.h"

namespace ds {

namespace {

Eigen::MatrixXf read_predictors(const StoreReader& store, const std::string& split) {
  const auto& m = store.meta();
  const size_t n = store.count(split), f = size_t(m.C()) * m.H() * m.W();
  // Row-major in the file (sample, feature) = column-major (feature, sample).
  Eigen::MatrixXf x(f, n);
  if (n) store.read_x(split, 0, n, x.data());
  return x;
}

Eigen::MatrixXf read_observed(const StoreReader& store, const std::string& split) {
  const auto& m = store.meta();
  const size_t n = store.count(split), np = size_t(m.Hy()) * m.Wy();
  Eigen::MatrixXf y(np, n);
  if (n) store.read_obs(split, 0, n, y.data());
  return y;
}

}  // namespace

std::vector<float> training_box_means(const StoreReader& store) {
  const auto& m = store.meta();
  const size_t np = size_t(m.Hy()) * m.Wy();
  std::vector<double> sum(np, 0.0);
  std::vector<size_t> count(np, 0);
  store.for_each_block("train", true, [&](size_t, size_t r, const float* obs) {
    for (size_t t = 0; t < r; ++t)
      for (size_t k = 0; k < np; ++k)
        if (std::isfinite(obs[t * np + k])) sum[k] += obs[t * np + k], ++count[k];
  });
  std::vector<float> mean(np);
  for (size_t k = 0; k < np; ++k) mean[k] = count[k] ? static_cast<float>(sum[k] / count[k]) : NAN;
  return mean;
}

std::vector<float> climatology_baseline(const StoreReader& store, const std::string& split) {
  const std::vector<float> mean = training_box_means(store);
  const size_t np = mean.size(), n = store.count(split);
  std::vector<float> out(n * np);
  for (size_t t = 0; t < n; ++t) std::copy(mean.begin(), mean.end(), out.begin() + t * np);
  return out;
}

std::vector<float> linear_baseline(const StoreReader& store, const std::string& split, const LinearBaselineOptions& opt) {
  // Its phases are said as they start and a stop request honoured between them: on the North
  // America store (8766 training days of 31,800 predictor values) the baseline takes most of a minute.
  const std::string stop_note = "computing the linear baseline; nothing written";
  spdlog::info("linear baseline: reading the training split ({} days)", store.count("train"));
  const Eigen::MatrixXf xt = read_predictors(store, "train");  // (F, Nt)
  const Eigen::MatrixXf yt = read_observed(store, "train");    // (P, Nt)
  const Eigen::Index F = xt.rows(), Nt = xt.cols(), P = yt.rows();
  throw_if_stop_requested(stop_note);
  const auto& mask = store.meta().mask;
  spdlog::info("linear baseline: {} principal components of {} predictor values, then a ridge fit per modelled box "
               "({} of the grid's {})",
               std::min<Eigen::Index>(opt.components, std::min(F, Nt - 1)), F,
               std::count_if(mask.begin(), mask.end(), [](uint8_t m) { return m != 0; }), P);
  const int K = static_cast<int>(std::min<Eigen::Index>(opt.components, std::min(F, Nt - 1)));
  if (K < 1) throw InputError(store.path() + ": too few training days for the linear baseline");

  // Leading principal directions by subspace iteration: Q <- orth(X X^T Q). The predictors are
  // already standardized per box, so their means are ~0; centre anyway so PCs are exact.
  const Eigen::VectorXf xmean = xt.rowwise().mean();
  const Eigen::MatrixXf xc = xt.colwise() - xmean;
  std::mt19937_64 rng(12345);
  std::normal_distribution<float> n01;
  Eigen::MatrixXf q = Eigen::MatrixXf::NullaryExpr(F, K, [&]() { return n01(rng); });
  for (int it = 0; it < opt.iterations; ++it) {
    const Eigen::MatrixXf z = xc * (xc.transpose() * q);
    q = Eigen::HouseholderQR<Eigen::MatrixXf>(z).householderQ() * Eigen::MatrixXf::Identity(F, K);
  }
  Eigen::MatrixXf s = q.transpose() * xc;  // (K, Nt) scores
  const Eigen::VectorXf s_sd = ((s.array().square().rowwise().sum()) / float(Nt - 1)).sqrt().max(1e-12f);
  s = s.array().colwise() / s_sd.array();

  // Ridge regression with intercept, per grid box; ocean boxes (NaN) are skipped.
  Eigen::MatrixXd a = (s.cast<double>() * s.cast<double>().transpose());
  a.diagonal().array() += opt.ridge;
  const Eigen::LDLT<Eigen::MatrixXd> solver(a);
  Eigen::MatrixXf coef(P, K);
  Eigen::VectorXf intercept(P);
  for (Eigen::Index k = 0; k < P; ++k) {
    const Eigen::VectorXf yk = yt.row(k).transpose();
    if (yk.allFinite()) {
      intercept(k) = yk.mean();
      const Eigen::VectorXd rhs = s.cast<double>() * (yk.array() - intercept(k)).matrix().cast<double>();
      coef.row(k) = solver.solve(rhs).cast<float>().transpose();
      continue;
    }
    // A box observed on some training days only (E-OBS has gaps): its own fit on those days.
    std::vector<Eigen::Index> days;
    for (Eigen::Index t = 0; t < Nt; ++t)
      if (std::isfinite(yk(t))) days.push_back(t);
    if (days.size() <= size_t(K)) {  // never (ocean, padding) or too rarely observed
      coef.row(k).setZero();
      intercept(k) = NAN;
      continue;
    }
    Eigen::MatrixXd sk(K, days.size());
    Eigen::VectorXd yv(days.size());
    for (size_t i = 0; i < days.size(); ++i) sk.col(i) = s.col(days[i]).cast<double>(), yv(i) = yk(days[i]);
    // Centred on those days: the scores are centred over all training days, not over these.
    const Eigen::VectorXd smean = sk.rowwise().mean();
    sk.colwise() -= smean;
    Eigen::MatrixXd ak = sk * sk.transpose();
    ak.diagonal().array() += opt.ridge;
    const Eigen::VectorXd ck = ak.ldlt().solve(sk * (yv.array() - yv.mean()).matrix());
    coef.row(k) = ck.cast<float>().transpose();
    intercept(k) = static_cast<float>(yv.mean() - ck.dot(smean));
  }

  throw_if_stop_requested(stop_note);
  spdlog::info("linear baseline: predicting the {} split ({} days)", split, store.count(split));
  const Eigen::MatrixXf xs = read_predictors(store, split);
  Eigen::MatrixXf ss = q.transpose() * (xs.colwise() - xmean);
  ss = ss.array().colwise() / s_sd.array();
  const Eigen::MatrixXf pred = (coef * ss).colwise() + intercept;  // (P, N)
  // Only precipitation has a floor; a temperature may be below 0 degC.
  const float floor = store.meta().is_precipitation() ? 0.0f : -std::numeric_limits<float>::infinity();
  std::vector<float> out(pred.size());
  for (Eigen::Index t = 0; t < pred.cols(); ++t)
    for (Eigen::Index k = 0; k < P; ++k) {
      const float v = pred(k, t);
      out[t * P + k] = std::isfinite(v) ? std::max(floor, v) : NAN;
    }
  return out;
}

}  // namespace ds
