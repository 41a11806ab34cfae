// Finiteness checks of what a stage read from the training store: a NaN or Inf there (a bit
// flip, an edited file) would otherwise train NaN weights, or pass through a network's ReLUs as
// a plausible value. The InputError names the store, split, date (row) and channel or point.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "io/training_store.h"

namespace ds {

// The check train's read_batch makes of the rows it read (x: rows.size() samples, y likewise):
// InputError naming the store, the split, the date and the point of the first NaN/Inf in x or
// Inf in y (y is NaN where not observed, never infinite).
void check_finite_rows(const StoreReader& store, const std::string& split, const std::vector<size_t>& rows,
                       const float* x, const float* y);

// The same check of x alone for the consecutive rows [first, first + n): predict's reads of the
// test split and of the training days its wet-day thresholds need; evaluate's linear baseline.
// A NaN predictor does not always give a NaN output (a ReLU maps it to 0), so a check of the
// output cannot stand in for it.
void check_finite_x(const StoreReader& store, const std::string& split, size_t first, size_t n, const float* x);

}  // namespace ds
