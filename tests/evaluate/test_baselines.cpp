// The linear baseline read in blocks of days against the dense computation it replaced: the
// ridge fit per box on the standardized scores of the leading principal components of the
// training predictors (an exact SVD here), with a box observed on some days fitted on those.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <random>

#include "evaluate/baselines.h"
#include "io/error.h"
#include "io/training_store.h"
#include "support/test_support.h"

using namespace ds;

namespace {

constexpr int kC = 3, kH = 4, kW = 5, kF = kC * kH * kW;  // 60 predictor values
constexpr int kBoxes = 6;                                   // 2 x 3 predictand grid
constexpr int kFactors = 4;                                 // the predictors' rank, less noise

// A store whose predictors are 4 factors on orthogonal loadings plus weak noise, their variances
// a factor 4 apart, so the subspace iteration's 6 steps find each component to (1/4)^6 (the
// ridge's shrinkage depends on the basis, not only on the subspace); each predictor value has an
// offset of up to +-3 (as preprocess.standardize: field leaves), so the centring matters; the
// boxes are linear in the factors. Box 3 misses every 7th day (not a block's first), box 4 is never observed, box 5 on 3 days only.
struct Fixture {
  test::TempDir dir;
  std::string path = dir / "s.h5";
  // nan_row: a training day whose value 7 of channel hus@700 is NaN.
  Fixture(int ntrain, int ntest, int nan_row = -1) {
    StoreMeta m;
    m.channels = {"z@500", "ta@850", "hus@700"};
    m.predictor_lon = {0, 2, 4, 6, 8};
    m.predictor_lat = {40, 42, 44, 46};
    m.predictand_lon = {0, 0.5, 1};
    m.predictand_lat = {40, 40.5};
    m.set_window_to_output_grid();
    m.mask = {1, 1, 1, 1, 0, 0};
    m.mean.assign(kF, 0);
    m.sd.assign(kF, 1);
    std::mt19937_64 rng(7);
    std::normal_distribution<float> n01;
    Eigen::MatrixXf load(kF, kFactors), beta(kBoxes, kFactors);
    for (int i = 0; i < load.size(); ++i) load.data()[i] = n01(rng);
    load = Eigen::HouseholderQR<Eigen::MatrixXf>(load).householderQ() * Eigen::MatrixXf::Identity(kF, kFactors);
    load *= std::sqrt(float(kF));
    for (int i = 0; i < beta.size(); ++i) beta.data()[i] = n01(rng);
    std::vector<float> offset(kF);
    for (float& o : offset) o = 3.0f * std::tanh(n01(rng));
    const float scale[kFactors] = {8, 4, 2, 1};
    auto make = [&](int n, int first_day, std::vector<float>& x, std::vector<float>& obs, std::vector<int64_t>& t) {
      for (int i = 0; i < n; ++i) {
        Eigen::VectorXf f(kFactors);
        for (int j = 0; j < kFactors; ++j) f(j) = scale[j] * n01(rng);
        const Eigen::VectorXf xi = load * f;
        for (int j = 0; j < kF; ++j) x.push_back(offset[j] + xi(j) + 0.01f * n01(rng));
        if (first_day == 0 && i == nan_row) x[x.size() - kF + 2 * kH * kW + 7] = NAN;
        const Eigen::VectorXf yi = beta * f;
        for (int k = 0; k < kBoxes; ++k) {
          const bool missing = (k == 3 && i % 7 == 3) || k == 4 || (k == 5 && i >= 3);
          obs.push_back(missing ? NAN : 10 + yi(k) + 0.1f * n01(rng));
        }
        t.push_back(first_day + i);
      }
    };
    m.predictand = "tas";  // no floor at 0: the fit is compared as it is
    m.predictand_units = "degC";
    StoreWriter w(path, m);
    std::vector<float> x, obs;
    std::vector<int64_t> t;
    make(ntrain, 0, x, obs, t);
    w.write_split("train", x, obs, obs, t);
    x.clear(), obs.clear(), t.clear();
    make(ntest, ntrain, x, obs, t);
    w.write_split("test", x, obs, obs, t);
    w.close();
  }
};

Eigen::MatrixXf read_x(const StoreReader& s, const std::string& split) {
  Eigen::MatrixXf x(kF, Eigen::Index(s.count(split)));
  s.read_x(split, 0, s.count(split), x.data());
  return x;
}

// The dense reference: every training day in memory, exact principal directions (SVD), and the
// ridge fit of each box on its observed days, centred on them.
std::vector<float> dense_reference(const StoreReader& s, int k, double ridge) {
  const Eigen::MatrixXf xt = read_x(s, "train");
  const Eigen::Index nt = xt.cols();
  Eigen::MatrixXf yt(kBoxes, nt);
  s.read_obs("train", 0, size_t(nt), yt.data());
  const Eigen::VectorXd xmean = xt.cast<double>().rowwise().mean();
  const Eigen::MatrixXd xc = xt.cast<double>().colwise() - xmean;
  const Eigen::JacobiSVD<Eigen::MatrixXd> svd(xc, Eigen::ComputeThinU);
  const Eigen::MatrixXd q = svd.matrixU().leftCols(k);
  Eigen::MatrixXd st = q.transpose() * xc;
  const Eigen::VectorXd sd = (st.array().square().rowwise().sum() / double(nt - 1)).sqrt();
  st = st.array().colwise() / sd.array();
  const Eigen::MatrixXf xs = read_x(s, "test");
  Eigen::MatrixXd ss = q.transpose() * (xs.cast<double>().colwise() - xmean);
  ss = ss.array().colwise() / sd.array();
  std::vector<float> out(size_t(ss.cols()) * kBoxes, NAN);
  for (int b = 0; b < kBoxes; ++b) {
    std::vector<Eigen::Index> days;
    for (Eigen::Index t = 0; t < nt; ++t)
      if (std::isfinite(yt(b, t))) days.push_back(t);
    if (days.size() <= size_t(k)) continue;
    Eigen::MatrixXd sk(k, Eigen::Index(days.size()));
    Eigen::VectorXd yv(Eigen::Index(days.size()));
    for (size_t i = 0; i < days.size(); ++i) sk.col(Eigen::Index(i)) = st.col(days[i]), yv(Eigen::Index(i)) = yt(b, days[i]);
    const Eigen::VectorXd smean = sk.rowwise().mean();
    const double ymean = yv.mean();
    sk.colwise() -= smean;
    Eigen::MatrixXd a = sk * sk.transpose();
    a.diagonal().array() += ridge;
    const Eigen::VectorXd c = a.ldlt().solve(sk * (yv.array() - ymean).matrix());
    for (Eigen::Index t = 0; t < ss.cols(); ++t) out[size_t(t) * kBoxes + b] = float(ymean + c.dot(ss.col(t) - smean));
  }
  return out;
}

}  // namespace

TEST(Baselines, LinearBaselineInBlocksIsTheDenseRidgeFitOnTheLeadingComponents) {
  const Fixture f(300, 40);
  const StoreReader s(f.path);
  // A ridge of 10 against sums of squares of 299 shrinks the coefficients by about 3 %: a fit
  // that dropped it would be 0.1 or more off.
  const std::vector<float> want = dense_reference(s, kFactors, 10.0);
  // Blocks of 7 days of predictors and 70 of observations (and their last, shorter ones).
  const std::vector<float> small = linear_baseline(s, "test", {kFactors, 10.0, 6, 7 * kF * sizeof(float)});
  const std::vector<float> whole = linear_baseline(s, "test", {kFactors, 10.0, 6});
  ASSERT_EQ(small.size(), want.size());
  ASSERT_EQ(whole.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const size_t box = i % kBoxes;
    if (box >= 4) {  // never or too rarely observed: no fit
      EXPECT_TRUE(std::isnan(small[i]) && std::isnan(whole[i])) << i;
      continue;
    }
    // Against the dense fit on exact components: float32 sums over 300 days (relative 1e-6
    // each), components converged to about 2e-4 (which moves the ridge's 3 % shrinkage of
    // coefficients ~10 by ~1e-4); the predictions are ~10 +- 20, so 2e-3 absolute, while a
    // missed block, an uncentred fit (the offsets) or a gappy box not centred on its own days
    // moves them by 0.1 or more. (One missed day of the gappy box moves its fit by about the
    // noise times its leverage, 0.1 x 5 / 258: within this tolerance, not tested here.)
    EXPECT_NEAR(small[i], want[i], 2e-3) << "box " << box << ", test day " << i / kBoxes;
    // Blocks or one read: the same sums in another order, float32 rounding only (relative
    // 1e-6 a sum, a few sums deep).
    EXPECT_NEAR(small[i], whole[i], 1e-5 * (1 + std::fabs(whole[i]))) << "box " << box;
  }
}

TEST(Baselines, LinearBaselineSkillComesFromTheFactorsOnTheTestDays) {
  // The fit generalizes: on days it never saw, the boxes observed every day and the gappy box are
  // predicted to about their noise (0.1), where climatology misses by the factors' spread (~5).
  const Fixture f(300, 40);
  const StoreReader s(f.path);
  const std::vector<float> lin = linear_baseline(s, "test", {kFactors, 1e-6, 6, 5 * kF * sizeof(float)});
  std::vector<float> obs(40 * kBoxes);
  s.read_obs("test", 0, 40, obs.data());
  for (int box = 0; box < 4; ++box) {
    double se = 0;
    int n = 0;
    for (int t = 0; t < 40; ++t)
      if (std::isfinite(obs[t * kBoxes + box])) se += std::pow(lin[t * kBoxes + box] - obs[t * kBoxes + box], 2), ++n;
    EXPECT_LT(std::sqrt(se / n), 0.3) << "box " << box;
  }
}

TEST(Baselines, LinearBaselineRefusesANonFinitePredictorNamingItsDay) {
  // One NaN would spread through every component into every box's value: an InputError naming
  // the split, the row and the channel instead.
  const Fixture f(300, 40, 123);
  try {
    linear_baseline(StoreReader(f.path), "test", {kFactors, 1.0, 6});
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/train/x is nan on"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(row 123), channel hus@700"), std::string::npos) << e.what();
  }
}
