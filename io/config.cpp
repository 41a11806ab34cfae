#include "io/config.h"
#include "io/suggest.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <type_traits>

#include "io/atomic_file.h"
#include "io/config_validate.h"
#include "io/error.h"
#include "io/read_file.h"

namespace ds {

FieldRequest FieldRequest::parse(const std::string& text, const std::string& where) {
  const auto at = text.find('@');
  FieldRequest f;
  auto is_name = [](const std::string& v) {
    if (v.empty() || !(std::isalpha(static_cast<unsigned char>(v[0])) || v[0] == '_')) return false;
    for (char ch : v)
      if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-')) return false;
    return true;
  };
  try {
    if (at == std::string::npos) {  // a surface or single-level field: "psl"
      if (!is_name(text)) throw std::invalid_argument("");
      f.var = text;
      return f;
    }
    if (!is_name(text.substr(0, at))) throw std::invalid_argument("");
    f.var = text.substr(0, at);
    size_t used = 0;
    f.level = std::stoi(text.substr(at + 1), &used);
    if (used != text.size() - at - 1 || f.level <= 0) throw std::invalid_argument("");
  } catch (const std::logic_error&) {
    throw UsageError(where + ": predictor '" + text + "' is not 'var@level' (for example z@500) or a variable alone (psl)");
  }
  return f;
}

std::string Config::Preprocess::split_years_text() const {
  if (train_years.empty() && validation_years.empty() && test_years.empty()) return "";
  std::string out;
  const std::pair<const char*, const YearRange*> splits[] = {
      {"train", &train_years}, {"validation", &validation_years}, {"test", &test_years}};
  for (const auto& [name, y] : splits)
    out += (out.empty() ? "" : ", ") + std::string(name) + " " +
           (y->empty() ? "none" : std::to_string(y->first) + ".." + std::to_string(y->last));
  return out;
}

int GridSpec::nlon() const { return static_cast<int>(std::lround((lon_last - lon_first) / step)) + 1; }
int GridSpec::nlat() const { return static_cast<int>(std::lround((lat_last - lat_first) / step)) + 1; }

namespace {

std::string origin_of(const std::string& key, const std::map<std::string, std::string>& overrides, const std::string& file) {
  for (std::string k = key;;) {
    const auto it = overrides.find(k);
    if (it != overrides.end()) return "--set " + it->second;
    const auto dot = k.rfind('.');
    if (dot == std::string::npos) break;
    k.resize(dot);
  }
  // A key below `key` set on the command line made it (`--set fetch.predictor.fields=...` makes
  // the unknown section 'fetch.predictor'): that --set, not the file, is the one to blame.
  const auto below = overrides.lower_bound(key + ".");
  if (below != overrides.end() && below->first.rfind(key + ".", 0) == 0) return "--set " + below->second;
  return file;
}

// Reads typed values by dotted key and remembers which keys were read, so that whatever is left
// over in the document can be reported as unknown.
class Reader {
 public:
  Reader(YAML::Node root, std::string file, std::map<std::string, std::string> overridden)
      : root_(std::move(root)), file_(std::move(file)), overridden_(std::move(overridden)) {}

  template <class T>
  void get(const std::string& key, T& out) {
    known_.insert(key);
    YAML::Node n = find(key);
    if (!n || n.IsNull()) return;  // keep the default
    try {
      out = n.as<T>();
    } catch (const YAML::Exception&) {
      // A whole number too large (or negative, for a count) for the key is no type error: say
      // its range (train.seed=-1, train.batch_size=2147483648 read as "the wrong type").
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        double v = NAN;
        try {
          v = n.as<double>();
        } catch (const YAML::Exception&) {
        }
        if (std::isfinite(v) && v == std::floor(v))
          throw UsageError(origin(key) + ": key '" + key + "' is " + dump(n) + ", outside the whole numbers it takes (" +
                           std::to_string(std::numeric_limits<T>::min()) + " to " +
                           std::to_string(std::numeric_limits<T>::max()) + ")");
      }
      throw UsageError(origin(key) + ": key '" + key + "' has a value of the wrong type: " + dump(n) + " (expected " +
                       expected<T>() + ")");
    }
  }

  // A section written `null` (`fetch.predictand: null`, or `--set fetch.predictand=null` to
  // drop a predictand the file gives): known, and empty.
  bool is_null_section(const std::string& key) {
    YAML::Node n = find(key);
    if (!n || !n.IsNull()) return false;
    known_.insert(key);
    return true;
  }

  void get_years(const std::string& key, YearRange& out) {
    std::vector<int> v;
    get(key, v);
    if (!find(key) || find(key).IsNull()) return;
    if (v.empty()) { out = YearRange{0, -1}; return; }
    if (v.size() != 2 || v[1] < v[0])
      throw UsageError(origin(key) + ": key '" + key + "' must be [first_year, last_year], got " + dump(find(key)));
    out = YearRange{v[0], v[1]};
  }

  void get_pair(const std::string& key, double& lo, double& hi) {
    std::vector<double> v;
    get(key, v);
    if (!find(key) || find(key).IsNull()) return;
    if (v.size() != 2 || v[1] < v[0])
      throw UsageError(origin(key) + ": key '" + key + "' must be [min, max], got " + dump(find(key)) +
                       (key == "fetch.lon" && v.size() == 2 && v[0] > 0 && v[1] < 0
                            ? " (a box across the antimeridian goes past 180: [" + fmt::format("{}", v[0]) + ", " +
                                  fmt::format("{}", v[1] + 360) + "])"
                            : ""));
    lo = v[0];
    hi = v[1];
  }

  // A key that moved: present under its old name is an error saying where it went.
  void renamed(const std::string& old_key, const std::string& new_key) {
    if (find(old_key))
      throw UsageError(origin(old_key) + ": key '" + old_key + "' was renamed " + new_key);
  }

  // Returns whether the grid is in the document (an absent one keeps `g`'s default).
  bool get_grid(const std::string& key, GridSpec& g) {
    const bool present = find(key) && !find(key).IsNull();
    // A given grid gives all three: a missing one would be GridSpec's default (lon 0..0, step 1),
    // a grid nobody asked for, which preprocess would use without a word.
    if (present)
      for (const char* part : {"lon", "lat", "step"})
        if (!has(key + "." + part)) {
          // A misspelt part ('stpe') is why, more often than a forgotten one: name what is there.
          std::string others;
          if (const YAML::Node g = find(key); g.IsMap())
            for (const auto& kv : g) {
              const std::string k = kv.first.as<std::string>();
              if (k != "lon" && k != "lat" && k != "step") others += (others.empty() ? "" : ", ") + ("'" + k + "'");
            }
          throw UsageError(origin(key) + ": key '" + key + "' gives no " + part + ": a grid is {lon: [first, last], "
                           "lat: [first, last], step} (degrees)" + (others.empty() ? "" : "; it gives " + others));
        }
    get_pair(key + ".lon", g.lon_first, g.lon_last);
    get_pair(key + ".lat", g.lat_first, g.lat_last);
    get(key + ".step", g.step);
    if (!(g.step > 0)) throw UsageError(origin(key + ".step") + ": key '" + key + ".step' must be positive");
    return present;
  }

  // Every key read so far that the file or a --set gives a value (Config::given).
  std::set<std::string> given() const {
    std::set<std::string> out;
    for (const auto& k : known_)
      if (has(k)) out.insert(k);
    return out;
  }

  // Whether the file or a --set gives `key` a value (not only its default).
  bool has(const std::string& key) const {
    const YAML::Node n = find(key);
    return n.IsDefined() && !n.IsNull();  // `lon:` alone is no value (get_pair keeps the default)
  }

  // Where the value of `key` came from, for messages: "--set key=value" when an override set it
  // (or a section above it: `--set preprocess.predictor_grid={...}`), else the config file.
  std::string origin(const std::string& key) const { return origin_of(key, overridden_, file_); }

  // Every leaf (or mapping) key present in the document but never read is an error.
  void check_unknown() const {
    std::vector<std::string> present;
    collect(root_, "", present);
    for (const auto& k : present) {
      if (known_.count(k)) continue;
      // A section given a value (`--set train=5`, `run: [1, 2]`): not a misspelling of itself.
      if (const std::string first = first_key_in(k); !first.empty())
        throw UsageError(origin(k) + ": '" + k + "' is a section, not a value: set its keys, e.g. '" + first + "'");
      std::string msg = origin(k) + ": unknown key '" + k + "'";
      // suggest only near misses, among the keys and the sections holding them (`trian:`)
      std::set<std::string> names = known_;
      for (const auto& kn : known_)
        for (auto dot = kn.find('.'); dot != std::string::npos; dot = kn.find('.', dot + 1)) names.insert(kn.substr(0, dot));
      std::string best = closest_name(k, std::vector<std::string>(names.begin(), names.end()));
      // No near miss: the same key in another section (`train.members` for predict.members).
      if (best.empty()) best = same_key_elsewhere(k);
      if (!best.empty()) msg += " (did you mean '" + best + "'?)";
      throw UsageError(msg);
    }
  }

 private:
  // The one known key, in another section, whose last part is `key`'s ('' if none or several);
  // for a key without a section, the one whose last part it is (`threads`: run.threads), unless
  // a section is named so too (a top-level `predictors:` is fetch.predictors as well as
  // predict.predictors).
  std::string same_key_elsewhere(const std::string& key) const {
    const auto dot = key.rfind('.');
    const std::string leaf = dot == std::string::npos ? "." + key : key.substr(dot);  // ".members"
    const auto ends_with_leaf = [&](const std::string& k) {
      return k.size() > leaf.size() && k.compare(k.size() - leaf.size(), leaf.size(), leaf) == 0;
    };
    std::string found;
    for (const auto& kn : known_) {
      if (dot == std::string::npos)
        for (auto d = kn.find('.'); d != std::string::npos; d = kn.find('.', d + 1))
          if (ends_with_leaf(kn.substr(0, d))) return "";
      if (!ends_with_leaf(kn)) continue;
      if (!found.empty()) return "";
      found = kn;
    }
    return found;
  }

  YAML::Node find(const std::string& key) const {
    // yaml-cpp's operator[] on a non-const node inserts; walk clones to keep the tree intact.
    YAML::Node n = YAML::Clone(root_);
    std::stringstream ss(key);
    std::string part;
    while (std::getline(ss, part, '.')) {
      if (!n.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
      YAML::Node child = n[part];
      if (!child) return YAML::Node(YAML::NodeType::Undefined);
      n = child;
    }
    return n;
  }

  // The first known key inside `section` ("" when none: `section` is no section).
  std::string first_key_in(const std::string& section) const {
    const auto it = known_.lower_bound(section + ".");
    return it != known_.end() && it->rfind(section + ".", 0) == 0 ? *it : "";
  }

  void collect(const YAML::Node& n, const std::string& prefix, std::vector<std::string>& out) const {
    for (auto it = n.begin(); it != n.end(); ++it) {
      const std::string k = prefix.empty() ? it->first.as<std::string>() : prefix + "." + it->first.as<std::string>();
      // A mapping is a section unless some reader asked for the whole mapping by name.
      if (it->second.IsMap() && !known_.count(k) && !first_key_in(k).empty()) {
        collect(it->second, k, out);
        continue;
      }
      out.push_back(k);
    }
  }


  // What a value of type T looks like in YAML, for the wrong-type message.
  template <class T>
  static std::string expected() {
    if constexpr (std::is_same_v<T, bool>) return "true or false";
    else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>) return "a whole number, 0 or more";
    else if constexpr (std::is_integral_v<T>) return "a whole number";
    else if constexpr (std::is_floating_point_v<T>) return "a number";
    else if constexpr (std::is_same_v<T, std::string>) return "a single value";
    else if constexpr (std::is_same_v<T, std::vector<int>>) return "a list of whole numbers, e.g. [2000, 2004]";
    else if constexpr (std::is_same_v<T, std::vector<double>>) return "a list of numbers, e.g. [-10, 5]";
    else if constexpr (std::is_same_v<T, std::vector<std::string>>) return "a list, e.g. [a, b]";
    else if constexpr (std::is_same_v<T, std::map<std::string, std::string>>) return "a mapping, e.g. {key: value}";
    else return "another type";
  }

  static std::string dump(const YAML::Node& n) {
    YAML::Emitter e;
    e << YAML::Flow << n;
    return e.c_str();
  }

  YAML::Node root_;
  std::string file_;
  std::map<std::string, std::string> overridden_;  // key -> the whole "key=value" as given
  std::set<std::string> known_;
};

// yaml-cpp keeps both pairs of a key written twice in one mapping and reads the first, so a
// second `epochs:` further down a long file would be ignored without a word: refuse it, naming
// both lines.
// `visited`: the collections walked, by their offset in the file (two may share one: a map and
// its first key), each compared by identity. An alias (*a) is its anchor's node: walked once, not
// once per reference (nested aliases, "billion laughs", took minutes to walk, deaf to SIGTERM).
void check_duplicate_keys(const YAML::Node& n, const std::string& prefix, const std::string& file,
                          std::multimap<int, YAML::Node>& visited) {
  if (!n.IsSequence() && !n.IsMap()) return;
  const auto [first, last] = visited.equal_range(n.Mark().pos);
  for (auto it = first; it != last; ++it)
    if (it->second.is(n)) return;
  visited.emplace(n.Mark().pos, n);
  if (n.IsSequence()) {
    for (const auto& item : n) check_duplicate_keys(item, prefix, file, visited);
    return;
  }
  std::map<std::string, int> seen;  // key -> its first line
  for (auto it = n.begin(); it != n.end(); ++it) {
    const std::string k = it->first.Scalar();
    const std::string dotted = prefix.empty() ? k : prefix + "." + k;
    const int line = it->first.Mark().line + 1;
    const auto [first, inserted] = seen.emplace(k, line);
    if (!inserted)
      throw UsageError(file + ": line " + std::to_string(line) + ": key '" + dotted + "' is given twice (first on line " +
                       std::to_string(first->second) + ")");
    check_duplicate_keys(it->second, dotted, file, visited);
  }
}

void apply_override(YAML::Node& root, const std::string& assignment, const std::string& file,
                    std::map<std::string, std::string>& keys, std::vector<std::string>& replaced) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UsageError("--set " + assignment + ": expected key=value");
  const std::string key = assignment.substr(0, eq);
  YAML::Node value;
  try {
    value = YAML::Load(assignment.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    // `--set fetch.years=[2000, 2001]` unquoted reaches us cut at the space: say so.
    const std::string v = assignment.substr(eq + 1);
    const bool cut = !v.empty() && (v.front() == '[' || v.front() == '{') && (v.back() == ',' || v.back() == ':');
    throw UsageError("--set " + assignment + ": cannot parse the value of key '" + key + "': " + e.msg +
                     (cut ? " (a value with spaces is one shell word only when quoted: --set '" + key + "=" + v +
                                " ...')"
                          : ""));
  }
  std::vector<std::string> parts;
  std::stringstream ss(key);
  for (std::string p; std::getline(ss, p, '.');) parts.push_back(p);
  // Walk down with node references; create missing sections so unknown keys surface as such.
  std::function<void(YAML::Node, size_t)> set = [&](YAML::Node n, size_t i) {
    if (i + 1 == parts.size()) { n[parts[i]] = value; return; }
    // A value on the way down (`--set run.dir.x=1`, run.dir a path) has no keys: made a section,
    // it was refused later as a value of the wrong type, blamed on whoever had set the value (an
    // earlier --set run.dir=...), not on this --set. (A null is an empty section: filled.)
    if (const YAML::Node on_the_way = n[parts[i]]; on_the_way && !on_the_way.IsNull() && !on_the_way.IsMap()) {
      std::string section = parts[0];
      for (size_t k = 1; k <= i; ++k) section += "." + parts[k];
      YAML::Emitter given;
      given << YAML::Flow << on_the_way;
      throw UsageError("--set " + assignment + ": '" + section + "' is a value (" + given.c_str() + ", from " +
                       origin_of(section, keys, file) + "), not a section: it has no key '" + parts[i + 1] + "'");
    }
    if (!n[parts[i]] || !n[parts[i]].IsMap()) n[parts[i]] = YAML::Node(YAML::NodeType::Map);
    set(n[parts[i]], i + 1);
  };
  set(root, 0);
  // The last --set of a key wins, so that a wrapper's default (slurm/train_forhlr2.sh's
  // run.threads) yields to the user's own; said, since it may also be a slip.
  if (const auto it = keys.find(key); it != keys.end())
    replaced.push_back("--set " + assignment + " replaces --set " + it->second + " (the last --set of a key wins)");
  keys[key] = assignment;
}

}  // namespace

std::string Config::origin(const std::string& key) const { return origin_of(key, overrides, file); }

std::string Config::Preprocess::regrid_key(const std::string& name, const std::string& var) const {
  for (const std::string& key : {name, var, std::string("default")})
    if (regrid.count(key)) return key;
  return "";
}

bool Config::gives(const std::string& key) const {
  if (given.count(key)) return true;
  const auto below = given.lower_bound(key + ".");
  return below != given.end() && below->rfind(key + ".", 0) == 0;
}

std::string Config::record(const std::string& stage) const {
  std::string out = text;
  if (overrides.empty()) return out;
  if (!out.empty() && out.back() != '\n') out += '\n';
  out += "# --set overrides given to downscale " + stage + " (they win over the file above):\n";
  for (const auto& [key, given] : overrides) out += "#   --set " + given + "\n";
  return out;
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  // Read whole once (a failed or short read an error): the text parsed is the text recorded.
  if (!path_exists(path)) throw UsageError(path + ": cannot open config file");
  const std::string text = read_file(path, kExitUsage);
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(text);
  } catch (const YAML::Exception& e) {
    throw UsageError(path + ": line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  // yaml-cpp's LoadFile reads the first document alone: keys after a `---` were ignored without a
  // word. An empty one (a `---` closing the file) holds nothing to ignore.
  for (size_t i = 1; i < documents.size(); ++i)
    if (!documents[i].IsNull())
      throw UsageError(path + ": line " + std::to_string(documents[i].Mark().line + 1) + ": a second YAML document "
                       "after '---': only one document is read (join the two, or remove the '---')");
  YAML::Node root = documents.empty() ? YAML::Node() : documents[0];
  if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) throw UsageError(path + ": the config must be a mapping of sections");
  std::multimap<int, YAML::Node> visited;
  check_duplicate_keys(root, "", path, visited);  // before the overrides, which replace the first of two
  // Whether the file itself has a synth section: a `--set synth.dir=…` on a config of real data
  // would otherwise make one out of the defaults (synthetic North America) and `downscale synth`
  // would write it.
  const bool file_has_synth = root["synth"].IsDefined() && !root["synth"].IsNull();
  std::map<std::string, std::string> overridden;
  std::vector<std::string> replaced;
  for (const auto& o : overrides) apply_override(root, o, path, overridden, replaced);

  Config c;
  c.file = path;
  c.text = text;
  c.overrides = overridden;
  c.replaced_overrides = replaced;
  Reader r(root, path, overridden);

  r.get("run.dir", c.run.dir);
  r.get("run.threads", c.run.threads);
  r.get("run.log_level", c.run.log_level);
  r.get("run.device", c.run.device);
  r.get("run.communicator", c.run.communicator);
  r.renamed("run.math", "train.precision");

  c.synth.present = file_has_synth;
  r.get("synth.dir", c.synth.dir);
  r.get_years("synth.years", c.synth.years);
  r.get_pair("synth.lon", c.synth.lon_min, c.synth.lon_max);
  r.get_pair("synth.lat", c.synth.lat_min, c.synth.lat_max);
  r.get("synth.seed", c.synth.seed);

  r.get("fetch.predictors.source", c.fetch.predictors_source);
  std::vector<std::string> fields;
  r.get("fetch.predictors.fields", fields);
  for (const auto& f : fields) c.fetch.predictors.push_back(FieldRequest::parse(f, r.origin("fetch.predictors.fields")));
  if (!r.is_null_section("fetch.predictand")) {  // null: predictors alone (a GCM run)
    r.get("fetch.predictand.source", c.fetch.predictand_source);
    r.get("fetch.predictand.variable", c.fetch.predictand_variable);
    r.get("fetch.predictand.dataset", c.fetch.predictand_dataset);
  }
  r.get_pair("fetch.lon", c.fetch.lon_min, c.fetch.lon_max);
  r.get_pair("fetch.lat", c.fetch.lat_min, c.fetch.lat_max);
  c.fetch.has_box = r.has("fetch.lon") && r.has("fetch.lat");
  r.get_years("fetch.years", c.fetch.years);
  r.get("fetch.season", c.fetch.season);
  r.get("fetch.predictors.dataset", c.fetch.predictors_dataset);
  r.get("fetch.parallel", c.fetch.parallel);
  r.get("fetch.attempts", c.fetch.attempts);
  r.get("fetch.retry_delay", c.fetch.retry_delay);
  r.get("fetch.piece_mb", c.fetch.piece_mb);
  r.get("fetch.timeout_s", c.fetch.timeout_s);

  c.preprocess.has_predictor_grid = r.get_grid("preprocess.predictor_grid", c.preprocess.predictor_grid);
  c.preprocess.has_predictand_grid = r.get_grid("preprocess.predictand_grid", c.preprocess.predictand_grid);
  r.get_years("preprocess.train_years", c.preprocess.train_years);
  r.get_years("preprocess.validation_years", c.preprocess.validation_years);
  r.get_years("preprocess.test_years", c.preprocess.test_years);
  r.get("preprocess.wet_threshold", c.preprocess.wet_threshold);
  r.get("preprocess.regrid", c.preprocess.regrid);
  r.get("preprocess.standardize", c.preprocess.standardize);
  r.get("preprocess.fill", c.preprocess.fill);
  r.get("preprocess.compression", c.preprocess.compression);
  r.get("preprocess.block_days", c.preprocess.block_days);
  r.get("preprocess.units", c.preprocess.units);
  r.get("preprocess.min_valid_fraction", c.preprocess.min_valid_fraction);

  r.get("model.name", c.model.name);
  r.get("model.filters", c.model.filters);

  r.get("train.batch_size", c.train.batch_size);
  r.get("train.learning_rate", c.train.learning_rate);
  r.get("train.epochs", c.train.epochs);
  r.get("train.patience", c.train.patience);
  r.get("train.seed", c.train.seed);
  r.get("train.loss", c.train.loss);
  r.get("train.optimizer", c.train.optimizer);
  r.get("train.momentum", c.train.momentum);
  r.get("train.warmup_epochs", c.train.warmup_epochs);
  r.get("train.reference_samples_per_second", c.train.reference_samples_per_second);
  r.get("train.allreduce_bucket_mb", c.train.allreduce_bucket_mb);
  r.get("train.allreduce_dtype", c.train.allreduce_dtype);
  r.get("train.data_on_device", c.train.data_on_device);
  r.get("train.device_check", c.train.device_check);
  r.get("train.stall_warning_seconds", c.train.stall_warning_seconds);
  r.get("train.stall_abort_seconds", c.train.stall_abort_seconds);
  r.get("train.name", c.train.name);
  r.get("train.precision", c.train.precision);
  r.get("train.loss_scale", c.train.loss_scale);

  r.get("predict.checkpoint", c.predict.checkpoint);
  r.get("predict.predictors", c.predict.predictors);
  r.get("predict.occurrence", c.predict.occurrence);
  r.get("predict.members", c.predict.members);
  r.get("predict.seed", c.predict.seed);
  r.get("predict.plausible_sd", c.predict.plausible_sd);
  r.get("predict.plausible_ratio", c.predict.plausible_ratio);
  r.get("predict.block_days", c.predict.block_days);
  r.get("predict.standardize", c.predict.standardize);
  r.get_years("predict.reference_years", c.predict.reference_years);
  r.get("predict.reference_predictors", c.predict.reference_predictors);
  r.get("predict.fill", c.predict.fill);
  r.get("predict.label", c.predict.label);
  r.get("evaluate.pcs", c.evaluate.pcs);
  r.get("evaluate.ridge", c.evaluate.ridge);
  r.get("evaluate.seasons", c.evaluate.seasons);

  r.check_unknown();
  c.given = r.given();
  // Every value in range before any stage starts (and before MPI starts any rank).
  check_config(c, [&r](const std::string& key) { return r.origin(key); });
  // Keys given but read by another model or optimizer than the one chosen: said by every stage,
  // so that an edit which changes nothing is not taken for one that did.
  if (c.model.name != "demo" && r.has("model.filters"))
    c.ignored_keys.push_back(r.origin("model.filters") + ": model.filters sets the widths of model 'demo' only; model '" +
                             c.model.name + "' has its own, and ignores it");
  if (c.train.optimizer != "sgd" && r.has("train.momentum"))
    c.ignored_keys.push_back(r.origin("train.momentum") + ": train.momentum applies to train.optimizer sgd only; '" +
                             c.train.optimizer + "' ignores it");
  return c;
}

}  // namespace ds
