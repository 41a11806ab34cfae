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

// (time, point) in predictand_units for the days of `split`; NaN on boxes never observed.
std::vector<float> climatology_baseline(const StoreReader& store, const std::string& split);

struct LinearBaselineOptions {
  int components = 20;     // principal components of the predictors
  double ridge = 1.0;      // penalty on the standardized component scores
  int iterations = 6;      // subspace iterations for the components
};
std::vector<float> linear_baseline(const StoreReader& store, const std::string& split, const LinearBaselineOptions& opt);

}  // namespace ds
