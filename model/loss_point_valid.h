// Which (sample, grid point) pairs enter a masked loss, shared by the CPU loops and the CUDA
// kernels so both skip exactly the same points: the mask says the box is modelled (> 0.5) and the
// target is a number. A modelled box's missing days (E-OBS gaps) and every unmodelled box are
// NaN targets (io/training_store.h): they add nothing to the sum and get a zero gradient.
#pragma once
#include <cmath>

#include "model/host_device.h"

namespace ds::model {

DS_HOST_DEVICE inline bool loss_point_valid(float mask, float target) {
#ifdef __CUDA_ARCH__
  return mask > 0.5f && isfinite(target);
#else
  return mask > 0.5f && std::isfinite(target);
#endif
}

}  // namespace ds::model
