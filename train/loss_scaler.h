// Loss scaling for FP16 training (train.loss_scale): the loss gradient is multiplied by S before
// backward so small gradients survive FP16's range (6e-5..65504), and divided back out before the
// optimizer. Dynamic scaling follows PyTorch's GradScaler defaults: S starts at 65536; a step
// whose gradients hold an Inf or NaN is skipped (no optimizer update, Adam's step count unchanged)
// and halves S; 2000 good steps in a row double it. Checked after the gradient allreduce, so
// every rank sees the same gradients and skips the same steps. A fixed scale only multiplies and
// divides (a non-finite gradient then is skipped too, S unchanged). Scale 1 without dynamic
// scaling is "off": no extra work, no synchronisation.
//
// Test hook: DOWNSCALE_TEST_OVERFLOW_STEPS=3,7 writes an Inf into the first gradient at those
// iterations (0-based count of steps attempted in this process, skipped ones included).
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "model/backend.h"
#include "model/net.h"

namespace ds {

class LossScaler {
 public:
  // spec: train.loss_scale ("dynamic", a number, or "" for the default of `precision`).
  LossScaler(const std::string& spec, const std::string& precision);
  bool enabled() const { return enabled_; }
  bool dynamic() const { return dynamic_; }
  double scale() const { return scale_; }
  int64_t skipped_total() const { return skipped_total_; }
  int64_t good_in_a_row() const { return good_in_a_row_; }
  // A resumed run continues from a checkpoint's scale (dynamic scaling only; returns whether it
  // applied: a fixed scale is the config's, and scale <= 0 means none was recorded).
  bool restore(double scale, int64_t good_in_a_row);
  // Skipped steps since the last call (the per-epoch count), and resets it.
  int64_t take_skipped_in_epoch();

  // Before backward: d_out *= S.
  void scale_loss_gradient(model::Backend& be, model::Tensor& d_out) const;
  // After backward (and the allreduce): true when the optimizer may step (the gradients were
  // finite and are now unscaled); false when this step is skipped (S adjusted, count kept).
  bool unscale_or_skip(model::Backend& be, const std::vector<model::Param>& params);

  static constexpr double kInitialScale = 65536.0;
  static constexpr int kGrowthInterval = 2000;
  static constexpr double kMinScale = 1.0 / 16777216.0;  // below it: an error, not another skip

 private:
  bool enabled_ = false, dynamic_ = false;
  double scale_ = 1.0;
  int64_t good_in_a_row_ = 0;
  int64_t iteration_ = 0, skipped_total_ = 0, skipped_in_epoch_ = 0;
  std::set<int64_t> overflow_steps_;  // the test hook's
};

}  // namespace ds
