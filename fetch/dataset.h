// Dataset definitions, as climate4R's dictionaries: where a dataset lives (its OPeNDAP URL,
// which moves every few years, so it is configuration, not code) and, for every standard
// variable, how the dataset stores it: the native name (ERA-Interim on UDG keeps one variable
// per level, "Z500"; other datasets have a level dimension), the units it is stored in, and the
// scale and offset that turn it into the standard units `fetch` writes. Shipped definitions live
// in configs/datasets/*.yaml (format in configs/datasets/README.md).
#pragma once
#include <map>
#include <string>
#include <vector>

namespace ds {

// The standard units `fetch` writes for the standard variables (climate4R's vocabulary):
// z m2 s-2, hus kg kg-1, ta K, ua/va m s-1, pr mm/day. Empty for an unknown variable.
std::string standard_units(const std::string& var);

struct DatasetVariable {
  std::string native;        // name in the source; "{level}" is replaced by the level in hPa
  std::vector<std::string> units;  // units attribute the source may carry (spellings of one unit);
                                   // empty: not checked
  double scale = 1, offset = 0;  // standard = native * scale + offset (after unpacking)
  std::string std_units;     // units written; defaults to standard_units(var), else `units`
  double max_missing = 0;    // largest share of missing values a chunk may hold (0..1)

  // The native variable name for a level (hPa; 0 for a single-level variable).
  std::string native_name(int level) const;
  bool accepts_units(const std::string& u) const;
  // True when the level is part of the name, so the source has no level dimension to cut.
  bool level_in_name() const { return native.find("{level}") != std::string::npos; }
};

struct Dataset {
  std::string name;          // for messages
  std::string file;          // the definition's path ("" for the built-in pass-through)
  std::string url;           // OPeNDAP URL or local path
  std::string time_step = "day";
  std::map<std::string, DatasetVariable> variables;

  // The definition of a standard variable. A dataset without any variable listed (the
  // pass-through) maps every variable to itself, unconverted. Throws UsageError naming the
  // definition file and the variable otherwise.
  DatasetVariable variable(const std::string& var) const;
};

// Loads a dataset definition given by name (looked up as <config folder>/datasets/<name>.yaml,
// then configs/datasets/<name>.yaml under the working folder) or by path. Errors (UsageError)
// name the file and key; unknown keys are errors, as in the run config.
Dataset load_dataset(const std::string& name_or_path, const std::string& config_file);

// The pass-through dataset used when the run config names only a source: every variable under
// its own name, no unit check, no conversion.
Dataset passthrough_dataset(const std::string& source);

}  // namespace ds
