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
// The days are merged in groups of kMergeDays counted from the first day, whatever the calls
// (a short call's days wait in a buffer), so the statistics are the same bit for bit however
// the days are split into calls: preprocess.block_days must not change the store, whose
// statistics checkpoints are bound to. 128 is the block preprocess merged by before (its default
// block_days), so a store rebuilt with the defaults keeps its identity and its models.
class RunningStats {
 public:
  static constexpr size_t kMergeDays = 128;
  explicit RunningStats(size_t field_size);
  void add(const float* fields, size_t ntime);
  // Per box, or (per_field) one mean and sd over every box and day broadcast to all boxes.
  // sd = sqrt(M2 / (n - 1)); a constant box or field gets sd = 1. InputError naming `where` if a
  // box has fewer than 2 values. Merges the days still buffered first.
  Standardization finish(bool per_field, const std::string& where);

 private:
  void merge(const float* fields, size_t ntime);  // one group
  std::vector<double> n_, mean_, m2_;
  std::vector<float> pending_;  // the days of the group being gathered, fewer than kMergeDays
};

// In place: x = (x - mean) / sd for every field.
void apply_standardization(const Standardization& s, std::vector<float>& fields);

}  // namespace ds
