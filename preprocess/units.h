// Predictor units, checked before any number is computed: a geopotential in m (height) instead
// of m2 s-2, or one level in different units from the others, would standardize to plausible
// numbers and silently train a different model.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace ds {

struct PredictorUnits {
  std::string name;   // "z@500"
  std::string var;    // "z": the part of the name before '@'
  std::string units;  // as the file says
  std::string where;  // "file: variable 'z'", for the error
};

// Throws InputError if a predictor's units are not an accepted spelling for its variable
// (built in for z, hus/q, ta/t, ua/u, va/v; `expected` from preprocess.units replaces or adds
// one), or if levels of one variable without an expectation disagree.
void check_predictor_units(const std::vector<PredictorUnits>& fields, const std::map<std::string, std::string>& expected);

}  // namespace ds
