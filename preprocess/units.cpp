#include "preprocess/units.h"

#include "io/error.h"

namespace ds {

namespace {

// The spellings ERA-Interim-like sources use, CF's canonical one first.
const std::map<std::string, std::vector<std::string>>& builtin_units() {
  static const std::vector<std::string> geopotential{"m2 s-2", "m**2 s**-2", "m2/s2", "m^2/s^2"};
  static const std::vector<std::string> humidity{"kg kg-1", "kg kg**-1", "kg/kg", "1"};
  static const std::vector<std::string> temperature{"K", "k", "kelvin"};
  static const std::vector<std::string> wind{"m s-1", "m s**-1", "m/s"};
  static const std::map<std::string, std::vector<std::string>> m{
      {"z", geopotential}, {"hus", humidity}, {"q", humidity}, {"ta", temperature}, {"t", temperature},
      {"ua", wind},        {"u", wind},       {"va", wind},    {"v", wind}};
  return m;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "'" : ", '") + x + "'";
  return s;
}

}  // namespace

void check_predictor_units(const std::vector<PredictorUnits>& fields, const std::map<std::string, std::string>& expected) {
  std::map<std::string, const PredictorUnits*> first_of_var;
  for (const auto& f : fields) {
    std::vector<std::string> accepted;
    if (auto e = expected.find(f.var); e != expected.end()) accepted = {e->second};
    else if (auto b = builtin_units().find(f.var); b != builtin_units().end()) accepted = b->second;
    if (!accepted.empty()) {
      bool ok = false;
      for (const auto& a : accepted) ok = ok || a == f.units;
      if (!ok)
        throw InputError(f.where + ": units '" + f.units + "' but " + f.name + " is expected in " + join(accepted) +
                         " (set preprocess.units." + f.var + " if the source's units are intended)");
      continue;  // any accepted spelling means the same units, so levels agree
    }
    auto [it, fresh] = first_of_var.emplace(f.var, &f);
    if (!fresh && it->second->units != f.units)
      throw InputError(f.where + ": units '" + f.units + "' differ from " + it->second->where + ": '" + it->second->units +
                       "' (every level of " + f.var + " must be in the same units)");
  }
}

}  // namespace ds
