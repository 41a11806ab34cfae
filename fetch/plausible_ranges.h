// Physically plausible values of the standard variables: what fetch records in the manifest for
// each field and preprocess (and predict's new predictors) check every value against, so that a
// field in the wrong unit under the right label (temperature in degC labelled K), a single 1e30,
// negative precipitation or a bit flip stops the run instead of training on it.
#pragma once
#include <cmath>
#include <string>

#include "fetch/dataset.h"

namespace ds {

struct ValueRange {
  double min = NAN, max = NAN;
  bool known() const { return std::isfinite(min) && std::isfinite(max); }
};

// The default range of a standard variable in standard_units(var); unknown for other variables.
ValueRange default_range(const std::string& var);

// The range of a field of `var` written in `units`: the dataset definition's `ranges:` entry
// (already in the written unit), else the default converted from standard_units(var) through
// udunits2; unknown when neither applies (a variable without a default, a unit udunits cannot
// relate to the standard one).
ValueRange plausible_range(const DatasetVariable& def, const std::string& var, const std::string& units);

}  // namespace ds
