#include "train/loss_scaler.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <limits>
#include <sstream>

#include "io/error.h"

namespace ds {

LossScaler::LossScaler(const std::string& spec, const std::string& precision) {
  if (spec == "dynamic" || (spec.empty() && precision == "fp16")) {
    enabled_ = dynamic_ = true;
    scale_ = kInitialScale;
  } else if (!spec.empty()) {
    scale_ = std::strtod(spec.c_str(), nullptr);  // validated in io/config_validate.cpp
    enabled_ = scale_ != 1.0;
  }
  if (const char* steps = std::getenv("DOWNSCALE_TEST_OVERFLOW_STEPS")) {
    std::stringstream ss(steps);
    std::string item;
    while (std::getline(ss, item, ','))
      if (!item.empty()) overflow_steps_.insert(std::atoll(item.c_str()));
  }
}

bool LossScaler::restore(double scale, int64_t good_in_a_row) {
  if (!dynamic_ || !(scale > 0)) return false;
  scale_ = scale;
  good_in_a_row_ = good_in_a_row;
  return true;
}

int64_t LossScaler::take_skipped_in_epoch() {
  const int64_t n = skipped_in_epoch_;
  skipped_in_epoch_ = 0;
  return n;
}

void LossScaler::scale_loss_gradient(model::Backend& be, model::Tensor& d_out) const {
  if (enabled_) be.scale(d_out.size(), float(scale_), d_out.data());
}

bool LossScaler::unscale_or_skip(model::Backend& be, const std::vector<model::Param>& params) {
  if (!enabled_) return true;
  const int64_t iteration = iteration_++;
  if (overflow_steps_.count(iteration) && !params.empty()) {
    const float inf = std::numeric_limits<float>::infinity();
    be.fill(params[0].grad->data(), 1, inf);
  }
  std::vector<model::Backend::FloatSpan> grads;
  for (const auto& p : params) grads.push_back({p.grad->data(), p.grad->size()});
  if (!be.all_finite(grads)) {  // one synchronisation for every gradient
    ++skipped_total_;
    ++skipped_in_epoch_;
    good_in_a_row_ = 0;
    const double before = scale_;
    if (dynamic_) scale_ /= 2;
    spdlog::debug("loss scaling: non-finite gradient at iteration {}, step skipped, scale {:g} -> {:g}", iteration,
                  before, scale_);
    // 40 halvings from 65536 in a row: no scale makes the gradients finite, so it is divergence.
    if (scale_ < kMinScale)
      throw Error("training diverged: gradients are non-finite even at loss scale " + std::to_string(before) +
                  " (iteration " + std::to_string(iteration) + "); lower train.learning_rate or use train.precision bf16");
    return false;
  }
  const float inv = float(1.0 / scale_);
  for (const auto& p : params) be.scale(p.grad->size(), inv, p.grad->data());
  if (dynamic_ && ++good_in_a_row_ >= kGrowthInterval) {
    good_in_a_row_ = 0;
    scale_ *= 2;
  }
  return true;
}

}  // namespace ds
