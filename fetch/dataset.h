// Dataset definitions, as climate4R's dictionaries: where a dataset lives (its OPeNDAP URL,
// which moves every few years, so it is configuration, not code) and, for every standard
// variable, how the dataset stores it: the native name (ERA-Interim on UDG keeps one variable
// per level, "Z500"; other datasets have a level dimension), its own file when the archive keeps
// one file per variable (CMIP, NCEP: a url template with {var}, {level}, {year}), the unit it
// is written in (the source's units attribute is converted to it through udunits2), and a
// scale and offset for what udunits cannot do (kg m-2 s-1 of water to mm/day). Shipped
// definitions live in configs/datasets/*.yaml (format in configs/datasets/README.md).
#pragma once
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "io/config.h"

namespace ds {

// The standard units `fetch` writes for the standard variables (climate4R's vocabulary):
// z m2 s-2, hus kg kg-1, ta K, ua/va m s-1, pr mm/day. Empty for an unknown variable.
std::string standard_units(const std::string& var);

// The CF standard name of standard variable `var` written in `units`: the name of the quantity
// whose canonical units `units` convert to (udunits2), so that pr is precipitation_flux in
// kg m-2 s-1 and lwe_precipitation_rate (the depth of liquid water per time) in mm/day. "" for a
// variable outside the vocabulary or units of another dimension.
std::string standard_name_for(const std::string& var, const std::string& units);

struct DatasetVariable {
  std::string native;        // name in the source; "{level}" is replaced by the level in hPa
  // This variable's own file: a url template with {var} (the standard name), {level} (hPa) and
  // {year} (calendar year: one file per year); relative to the dataset's url. Empty: the
  // dataset's url.
  std::string url;
  // The unit the source is converted to (udunits2) before scale/offset; with identity scale and
  // offset, the unit written. Further entries are older spellings, kept for the record (udunits
  // accepts them all). Empty: the source is not converted.
  std::vector<std::string> units;
  double scale = 1, offset = 0;  // written = converted * scale + offset (after unpacking)
  std::string std_units;     // units written: `units` when scale/offset are the identity, else
                             // standard_units(var)
  double max_missing = 0;    // largest share of missing values a chunk may hold (0..1)
  // Plausible values in std_units from the definition's `ranges:` map (NaN: the default of
  // fetch/plausible_ranges.h applies).
  double range_min = NAN, range_max = NAN;
  bool range_known() const { return std::isfinite(range_min) && std::isfinite(range_max); }

  // The native variable name for a level (hPa; 0 for a single-level variable).
  std::string native_name(int level) const;
  // The unit the source is converted to ("" : none).
  std::string target_units() const { return units.empty() ? "" : units.front(); }
  // True when the level is part of the name, so the source has no level dimension to cut.
  bool level_in_name() const { return native.find("{level}") != std::string::npos; }
  // True when the file holds one level (its url names it).
  bool level_in_url() const { return url.find("{level}") != std::string::npos; }
  // True when the archive keeps one file per calendar year.
  bool year_in_url() const { return url.find("{year}") != std::string::npos; }
  // The file holding `var` at `level` (hPa, 0: none) in calendar `year`: this variable's url
  // with its placeholders filled, resolved against `base` (the dataset's url, or the run
  // config's `source`, taken as a folder or server address), or `base` itself when the variable
  // has no url of its own.
  std::string url_for(const std::string& base, const std::string& var, int level, int year) const;
  // Whether `url` is read below the dataset's url (its source): neither a URL ("://") nor a path
  // from '/'. url_for and the check that a source is a folder must agree on it.
  static bool is_below_source(const std::string& url) {
    return !url.empty() && url.find("://") == std::string::npos && url.front() != '/';
  }
};

struct Dataset {
  std::string name;          // for messages
  std::string file;          // the definition's path ("" for the built-in pass-through)
  std::string url;           // OPeNDAP URL or local path; with per-variable urls, their base
                             // (placeholders filled; a relative path is read from the working folder)
  std::string url_origin;    // where url was set, for messages: "<file>: url", or the config key
  bool synthetic = false;    // url is below synth.dir: `downscale synth` writes the source
  std::string time_step = "day";
  std::map<std::string, DatasetVariable> variables;

  // The definition of a standard variable. A dataset without any variable listed (the
  // pass-through) maps every variable to itself, unconverted. Throws UsageError naming the
  // definition file and the variable otherwise.
  DatasetVariable variable(const std::string& var) const;
};

// Loads a dataset definition given by name (looked up as <config folder>/datasets/<name>.yaml,
// then configs/datasets/<name>.yaml under the working folder, then the shipped ones) or by path.
// Its url's placeholders are filled: {definition_dir} (the definition file's folder) and
// {synth.dir} (`synth_dir`, the run config's synth.dir). Errors (UsageError) name the file and
// key; unknown keys are errors, as in the run config. `origin`: where the name was set (the
// config file, or the --set that gave it), which a definition not found is blamed on; "": the file.
Dataset load_dataset(const std::string& name_or_path, const std::string& config_file,
                     const std::string& synth_dir = Config::Synth().dir, const std::string& origin = "");

// The pass-through dataset used when the run config names only a source: every variable under
// its own name, no unit check, no conversion.
Dataset passthrough_dataset(const std::string& source);

}  // namespace ds
