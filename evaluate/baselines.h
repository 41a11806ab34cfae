// The reference methods every downscaling method is compared with, computed by `evaluate` from
// the same training store so a user sees what the CNN adds:
//   climatology  each grid box's training-period mean, every day
//   linear       ridge regression of each grid box's precipitation on the leading principal
//                components of the standardized predictors (the linear model of the VALUE
//                intercomparison on the same inputs), clipped at 0 mm for precipitation
// Both in the observations' own units (the store's predictand_units: mm/day, degC, K).
#pragma once
#include <vector>

#include "io/training_store.h"

namespace ds {

// Each grid box's mean of the observations over the training days (point), in predictand_units;
// NaN on boxes never observed. Read a block of days at a time: North America's 8766 training
// days are 0.86 GB.
std::vector<float> training_box_means(const StoreReader& store);

// (time, point) in predictand_units for the days of `split`: training_box_means every day.
std::vector<float> climatology_baseline(const StoreReader& store, const std::string& split);

struct LinearBaselineOptions {
  int components = 20;     // principal components of the predictors
  double ridge = 1.0;      // penalty on the standardized component scores
  int iterations = 6;      // subspace iterations for the components
  size_t block_bytes = size_t(64) << 20;  // the store is read in blocks of days of about this size
};
std::vector<float> linear_baseline(const StoreReader& store, const std::string& split, const LinearBaselineOptions& opt);

}  // namespace ds
