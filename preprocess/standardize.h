// Standardization of predictors per grid box with training-period statistics, as climate4R's
// scaleGrid(type = "standardize") does: z = (x - mean) / sd, where mean and sd come from the
// training years only and sd is the sample standard deviation (n - 1 in the denominator, R's sd()).
// The same statistics are stored with the data and reused by `predict`.
#pragma once
#include <cstddef>
#include <vector>

namespace ds {

struct Standardization {
  std::vector<float> mean, sd;  // one per value of a field (channel x lat x lon)
};

// fields: ntime fields of `field_size` values each, time-major. `use` marks the times that enter
// the statistics (the training years). Accumulates in double. A box whose sd is 0 (a constant
// field) gets sd = 1 so it standardizes to 0 rather than NaN.
Standardization fit_standardization(const std::vector<float>& fields, size_t field_size, const std::vector<bool>& use);

// In place: x = (x - mean) / sd for every field.
void apply_standardization(const Standardization& s, std::vector<float>& fields);

}  // namespace ds
