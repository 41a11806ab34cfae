// Body of the row gather behind batches taken from a training set held in backend memory
// (train/device_batches.h): pure data movement, so the CPU tests compare it bit for bit.
#pragma once
#include <cstdint>

#include "model/host_device.h"

namespace ds::model::kernels {

// Element i of the gathered rows: row i / row_size of dst comes from src row index[i / row_size]
// (a row number held as a float, exact below 2^24).
DS_HOST_DEVICE inline void gather_row_at(int64_t i, int64_t row_size, const float* index, const float* src,
                                         float* dst) {
  const int64_t r = i / row_size, k = i % row_size;
  dst[i] = src[int64_t(index[r]) * row_size + k];
}

// The step's mean loss into the epoch's device accumulator: acc[0] += (sum / valid) * weight
// (nothing when valid is 0: a batch without observed targets has loss 0) and acc[1] = step the
// first time the mean is not finite (acc[1] < 0 until then). The same double arithmetic as the
// host's `loss_sum += loss * rows`, so the CPU and the per-step path agree bit for bit.
DS_HOST_DEVICE inline void accumulate_mean_loss(double sum, int64_t valid, double weight, int64_t step, double* acc) {
  const double mean = valid > 0 ? sum / double(valid) : 0.0;
  const bool finite = mean - mean == 0.0;  // false for NaN and +-Inf (no <cmath> in device code)
  if (!finite && acc[1] < 0) acc[1] = double(step);
  acc[0] += mean * weight;
}

}  // namespace ds::model::kernels
