#include "evaluate/baselines.h"

#include <spdlog/spdlog.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "io/error.h"
#include "io/store_checks.h"
#include "io/stop_signal.h"

namespace ds {

std::vector<float> training_box_means(const StoreReader& store) {
  const auto& m = store.meta();
  const size_t np = size_t(m.Hy()) * m.Wy();
  std::vector<double> sum(np, 0.0);
  std::vector<size_t> count(np, 0);
  store.for_each_block("train", StoreReader::Field::obs, [&](size_t, size_t r, const float* obs) {
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

namespace {

// The fit of the linear baseline: the leading principal directions of the training predictors,
// the scores' standard deviations, and per box a ridge fit on the standardized scores.
struct LinearFit {
  Eigen::VectorXf xmean;      // (F) training mean of each predictor value
  Eigen::MatrixXf q;          // (F, K) orthonormal principal directions
  Eigen::VectorXf s_sd;       // (K) standard deviation of each score over the training days
  Eigen::MatrixXf coef;       // (P, K) per box; zero where never or too rarely observed
  Eigen::VectorXf intercept;  // (P); NaN where never or too rarely observed
};

// Every pass reads the store a block of days at a time (StoreReader::for_each_block): the
// training predictors of North America's 24 years are 1.1 GB and their observations 0.86 GB,
// which held whole (with a centred copy) made evaluate's peak 3 GB above the test split's. The
// centring is applied to the products, not to a copy of each block (a 64 MiB copy a block took
// as long as the products). The predictors are standardized with training statistics: per box
// their means are ~0; per field (preprocess.standardize: field) a box's may be 1 or 2 sd, where
// X^T Q - 1 (m^T Q) loses a digit or so of float32's seven, far below what the scores show.
using Field = StoreReader::Field;

// (F, n) view of a block of n samples: row-major (sample, feature) in the store.
Eigen::Map<const Eigen::MatrixXf> as_columns(const float* x, Eigen::Index f, size_t n) {
  return {x, f, Eigen::Index(n)};
}

Eigen::VectorXf predictor_means(const StoreReader& store, Eigen::Index f, size_t block_bytes) {
  Eigen::VectorXd sum = Eigen::VectorXd::Zero(f);
  store.for_each_block("train", Field::x, [&](size_t first, size_t r, const float* x) {
    // Checked once, here: one NaN would spread through every component into every box's value.
    check_sane_x(store, "train", first, r, x);
    sum += as_columns(x, f, r).cast<double>().rowwise().sum();
  }, block_bytes);
  return (sum / double(store.count("train"))).cast<float>();
}

// Leading principal directions by subspace iteration, Q <- orth(Xc Xc^T Q), one pass over the
// training predictors an iteration (Xc Xc^T Q = sum over blocks of Xc_b (Xc_b^T Q)).
Eigen::MatrixXf principal_directions(const StoreReader& store, const Eigen::VectorXf& xmean, int k, int iterations,
                                     size_t block_bytes, const std::string& stop_note) {
  const Eigen::Index f = xmean.size();
  std::mt19937_64 rng(12345);
  std::normal_distribution<float> n01;
  Eigen::MatrixXf q = Eigen::MatrixXf::NullaryExpr(f, k, [&]() { return n01(rng); });
  for (int it = 0; it < iterations; ++it) {
    Eigen::MatrixXf z = Eigen::MatrixXf::Zero(f, k);
    const Eigen::RowVectorXf mq = xmean.transpose() * q;
    store.for_each_block("train", Field::x, [&](size_t, size_t r, const float* x) {
      const auto xb = as_columns(x, f, r);
      Eigen::MatrixXf t = xb.transpose() * q;  // Xc_b^T Q = X_b^T Q - 1 (m^T Q)
      t.rowwise() -= mq;
      // Summed over the blocks, X Xc^T Q = Xc Xc^T Q + m (Xc 1)^T Q, and Xc 1 = 0: X_b itself
      // stands for Xc_b on this side.
      z.noalias() += xb * t;
    }, block_bytes);
    q = Eigen::HouseholderQR<Eigen::MatrixXf>(z).householderQ() * Eigen::MatrixXf::Identity(f, k);
    throw_if_stop_requested(stop_note);
  }
  return q;
}

// The (K, n) scores of a split's predictors on the directions, a block at a time.
Eigen::MatrixXf scores_of(const StoreReader& store, const std::string& split, const Eigen::VectorXf& xmean,
                          const Eigen::MatrixXf& q, size_t block_bytes) {
  const Eigen::Index f = xmean.size();
  Eigen::MatrixXf s(q.cols(), Eigen::Index(store.count(split)));
  const Eigen::VectorXf qm = q.transpose() * xmean;
  store.for_each_block(split, Field::x, [&](size_t first, size_t r, const float* x) {
    if (split != "train") check_sane_x(store, split, first, r, x);  // train's in predictor_means
    auto sb = s.middleCols(Eigen::Index(first), Eigen::Index(r));
    sb.noalias() = q.transpose() * as_columns(x, f, r);  // Q^T (X_b - m 1^T)
    sb.colwise() -= qm;
  }, block_bytes);
  return s;
}

// What a box's ridge fit needs of its observed training days: their count, the sums of the
// scores s, of their products s s^T, of y and of s y.
struct BoxSums {
  double n = 0, y = 0;
  Eigen::VectorXd s, sy;
  Eigen::MatrixXd ss;
};

// Ridge regression with intercept, per grid box, on the (K, Nt) standardized training scores s.
// A box observed every training day shares one factorization; a box observed on some days only
// (E-OBS has gaps) gets its own fit on those days, centred on them; a box observed on K days or
// fewer (ocean, padding) gets none (NaN). Two passes over the observations: which days each box
// has, then the sums.
void fit_boxes(const StoreReader& store, const Eigen::MatrixXf& s, double ridge, size_t block_bytes, LinearFit& fit) {
  const auto& m = store.meta();
  const Eigen::Index K = s.rows(), Nt = s.cols(), P = Eigen::Index(m.Hy()) * m.Wy();
  std::vector<Eigen::Index> observed(P, 0);
  store.for_each_block("train", Field::obs, [&](size_t, size_t r, const float* y) {
    for (size_t t = 0; t < r; ++t)
      for (Eigen::Index k = 0; k < P; ++k) observed[k] += std::isfinite(y[t * P + k]);
  }, block_bytes);
  std::vector<Eigen::Index> partial;  // boxes with their own fit
  std::vector<int> slot(P, -1);       // their index in `partial`
  for (Eigen::Index k = 0; k < P; ++k)
    if (observed[k] > K && observed[k] < Nt) slot[k] = int(partial.size()), partial.push_back(k);

  const Eigen::MatrixXd sd = s.cast<double>();
  const Eigen::VectorXd s_sum = sd.rowwise().sum();
  Eigen::MatrixXd sy_all = Eigen::MatrixXd::Zero(K, P);  // sum of s y over all days (boxes observed every day)
  Eigen::VectorXd y_all = Eigen::VectorXd::Zero(P);
  std::vector<BoxSums> own(partial.size(), BoxSums{0, 0, Eigen::VectorXd::Zero(K), Eigen::VectorXd::Zero(K),
                                                   Eigen::MatrixXd::Zero(K, K)});
  Eigen::MatrixXd yd;  // the block in double, kept from block to block (a new one each time faulted its pages in)
  Eigen::MatrixXd g;   // (K, days) a gappy box's scores on its observed days of the block
  Eigen::VectorXd yv;  // and its values
  store.for_each_block("train", Field::obs, [&](size_t first, size_t r, const float* y) {
    if (g.cols() < Eigen::Index(r)) g.resize(K, Eigen::Index(r)), yv.resize(Eigen::Index(r));
    yd = Eigen::Map<const Eigen::MatrixXf>(y, P, Eigen::Index(r)).cast<double>();  // (P, r)
    const auto sb = sd.middleCols(Eigen::Index(first), Eigen::Index(r));
    // NaN spreads into the columns of boxes not observed every day only: those are not used.
    sy_all.noalias() += sb * yd.transpose();
    y_all += yd.rowwise().sum();
    // A box with gaps: its observed days of the block gathered, one rank-m update of its sums.
    for (size_t i = 0; i < partial.size(); ++i) {
      const Eigen::Index k = partial[i];
      Eigen::Index m = 0;
      for (size_t t = 0; t < r; ++t)
        if (std::isfinite(y[t * P + k])) {
          g.col(m) = sb.col(Eigen::Index(t));
          yv(m++) = y[t * P + k];
        }
      if (!m) continue;
      BoxSums& b = own[i];
      b.n += double(m), b.y += yv.head(m).sum();
      b.s += g.leftCols(m).rowwise().sum();
      b.sy.noalias() += g.leftCols(m) * yv.head(m);
      b.ss.selfadjointView<Eigen::Lower>().rankUpdate(g.leftCols(m));
    }
  }, block_bytes);

  Eigen::MatrixXd a = sd * sd.transpose();
  a.diagonal().array() += ridge;
  const Eigen::LDLT<Eigen::MatrixXd> solver(a);
  fit.coef = Eigen::MatrixXf::Zero(P, K);
  fit.intercept = Eigen::VectorXf::Constant(P, NAN);
  for (Eigen::Index k = 0; k < P; ++k) {
    if (observed[k] == Nt) {
      const double ymean = y_all(k) / double(Nt);
      // s (y - ymean), the scores being centred over these very days only up to rounding.
      const Eigen::VectorXd rhs = sy_all.col(k) - ymean * s_sum;
      fit.coef.row(k) = solver.solve(rhs).cast<float>().transpose();
      fit.intercept(k) = static_cast<float>(ymean);
    } else if (slot[k] >= 0) {
      // Centred on the box's own days: sum (s - smean)(s - smean)^T = ss - n smean smean^T and
      // sum (s - smean)(y - ymean) = sy - ymean s.
      const BoxSums& b = own[size_t(slot[k])];
      const Eigen::VectorXd smean = b.s / b.n;
      const double ymean = b.y / b.n;
      Eigen::MatrixXd ak = b.ss.selfadjointView<Eigen::Lower>();
      ak -= b.n * smean * smean.transpose();
      ak.diagonal().array() += ridge;
      const Eigen::VectorXd ck = ak.ldlt().solve(b.sy - ymean * b.s);
      fit.coef.row(k) = ck.cast<float>().transpose();
      fit.intercept(k) = static_cast<float>(ymean - ck.dot(smean));
    }
  }
}

}  // namespace

std::vector<float> linear_baseline(const StoreReader& store, const std::string& split, const LinearBaselineOptions& opt) {
  // Its phases are said as they start and a stop request honoured between them: on the North
  // America store (8766 training days of 31,800 predictor values) the baseline takes most of a minute.
  const std::string stop_note = "computing the linear baseline; nothing written";
  const auto& m = store.meta();
  const Eigen::Index F = Eigen::Index(m.C()) * m.H() * m.W(), Nt = Eigen::Index(store.count("train"));
  const Eigen::Index P = Eigen::Index(m.Hy()) * m.Wy();
  const int K = static_cast<int>(std::min<Eigen::Index>(opt.components, std::min(F, Nt - 1)));
  if (K < 1) throw InputError(store.path() + ": too few training days for the linear baseline");
  const auto& mask = m.mask;
  spdlog::info("linear baseline: {} principal components of {} predictor values over {} training days ({} passes "
               "over them), then a ridge fit per modelled box ({} of the {} x {} observation grid, as scored)",
               K, F, Nt, opt.iterations + 2, std::count_if(mask.begin(), mask.end(), [](uint8_t v) { return v != 0; }),
               m.obs_rows, m.obs_cols);
  LinearFit fit;
  // Standardized per box, the predictors' means are ~0 (per field, not): centred either way.
  fit.xmean = predictor_means(store, F, opt.block_bytes);
  throw_if_stop_requested(stop_note);
  fit.q = principal_directions(store, fit.xmean, K, opt.iterations, opt.block_bytes, stop_note);
  Eigen::MatrixXf s = scores_of(store, "train", fit.xmean, fit.q, opt.block_bytes);  // (K, Nt)
  fit.s_sd = ((s.array().square().rowwise().sum()) / float(Nt - 1)).sqrt().max(1e-12f);
  s = s.array().colwise() / fit.s_sd.array();
  throw_if_stop_requested(stop_note);
  fit_boxes(store, s, opt.ridge, opt.block_bytes, fit);

  throw_if_stop_requested(stop_note);
  spdlog::info("linear baseline: predicting the {} split ({} days)", split, store.count(split));
  Eigen::MatrixXf ss = scores_of(store, split, fit.xmean, fit.q, opt.block_bytes);
  ss = ss.array().colwise() / fit.s_sd.array();
  // Only precipitation has a floor; a temperature may be below 0 degC.
  const float floor = m.is_precipitation() ? 0.0f : -std::numeric_limits<float>::infinity();
  std::vector<float> out(size_t(ss.cols()) * size_t(P));
  for (Eigen::Index t = 0; t < ss.cols(); ++t) {
    const Eigen::VectorXf pred = fit.coef * ss.col(t) + fit.intercept;  // (P)
    for (Eigen::Index k = 0; k < P; ++k) {
      const float v = pred(k);
      out[size_t(t) * P + k] = std::isfinite(v) ? std::max(floor, v) : NAN;
    }
  }
  return out;
}

}  // namespace ds
