// Checks of what a stage read from the training store: a NaN or Inf there (a bit flip, an
// edited file) would otherwise train NaN weights, or pass through a network's ReLUs as a
// plausible value; so would a finite predictor of 3e38, whose convolutions overflow into NaNs
// that the ReLUs map to 0. The InputError names the store, split, date (row) and channel or point.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "io/training_store.h"

namespace ds {

// A standardized predictor further than this from the training mean, in training standard
// deviations, is no weather: preprocess only stores values inside the plausible ranges, and a
// GCM's warmest scenario puts its predictors tens of standard deviations out at the most
// (predict warns from 10, NewPredictors::kFarOutside). What lies beyond is a corrupt store or
// a field in units the ranges let through, and the network's output from it means nothing.
constexpr float kImpossibleStandardized = 1000;

// The check train's read_batch makes of the rows it read (x: rows.size() samples): InputError
// naming the store, the split, the date and the point of the first NaN/Inf or impossible value
// (kImpossibleStandardized). y needs none here: StoreReader::read_y checks every value it reads
// (check_recorded_range below).
void check_sane_rows(const StoreReader& store, const std::string& split, const std::vector<size_t>& rows,
                     const float* x);

// The same check of x alone for the consecutive rows [first, first + n): predict's reads of the
// test split and of the training days its wet-day thresholds need; evaluate's linear baseline.
// A NaN predictor does not always give a NaN output (a ReLU maps it to 0), so a check of the
// output cannot stand in for it.
void check_sane_x(const StoreReader& store, const std::string& split, size_t first, size_t n, const float* x);

// The check StoreReader makes of every y and obs it reads (`field` "y" or "obs", the consecutive
// rows [first, first + n)): each value NaN (not observed) or inside the range preprocess recorded
// (StoreMeta::y_min/y_max, obs_min/obs_max); never infinite, in older stores that recorded none.
void check_recorded_range(const StoreReader& store, const std::string& split, const char* field, size_t first, size_t n,
                          const float* values);

}  // namespace ds
