// Standardization of predictors per grid box with training-period statistics, as climate4R's
// scaleGrid(type = "standardize") does: z = (x - mean) / sd, where mean and sd come from the
// training years only and sd is the sample standard deviation (n - 1 in the denominator, R's sd()).
// The same statistics are stored with the data and reused by `predict`.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace ds {

struct Standardization {
  std::vector<float> mean, sd;  // one per value of a field (channel x lat x lon)
};

// fields: ntime fields of `field_size` values each, time-major. `use` marks the times that enter
// the statistics (the training years). Accumulates in double. A box whose sd is 0 (a constant
// field) gets sd = 1 so it standardizes to 0 rather than NaN.
Standardization fit_standardization(const std::vector<float>& fields, size_t field_size, const std::vector<bool>& use);

// Training statistics fed a block of days at a time, so no field is ever held whole. Per box it
// keeps the count, mean and sum of squared deviations (M2) in double; a block's own mean and M2
// come from two passes over the block and are merged with Chan et al.'s pairwise update
//   n = na + nb,  mean = ma + d nb / n,  M2 = M2a + M2b + d^2 na nb / n   (d = mb - ma),
// which avoids the cancellation of a running sum of squares. NaN values are skipped per box.
// Each call's days are merged kMergeDays at a time, so the statistics are the same bit for bit
// however the days are split into calls, as long as every call but the last holds a multiple of
// kMergeDays (preprocess's blocks are whole store chunks: preprocess.block_days must not change
// the store, whose statistics checkpoints are bound to).
class RunningStats {
 public:
  static constexpr size_t kMergeDays = 8;
  explicit RunningStats(size_t field_size);
  void add(const float* fields, size_t ntime);
  // Per box, or (per_field) one mean and sd over every box and day broadcast to all boxes.
  // sd = sqrt(M2 / (n - 1)); a constant box or field gets sd = 1. InputError naming `where` if a
  // box has fewer than 2 values.
  Standardization finish(bool per_field, const std::string& where) const;

 private:
  void merge(const float* fields, size_t ntime);  // one group of at most kMergeDays
  std::vector<double> n_, mean_, m2_;
};

// In place: x = (x - mean) / sd for every field.
void apply_standardization(const Standardization& s, std::vector<float>& fields);

}  // namespace ds
