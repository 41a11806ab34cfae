#include "fetch/dataset.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "fetch/redact.h"
#include "io/units.h"
#include "io/error.h"
#include "io/dataset_definition.h"

namespace ds {

namespace fs = std::filesystem;

std::string standard_units(const std::string& var) {
  static const std::map<std::string, std::string> units = {
      {"z", "m2 s-2"}, {"hus", "kg kg-1"}, {"ta", "K"}, {"ua", "m s-1"}, {"va", "m s-1"}, {"pr", "mm/day"},
      {"psl", "Pa"}, {"tas", "K"}};
  const auto it = units.find(var);
  return it == units.end() ? "" : it->second;
}

std::string standard_name_for(const std::string& var, const std::string& units) {
  struct Name {
    const char *var, *standard_name, *canonical_units;  // as in the CF standard name table
  };
  static const Name names[] = {
      {"z", "geopotential", "m2 s-2"},
      {"hus", "specific_humidity", "1"},
      {"ta", "air_temperature", "K"},
      {"tas", "air_temperature", "K"},
      {"ua", "eastward_wind", "m s-1"},
      {"va", "northward_wind", "m s-1"},
      {"psl", "air_pressure_at_mean_sea_level", "Pa"},
      {"pr", "precipitation_flux", "kg m-2 s-1"},
      {"pr", "lwe_precipitation_rate", "m s-1"},
  };
  for (const Name& n : names)
    if (var == n.var && units_convertible(units, n.canonical_units)) return n.standard_name;
  return "";
}

std::string DatasetVariable::native_name(int level) const {
  std::string out = native;
  const auto at = out.find("{level}");
  if (at != std::string::npos) out.replace(at, 7, std::to_string(level));
  return out;
}

namespace {
void replace_all(std::string& s, const std::string& what, const std::string& with) {
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + with.size())) s.replace(at, what.size(), with);
}
}  // namespace

std::string DatasetVariable::url_for(const std::string& base, const std::string& var, int level, int year) const {
  if (url.empty()) return base;
  std::string u = url;
  replace_all(u, "{var}", var);
  replace_all(u, "{level}", std::to_string(level));
  replace_all(u, "{year}", std::to_string(year));
  // Absolute (a URL or a path from /): as is. Relative: below the base, one slash between.
  if (!is_below_source(u) || base.empty()) return u;
  return base.back() == '/' ? base + u : base + "/" + u;
}

DatasetVariable Dataset::variable(const std::string& var) const {
  if (variables.empty()) {
    DatasetVariable v;
    v.native = var;
    v.max_missing = 1;
    return v;
  }
  const auto it = variables.find(var);
  if (it != variables.end()) return it->second;
  std::string have;
  for (const auto& [k, _] : variables) have += (have.empty() ? "" : ", ") + k;
  throw UsageError(file + ": dataset '" + name + "' defines no variable '" + var + "' (it defines: " + have + ")");
}

namespace {

// The dataset's url with its placeholders filled: {definition_dir}, the folder of the definition
// file (for data that ships beside it, whatever the working folder), and {synth.dir}, the run
// config's synth.dir (where `downscale synth` wrote the synthetic sources). A relative path
// otherwise stays relative to the working folder, as run.dir and fetch.<side>.source are.
std::string fill_url(const std::string& url, const std::string& file, const std::string& synth_dir) {
  std::string out = url;
  const fs::path dir = fs::path(file).parent_path();
  replace_all(out, "{definition_dir}", dir.empty() ? "." : dir.string());
  replace_all(out, "{synth.dir}", synth_dir);
  if (const auto open = out.find('{'); open != std::string::npos)
    throw UsageError(file + ": key 'url' has the unknown placeholder '" + out.substr(open, out.find('}', open) + 1 - open) +
                     "' (known: {definition_dir}, {synth.dir})");
  if (out != url && out.find("://") == std::string::npos) out = fs::path(out).lexically_normal().string();
  return out;
}

template <class T>
T get(const YAML::Node& n, const std::string& key, const std::string& where, T fallback) {
  if (!n[key] || n[key].IsNull()) return fallback;
  try {
    return n[key].as<T>();
  } catch (const YAML::Exception&) {
    throw UsageError(where + ": key '" + key + "' has a value of the wrong type");
  }
}

void check_keys(const YAML::Node& n, const std::set<std::string>& known, const std::string& where) {
  for (auto it = n.begin(); it != n.end(); ++it) {
    const std::string k = it->first.as<std::string>();
    if (!known.count(k)) throw UsageError(where + ": unknown key '" + k + "'");
  }
}

}  // namespace

Dataset load_dataset(const std::string& name_or_path, const std::string& config_file, const std::string& synth_dir,
                     const std::string& origin) {
  Dataset d;
  d.file = find_dataset_definition(name_or_path, config_file, origin);
  YAML::Node root;
  try {
    root = YAML::LoadFile(d.file);
  } catch (const YAML::Exception& e) {
    throw UsageError(d.file + ": line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (!root.IsMap()) throw UsageError(d.file + ": a dataset definition is a mapping (name, url, time_step, variables)");
  check_keys(root, {"name", "url", "time_step", "variables", "ranges"}, d.file);
  d.name = get<std::string>(root, "name", d.file, name_or_path);
  const std::string url = get<std::string>(root, "url", d.file, "");
  d.synthetic = url.find("{synth.dir}") != std::string::npos;
  d.url = fill_url(url, d.file, synth_dir);
  d.url_origin = d.file + ": url '" + redact_credentials(url) + "'";
  d.time_step = get<std::string>(root, "time_step", d.file, "day");
  if (d.time_step != "day")
    throw UsageError(d.file + ": key 'time_step' is '" + d.time_step + "'; fetch reads daily data only (day)");
  const YAML::Node vars = root["variables"];
  if (!vars || !vars.IsMap() || vars.size() == 0) throw UsageError(d.file + ": key 'variables' must list the variables");
  for (auto it = vars.begin(); it != vars.end(); ++it) {
    const std::string var = it->first.as<std::string>();
    const std::string where = d.file + ": variables." + var;
    const YAML::Node n = it->second;
    if (!n.IsMap()) throw UsageError(where + ": expected {native, url, units, scale, offset, std_units, max_missing}");
    check_keys(n, {"native", "url", "units", "scale", "offset", "std_units", "max_missing"}, where);
    DatasetVariable v;
    v.native = get<std::string>(n, "native", where, var);
    v.url = get<std::string>(n, "url", where, "");
    if (n["units"] && n["units"].IsSequence()) v.units = get<std::vector<std::string>>(n, "units", where, {});
    else if (n["units"]) v.units = {get<std::string>(n, "units", where, "")};
    v.scale = get<double>(n, "scale", where, 1.0);
    v.offset = get<double>(n, "offset", where, 0.0);
    const bool identity = v.scale == 1 && v.offset == 0;
    const std::string std_units = get<std::string>(n, "std_units", where, "");
    // Without units, a variable converted by udunits alone is written in its standard unit.
    if (v.units.empty() && identity) {
      const std::string target = std_units.empty() ? standard_units(var) : std_units;
      if (!target.empty()) v.units = {target};
    }
    // A scale or offset changes the unit: without std_units it is taken to give the variable's
    // standard unit; a variable without one would be labelled with the source's unit over
    // converted values (rsds in W m-2 scaled to MJ m-2 day-1, written as W m-2).
    if (!identity && std_units.empty() && standard_units(var).empty())
      throw UsageError(where + ": key '" + (v.scale != 1 ? "scale" : "offset") + "' converts the values, but '" + var +
                       "' has no standard unit to label them with: give std_units (the unit after the conversion)");
    v.std_units = !std_units.empty() ? std_units : identity ? v.target_units() : standard_units(var);
    if (v.std_units.empty()) v.std_units = v.target_units();
    for (const auto& u : v.units)
      if (!units_known(u)) throw UsageError(where + ": units '" + u + "' are not a unit udunits2 knows");
    v.max_missing = get<double>(n, "max_missing", where, 0.0);
    if (v.max_missing < 0 || v.max_missing > 1) throw UsageError(where + ": key 'max_missing' must be in 0..1");
    if (v.scale == 0) throw UsageError(where + ": key 'scale' must not be 0");
    d.variables[var] = v;
  }
  // ranges: {var: [min, max]} in the variable's written unit, overriding fetch/plausible_ranges.cpp.
  if (const YAML::Node ranges = root["ranges"]) {
    if (!ranges.IsMap()) throw UsageError(d.file + ": key 'ranges' must map variables to [min, max]");
    for (auto it = ranges.begin(); it != ranges.end(); ++it) {
      const std::string var = it->first.as<std::string>(), where = d.file + ": ranges." + var;
      const auto v = d.variables.find(var);
      if (v == d.variables.end()) throw UsageError(where + ": not a variable of this dataset (variables lists them)");
      const auto r = get<std::vector<double>>(ranges, var, where, {});
      if (r.size() != 2 || !std::isfinite(r[0]) || !std::isfinite(r[1]) || !(r[0] < r[1]))
        throw UsageError(where + ": expected [min, max] with min < max, in the variable's units (" + v->second.std_units + ")");
      v->second.range_min = r[0];
      v->second.range_max = r[1];
    }
  }
  return d;
}

Dataset passthrough_dataset(const std::string& source) {
  Dataset d;
  d.name = "(no dataset definition)";
  d.url = source;
  return d;
}

}  // namespace ds
