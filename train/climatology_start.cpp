#include "train/climatology_start.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "io/error.h"

namespace ds {

TargetClimatology training_climatology(const StoreReader& store) {
  const StoreMeta& m = store.meta();
  std::vector<size_t> boxes;  // grid offsets of the modelled boxes
  for (size_t k = 0; k < m.mask.size(); ++k)
    if (m.mask[k]) boxes.push_back(k);
  const size_t ys = size_t(m.Hy()) * m.Wy();
  // Welford's update per box, in double: tas in K is ~281 with a variance of ~10, so sums of
  // squares in float would lose the variance.
  struct Moments {
    double n = 0, mean = 0, m2 = 0;
  };
  std::vector<Moments> box(boxes.size());
  store.for_each_block("train", StoreReader::Field::y, [&](size_t, size_t r, const float* y) {
    for (size_t d = 0; d < r; ++d)
      for (size_t b = 0; b < boxes.size(); ++b) {
        const float v = y[d * ys + boxes[b]];
        if (!std::isfinite(v)) continue;
        Moments& mo = box[b];
        mo.n += 1;
        const double delta = v - mo.mean;
        mo.mean += delta / mo.n;
        mo.m2 += delta * (v - mo.mean);
      }
  });
  TargetClimatology c;
  c.days = store.count("train");
  double total = 0, sum = 0;
  for (const Moments& mo : box) {
    c.mean.push_back(mo.mean);  // 0 for a box never observed in training (its mask says modelled)
    c.var.push_back(mo.n > 0 ? mo.m2 / mo.n : 0);
    total += mo.n;
    sum += mo.n * mo.mean;
  }
  if (total == 0) throw InputError(store.path() + ": the train split's target is missing on every day at every modelled box");
  c.domain_mean = sum / total;
  // The variance around the domain's mean: within the boxes plus between their means.
  double ss = 0;
  for (const Moments& mo : box) ss += mo.m2 + mo.n * (mo.mean - c.domain_mean) * (mo.mean - c.domain_mean);
  c.domain_var = ss / total;
  return c;
}

namespace {

// log of a variance that may be 0 (a box observed on one day, a constant target): a floor a
// millionth of the domain's variance (or 1 where even that is 0) keeps the log finite and the
// initial Gaussian wide rather than infinitely sharp.
double log_var(double v, double domain_var) {
  const double floor = domain_var > 0 ? 1e-6 * domain_var : 1.0;
  return std::log(std::max(v, floor));
}

model::Param* find_param(std::vector<model::Param>& ps, const std::string& name) {
  for (auto& p : ps)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace

std::string start_from_climatology(model::Net& net, model::LossKind loss, const TargetClimatology& clim,
                                   const std::string& units) {
  if (loss == model::LossKind::kBernoulliGamma) return "";
  const int k = model::loss_channels(loss);  // gaussian: mean, log variance; mse: the value
  auto ps = net.params();
  const size_t boxes = clim.mean.size();
  std::vector<float> b;
  std::string where;
  if (model::Param* p = find_param(ps, "heads/b")) {  // deepesd: K blocks of one unit per land point
    if (size_t(p->value->shape().size()) != size_t(k) * boxes)
      throw UsageError(fmt::format("heads/b has {} values, {} channels x {} modelled boxes expected",
                                   p->value->shape().size(), k, boxes));
    b.resize(size_t(k) * boxes);
    for (size_t j = 0; j < boxes; ++j) {
      b[j] = float(clim.mean[j]);
      if (k == 2) b[boxes + j] = float(log_var(clim.var[j], clim.domain_var));
    }
    p->value->upload(b.data());
    where = fmt::format("each of the {} boxes' own", boxes);
  } else if (model::Param* p = find_param(ps, "head/b")) {  // convolutional head: one bias per channel
    if (p->value->shape().size() != k)
      throw UsageError(fmt::format("head/b has {} values, {} expected", p->value->shape().size(), k));
    b.assign(size_t(k), float(clim.domain_mean));
    if (k == 2) b[1] = float(log_var(clim.domain_var, clim.domain_var));
    p->value->upload(b.data());
    where = "the domain's";
  } else {
    throw UsageError("the model has no output bias (heads/b or head/b) to start from the climatology");
  }
  return fmt::format("{} loss: the output biases start at {} training climatology (domain mean {:.4g} {}, sd "
                     "{:.4g}), so the network learns departures from it",
                     model::loss_name(loss), where, clim.domain_mean, units, std::sqrt(clim.domain_var));
}

}  // namespace ds
