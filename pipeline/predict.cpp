// Driver of `downscale predict`: the test split of the store (or new predictors, e.g. a GCM run)
// through the trained network, written as CF NetCDF on the observation grid, and a first score
// against climatology on the test split. Precipitation (Bernoulli-Gamma models): deterministic,
// expected and (by option) stochastic precipitation; any other predictand (Gaussian or MSE
// models): the predicted value and, from a Gaussian model, its standard deviation.
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "evaluate/baselines.h"
#include "io/units.h"
#include "io/atomic_file.h"
#include "io/calendar.h"
#include "io/cf_axes.h"
#include "io/command_line.h"
#include "io/error.h"
#include "io/fetch_manifest.h"
#include "io/log.h"
#include "io/netcdf_file.h"
#include "io/precipitation_file.h"
#include "io/predictand_file.h"
#include "io/run_lock.h"
#include "io/sha256.h"
#include "io/stop_signal.h"
#include "io/store_checks.h"
#include "io/training_store.h"
#include "model/loss.h"
#include "model/math_mode.h"
#include "model/net.h"
#include "pipeline/stages.h"
#include "predict/continuous.h"
#include "predict/network_pass.h"
#include "predict/plausibility.h"
#include "predict/precipitation.h"
#include "predict/test_scores.h"
#include "predict/window.h"
#include "preprocess/new_predictors.h"
#include "preprocess/sample_dates.h"
#include "train/checkpoint.h"
#include "train/run_history.h"
#include "train/climatology_start.h"
#include "train/device_check.h"
#include "train/distributed.h"
#include "train/store_settings.h"

namespace ds {

namespace {

std::string checkpoint_path(const Config& cfg) {
  const RunPaths paths = RunPaths::of(cfg);
  if (cfg.predict.checkpoint == "best") return paths.model_dir() + "/checkpoint_best.h5";
  if (cfg.predict.checkpoint == "last") return paths.model_dir() + "/checkpoint_last.h5";
  // A bare file name is in the model's folder (checkpoint_last.h5, a copy kept beside it) unless
  // the working folder holds it; any other path is taken as given.
  const std::string& c = cfg.predict.checkpoint;
  if (c.find('/') == std::string::npos && !path_exists(c) && path_exists(paths.model_dir() + "/" + c))
    return paths.model_dir() + "/" + c;
  return c;
}

// A checkpoint from another model's folder of this run (predict.checkpoint naming
// train/mnn/checkpoint_best.h5 while train.name is deepesd) would be written to deepesd's predict
// folder and evaluated as deepesd's: refused, naming the train.name it belongs to. A checkpoint
// from anywhere else (a colleague's copy) is filed under train.name, as asked.
void check_checkpoint_of_this_model(const std::string& ckpt, const RunPaths& paths, const Config& cfg) {
  namespace fs = std::filesystem;
  std::error_code e1, e2, e3;  // one each: a later call's success clears the code
  const fs::path folder = fs::weakly_canonical(fs::path(ckpt), e1).parent_path();
  const fs::path train_root = fs::weakly_canonical(fs::path(paths.root) / "train", e2);
  const fs::path mine = fs::weakly_canonical(fs::path(paths.model_dir()), e3);
  if (e1 || e2 || e3 || folder == mine) return;
  std::string owner;
  if (folder == train_root) owner = "the unnamed model's folder";
  else if (folder.parent_path() == train_root) owner = "the folder of model '" + folder.filename().string() + "'";
  else return;
  const std::string fix = folder == train_root ? "leave train.name unset" : "--set train.name=" + folder.filename().string();
  throw UsageError(cfg.origin("predict.checkpoint") + ": predict.checkpoint " + ckpt + " is in " + owner + " (" +
                   folder.string() + "), but train.name is " +
                   (paths.name.empty() ? std::string("unset") : "'" + paths.name + "'") +
                   ": its prediction would be written to " + paths.predict_dir() + " and evaluated as that model's (" +
                   fix + ")");
}

// The early level check's refusal comes with the new predictors' outlier warnings so far: they
// name the likely cause (a field far outside the training climate, a wrong unit), which the level
// error, blaming the model, cannot; a refusal of the predictors (an impossible departure, a field
// mostly filled) replaces it. At the end they come before the check anyway.
void check_early(NewPredictors* inputs, const std::function<void()>& check) {
  try {
    check();
  } catch (const Error&) {
    if (inputs) inputs->check_departures();
    throw;
  }
}

// New predictors fetched in other units than the training data's (a GCM definition writing psl
// in hPa: its values 118 sd from the training mean went through with two warnings and a
// prediction 3.4 degC off) are converted by udunits2; units that do not convert are refused
// naming the file, the channel and both (geopotential height in m is no geopotential).
std::pair<double, double> convert_predictor_units(const std::string& from, const std::string& to,
                                                  const std::string& where) {
  if (!units_convertible(from, to))
    throw InputError(where + ": in '" + from + "', but the model was trained on it in '" + to +
                     "', which no unit conversion turns it into (another quantity under the channel's name? "
                     "geopotential height (zg, m) is not geopotential (z, m2 s-2)): fix the dataset definition of "
                     "these predictors");
  const UnitConversion c = unit_conversion(from, to, where);
  return {c.scale, c.offset};
}

// The output of the test split is predict/<base>.nc; of new predictors predict/<base>_<label>.nc,
// the label being predict.label, or else the fetch run's folder name (the folder above fetch/,
// else the folder itself; a trailing slash does not count), with _own after it under standardize:
// own, so that a run's two standardizations do not replace each other.
std::string product_path(const RunPaths& paths, const std::string& base, const Config::Predict& p) {
  if (p.predictors.empty()) return paths.predict_dir() + "/" + base + ".nc";
  const std::string own = p.standardize == "own" ? "_own" : "";
  if (!p.label.empty()) return paths.predict_dir() + "/" + base + "_" + p.label + own + ".nc";
  auto fetch_dir = std::filesystem::path(p.predictors).lexically_normal();
  if (fetch_dir.filename().empty()) fetch_dir = fetch_dir.parent_path();  // "runs/x/fetch/"
  const auto run_name =
      fetch_dir.filename() == "fetch" ? fetch_dir.parent_path().filename().string() : fetch_dir.filename().string();
  return paths.predict_dir() + "/" + base + "_" + run_name + own + ".nc";
}

// The folder new predictors were read from as the output's `predictors` attribute records it:
// absolute, so that two runs' folders of one name (runs/a/historical, runs/b/historical) differ.
std::string predictors_folder(const std::string& dir) {
  std::error_code ec;
  const auto abs = std::filesystem::weakly_canonical(std::filesystem::absolute(dir), ec);
  return ec ? dir : abs.string();
}

// predict.predictors (and predict.reference_predictors) name a fetch folder (<run.dir>/fetch,
// holding manifest.json). A run folder given instead (runs/rcp85 for runs/rcp85/fetch) would be
// named after itself and read as "not fetched": said at once, with the folder meant.
void check_fetch_folder(const Config& cfg, const std::string& key, const std::string& dir) {
  if (dir.empty() || path_exists(dir + "/manifest.json")) return;
  const std::string where = cfg.origin(key);
  const std::string inner = (std::filesystem::path(dir) / "fetch").lexically_normal().string();
  if (path_exists(inner + "/manifest.json"))
    throw UsageError(where + ": " + key + " " + dir + " is a run folder; its predictors are in " + inner + " (--set " +
                     key + "=" + inner + ")");
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw InputError(dir + ": no such folder (" + where + ": " + key + " is the fetch folder of the predictors, "
                     "<run.dir>/fetch of the run that fetched them)");
  throw InputError(dir + "/manifest.json: no such file: " + dir + " is not a fetch folder (" + where + ": " + key +
                   " is <run.dir>/fetch of the run that fetched the predictors; run `downscale fetch` for them first)");
}

// fetch cut the data predict reads by season, years and box: a --set of those on predict that
// differs from the cut changes nothing, which a user asking predict for summer days would not
// guess (user test). The same --set given to every stage (a script's one list) agrees with the
// cut and is not mentioned; a folder without the record (older manifests) is not judged.
void warn_fetch_keys_on_predict(const Config& cfg, const RunPaths& paths) {
  const bool whole = cfg.overrides.count("fetch") > 0;  // --set 'fetch={...}'
  const auto set = [&](const char* key) { return whole || cfg.overrides.count(key) > 0; };
  if (!set("fetch.season") && !set("fetch.years") && !set("fetch.lon") && !set("fetch.lat")) return;  // no manifest read
  const std::string dir = cfg.predict.predictors.empty() ? paths.fetch_dir() : cfg.predict.predictors;
  FetchManifest m;
  try {
    m = FetchManifest::read(dir + "/manifest.json");
  } catch (const std::exception&) {
    return;  // said elsewhere when it matters (check_fetch_folder, the store)
  }
  const auto& f = cfg.fetch;
  const auto& r = m.request;
  const std::pair<const char*, bool> differs[] = {
      {"fetch.season", !m.season.empty() && f.season != m.season},
      {"fetch.years", r.present && (f.years.first != r.first_year || f.years.last != r.last_year)},
      {"fetch.lon", r.present && (f.lon_min != r.lon_min || f.lon_max != r.lon_max)},
      {"fetch.lat", r.present && (f.lat_min != r.lat_min || f.lat_max != r.lat_max)},
  };
  for (const auto& [key, other] : differs)
    if (other && set(key))
      spdlog::warn("{}: predict does not read {} (downscale fetch cut {} with another one); predict writes the days "
                   "of {}: to predict other days, fetch them into a run folder of their own and give its fetch folder "
                   "as predict.predictors",
                   cfg.origin(key), key, dir,
                   cfg.predict.predictors.empty() ? "the store's test split (preprocess.test_years)"
                                                  : cfg.predict.predictors + " (predict.predictors)");
}

// Refuses to replace the prediction of other predictors: two GCMs' `historical` folders give
// one file name, and the second would silently take the first's place. A rerun from the same
// folder (other reference years, a newer checkpoint) replaces its own output, as the test split's;
// returned is that output's predictor_standardization, for a warning once this run's is known.
std::string check_not_replacing_other_run(const std::string& nc_path, const Config& cfg) {
  if (cfg.predict.predictors.empty() || !path_exists(nc_path)) return "";
  std::string held, standardization;
  try {
    const NcFile f = NcFile::open(nc_path);
    held = f.att_text(NC_GLOBAL, "predictors");
    standardization = f.att_text(NC_GLOBAL, "predictor_standardization");
  } catch (const std::exception&) {
    return "";  // not a prediction it can read: replaced, as a file left by a crash would be
  }
  if (held.empty() || predictors_folder(held) == predictors_folder(cfg.predict.predictors)) return standardization;
  throw UsageError(nc_path + " holds the prediction from " + held + ", not from " + cfg.predict.predictors +
                   " (" + cfg.origin("predict.predictors") + "): " +
                   (cfg.predict.label.empty() ? "set predict.label to name this output (predict/<variable>_<label>.nc)"
                                              : "choose another predict.label than " + cfg.predict.label) +
                   ", or move that file away to replace it");
}

// Warnings for new predictors unlike the training data in ways no unit or range check sees:
// months the model never trained on (a DJF model fed a summer run), and standardization against
// the predictors' own period far from the training years, which removes a scenario's change
// against the training climate (its warming) from its predictors.
void warn_unlike_training(const StoreReader& store, const NewPredictors& in, const Config& cfg, const RunPaths& paths) {
  const std::vector<int64_t> train = store.read_time("train");
  if (train.empty()) return;
  const Calendar store_cal = parse_calendar(store.meta().calendar, "store calendar");
  const Calendar cal = parse_calendar(in.calendar(), cfg.predict.predictors);
  std::set<int> trained, fed;
  for (int64_t d : train) trained.insert(date_from_days(d, store_cal).month);
  for (int64_t d : in.days()) fed.insert(date_from_days(d, cal).month);
  auto text = [](const std::set<int>& m) { return "[" + months_text({m.begin(), m.end()}) + "]"; };
  std::set<int> unseen;
  for (int m : fed)
    if (!trained.count(m)) unseen.insert(m);
  if (!unseen.empty())
    spdlog::warn("{}: the predictors hold days of months {}, which the model never saw: it was trained on months {} "
                 "(fetch.season of the training run); its output for those months is an extrapolation",
                 cfg.predict.predictors, text(unseen), text(trained));

  const YearRange& ref = cfg.predict.reference_years;
  // Whichever folder holds them: a scenario named as its own reference_predictors (or a copy of
  // it) over its own years lost its warming without a word (an audit: 6.96 against 9.56 degC).
  if (cfg.predict.standardize != "own" || ref.empty()) return;
  // The training years as the store's splits count them: season-years by the season the
  // training run's fetch cut (its manifest), else calendar years.
  SplitYears rule;
  rule.calendar = store_cal;
  try {
    rule.season = FetchManifest::read(paths.fetch_dir() + "/manifest.json").season;
  } catch (const std::exception&) {
  }
  const auto [lo, hi] = std::minmax_element(train.begin(), train.end());
  const int first = rule.year_of(*lo), last = rule.year_of(*hi);
  // Ten years on either side of the training years is the same climate for this purpose.
  const std::string& reference = cfg.predict.reference_predictors;
  if (ref.last < first - 10 || ref.first > last + 10)
    spdlog::warn("predict.standardize: own over {}-{} of {}, years far from the training years {}-{}: "
                 "standardized against that period, a scenario loses its change against the training climate "
                 "(its warming); a scenario takes its model's historical run as predict.reference_predictors, "
                 "with predict.reference_years near the training years",
                 ref.first, ref.last,
                 reference.empty() ? std::string("these predictors") : "predict.reference_predictors (" + reference + ")",
                 first, last);
}

// predict takes the model from the checkpoint: a config whose model.name, train.loss or (demo)
// model.filters say otherwise (edited, or --set, after the training) changes nothing here, which
// the config and the output's history would suggest it did (user test: --set train.loss=gaussian
// on a Bernoulli-Gamma model, exit 0 without a word). Said, naming where each came from. A model
// picked by name on the command line (--set train.name=demo, one of several trained from one
// config) is not the one the file's model keys describe: only what this command --set is compared.
void warn_config_model_differs(const model::ModelSpec& spec, const std::string& ckpt, const Config& cfg) {
  std::string differs;
  const bool picked_by_name = cfg.origin("train.name") != cfg.file;
  const auto note = [&](const std::string& key, const std::string& config, const std::string& checkpoint) {
    if (config != checkpoint && !(picked_by_name && cfg.origin(key) == cfg.file))
      differs += (differs.empty() ? "" : "; ") + key + " " + config + " (" + cfg.origin(key) + "), the checkpoint's " +
                 checkpoint;
  };
  const auto text = [](const std::vector<int>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); };
  note("model.name", cfg.model.name, spec.name);
  note("train.loss", cfg.train.loss, spec.loss);
  if (spec.name == "demo" && cfg.model.name == "demo" && !cfg.model.filters.empty())
    note("model.filters", text(cfg.model.filters), text(spec.filters));
  if (!differs.empty())
    spdlog::warn("predict uses the model of {} as it was trained: {}; the config's values change nothing here "
                 "(they act in train)", ckpt, differs);
}

// The store's `sources` (each fetched field's source, space-separated) with each named once:
// twenty predictor fields of one reanalysis are one source.
std::string training_sources(const std::string& sources) {
  std::vector<std::string> seen;
  std::istringstream in(sources);
  for (std::string s; in >> s;)
    if (std::find(seen.begin(), seen.end(), s) == seen.end()) seen.push_back(s);
  std::string out;
  for (const auto& s : seen) out += (out.empty() ? "" : " ") + s;
  return out;
}

// The checkpoint predict.checkpoint names, once it is known to be there and of this model; with
// a warning when a train still running in the model's folder is rewriting it.
std::string existing_checkpoint(const Config& cfg, const RunPaths& paths) {
  std::string ckpt = checkpoint_path(cfg);
  check_checkpoint_of_this_model(ckpt, paths, cfg);
  if (!path_exists(ckpt)) {
    const std::string& c = cfg.predict.checkpoint;
    // A training stopped after its last checkpoint and before its best model: `downscale train`
    // would begin a new one over it, `--resume` settles the folder (a finished run trains nothing).
    if (c == "best" && path_exists(paths.model_dir() + "/checkpoint_last.h5"))
      throw InputError(ckpt + ": no such checkpoint (predict.checkpoint best), but checkpoint_last.h5 is there: its "
                       "training stopped before writing its best model. `downscale train --resume` settles the "
                       "folder (a finished training trains nothing: it copies the last checkpoint where its epoch "
                       "was the best), or predict.checkpoint last predicts from the last one");
    if (c == "best" || c == "last")
      throw InputError(ckpt + ": no such checkpoint (predict.checkpoint " + c + "): run `downscale train` first" +
                       paths.other_models_hint("train", "checkpoint_" + c + ".h5", "models trained"));
    // Any other value is a path: a missing file is exit 3, as any other path a config names (the
    // message says what the key takes, for a misspelt `best`).
    throw InputError(ckpt + ": no such checkpoint file (" + cfg.origin("predict.checkpoint") +
                     ": predict.checkpoint is `best`, `last` (the checkpoints in " + paths.model_dir() +
                     ") or the path of a checkpoint file)");
  }
  // A train still running in the model's folder rewrites its checkpoints as it goes: predicting
  // from one is a look at the model so far (allowed), and evaluate will later refuse this
  // prediction once the checkpoint has changed; said now rather than then.
  const auto same_file = [&](const std::string& name) {
    std::error_code ec;
    return std::filesystem::weakly_canonical(ckpt, ec) ==
           std::filesystem::weakly_canonical(paths.model_dir() + "/" + name, ec);
  };
  const bool rewritten_by_train = same_file("checkpoint_best.h5") || same_file("checkpoint_last.h5");
  // A fresh train that stopped after its first checkpoint and before its best model (a full disk,
  // a kill) leaves the earlier run's best beside its own last checkpoint (train/run_history.h).
  if (const std::string last = paths.model_dir() + "/checkpoint_last.h5"; same_file("checkpoint_best.h5") &&
                                                                          path_exists(last)) {
    std::string best_run, last_run;
    try {
      best_run = read_checkpoint_run(ckpt).run_id, last_run = read_checkpoint_run(last).run_id;
    } catch (const Error&) {  // an unreadable last checkpoint is not this stage's to judge
    }
    if (!last_run.empty() && best_run != last_run)
      spdlog::warn("{} is another training run's than {} (a fresh train stopped after its first checkpoint, before "
                   "writing its best model): predicting from that earlier run's best model; `downscale train --resume` "
                   "makes the folder the new run's", ckpt, last);
    // The same run, stopped between an improving epoch's last checkpoint and its best model (the
    // last is written first): the best model is an earlier epoch's, which that epoch improved on.
    if (!last_run.empty() && best_run == last_run) {
      std::string settle;
      try {
        const HistorySettlement plan = plan_history_settlement(paths.model_dir(), read_checkpoint_state(last));
        if (plan.copy_last_to_best || plan.remove_best) settle = plan.best_problem;
      } catch (const Error&) {  // an unreadable last checkpoint is not this stage's to judge
      }
      if (!settle.empty())
        spdlog::warn("{} {}: predicting from it; `downscale train --resume` settles the folder (a finished training "
                     "trains nothing), or predict.checkpoint last predicts from the last checkpoint",
                     ckpt, settle);
    }
  }
  try {
    if (rewritten_by_train) RunLock::check_free(paths.model_dir(), "train");
  } catch (const Error& e) {
    spdlog::warn("{}: predicting from {} as it is now; the training rewrites it, after which evaluate refuses this "
                 "prediction (predict again when the training has finished)", e.what(), ckpt);
  }
  return ckpt;
}

// The checkpoint's model takes the store's predictors and was trained with a loss predict can
// turn into the store's predictand; its loss.
model::LossKind check_model_fits_store(const model::ModelSpec& spec, const std::string& ckpt, const StoreMeta& meta,
                                       const RunPaths& paths, const Config& cfg) {
  if (spec.in_channels != meta.C() || spec.in_h != meta.H() || spec.in_w != meta.W())
    throw InputError(ckpt + ": the model takes " + std::to_string(spec.in_channels) + "x" + std::to_string(spec.in_h) +
                     "x" + std::to_string(spec.in_w) + " but the store holds " + std::to_string(meta.C()) + "x" +
                     std::to_string(meta.H()) + "x" + std::to_string(meta.W()));
  warn_config_model_differs(spec, ckpt, cfg);
  const model::LossKind loss = model::parse_loss(spec.loss, ckpt + ": loss");
  // Precipitation is a Bernoulli-Gamma mixture; a continuous variable a Gaussian (or its mean).
  if (meta.is_precipitation() && loss != model::LossKind::kBernoulliGamma)
    throw InputError(ckpt + ": the model was trained with the " + spec.loss + " loss, but " + paths.store() +
                     " holds precipitation, which predict turns into amounts from Bernoulli-Gamma parameters only "
                     "(train it with train.loss: bernoulli_gamma)");
  if (!meta.is_precipitation() && loss == model::LossKind::kBernoulliGamma)
    throw InputError(ckpt + ": the model was trained with the bernoulli_gamma loss, but the predictand of " +
                     paths.store() + " is " + meta.predictand + ", not precipitation (train it with train.loss: gaussian or mse)");
  return loss;
}

// What predict runs the network over: the days, their calendar, how they were standardized (the
// file's predictor_standardization) and how to read a block of them.
struct PredictInputs {
  std::unique_ptr<NewPredictors> new_predictors;  // null: the store's test split
  std::vector<int64_t> days;
  std::string calendar, standardization;
  ReadSamples read;
};

// New predictor files (a GCM run, predict.predictors), prepared as the training ones were.
PredictInputs open_new_predictors(const Config& cfg, const StoreReader& store, const RunPaths& paths,
                                  const std::string& nc_path, const std::string& replaced_standardization) {
  const StoreMeta& meta = store.meta();
  // A store written before stores recorded their predictors' units: new predictors in other
  // units (psl in hPa) cannot be told, and only the far-from-training warnings would hint at them.
  if (std::find(meta.channel_units.begin(), meta.channel_units.end(), "") != meta.channel_units.end())
    spdlog::warn("{} does not record the units of its predictors (written by an earlier version): the units of the "
                 "new predictors in {} are not checked against the training data's, nor converted; downscale "
                 "preprocess rebuilds the store with them (the same identity: its checkpoints stay valid)",
                 store.path(), cfg.predict.predictors);
  // A config kept for both ways (iberia_tas.yaml) names the years under `training` too: said, so
  // that nobody reads them as applied.
  if (cfg.predict.standardize == "training" && !cfg.predict.reference_years.empty())
    spdlog::info("predict.reference_years [{}, {}] unused: predict.standardize is training (the store's training "
                 "statistics); they apply under predict.standardize: own",
                 cfg.predict.reference_years.first, cfg.predict.reference_years.last);
  PredictInputs in;
  in.new_predictors = std::make_unique<NewPredictors>(cfg.predict.predictors, meta,
                                                      NewPredictorOptions{cfg.predict.standardize, cfg.predict.reference_years,
                                                                          cfg.predict.reference_predictors, cfg.predict.fill,
                                                                          "the new predictors (predict.predictors)",
                                                                          convert_predictor_units});
  NewPredictors* const inputs = in.new_predictors.get();  // owned by `in`, where it stays put
  warn_unlike_training(store, *inputs, cfg, paths);
  in.days = inputs->days();
  in.calendar = inputs->calendar();
  in.standardization = inputs->standardization();
  // The same predictors standardized otherwise give another prediction (a scenario referenced
  // to its historical run, or to itself, which removes its warming): said when one replaces the other.
  if (!replaced_standardization.empty() && replaced_standardization != in.standardization)
    spdlog::warn("{} holds the prediction from these predictors standardized otherwise ({}); this one ({}) replaces "
                 "it when written: set predict.label to keep both", nc_path, replaced_standardization, in.standardization);
  in.read = [inputs](size_t a, size_t k, float* x) { inputs->read(a, k, x); };
  spdlog::info("predicting {} days ({} calendar) from {}; {}", in.days.size(), in.calendar, cfg.predict.predictors,
               in.standardization);
  return in;
}

// The store's test split, filled by preprocess; refused when the config asks for what applies
// to new predictors only, or when the split is empty.
PredictInputs open_test_split(const Config& cfg, const StoreReader& store) {
  const StoreMeta& meta = store.meta();
  if (!cfg.predict.fill.empty())
    throw UsageError(cfg.origin("predict.fill") + ": predict.fill applies to new predictors (predict.predictors); the "
                     "test split was filled by preprocess.fill");
  if (!cfg.predict.label.empty())
    throw UsageError(cfg.origin("predict.label") + ": predict.label applies to new predictors (predict.predictors); "
                     "the test split is written to predict/<variable>.nc (train.name keeps two models' apart)");
  if (cfg.predict.standardize != "training")
    throw UsageError(cfg.origin("predict.standardize") + ": predict.standardize: own applies to new predictors (predict.predictors); the "
                     "test split is standardized with the training statistics");
  PredictInputs in;
  in.days = store.read_time("test");
  // The config gives no test years: its fault; it gives some and the store has none: the store
  // was built from another config (or before the years were set) and must be built again.
  if (in.days.empty() && cfg.preprocess.test_years.empty())
    throw UsageError(cfg.origin("preprocess.test_years") + ": preprocess.test_years gives no test years; nothing to predict");
  if (in.days.empty())
    throw InputError(store.path() + ": its test split is empty (" +
                     (meta.split_years.empty() ? std::string("built without test years")
                                               : "built with the split years " + meta.split_years) +
                     "); nothing to predict: run `downscale preprocess` again for the config's test years");
  in.calendar = meta.calendar;
  in.read = [&store](size_t a, size_t k, float* x) {
    store.read_x("test", a, k, x);
    check_sane_x(store, "test", a, k, x);
  };
  in.standardization = "training: the store's test split, standardized with the training statistics";
  return in;
}

// The prediction file's global attributes besides the CF ones: what it was predicted from, with
// what, and on whose data and terms (io/cf_axes.h names those evaluate checks it by).
std::map<std::string, std::string> prediction_attributes(const Config& cfg, const RunPaths& paths,
                                                         const StoreReader& store, const model::ModelSpec& spec,
                                                         const PredictInputs& in, const std::string& checkpoint_sum,
                                                         const std::string& model_sum) {
  const StoreMeta& meta = store.meta();
  std::map<std::string, std::string> attributes{
      {"predictors", in.new_predictors ? predictors_folder(cfg.predict.predictors) : paths.store() + " (test split)"},
      {"predictor_standardization", in.standardization},
      {"model", paths.model_dir()},
      // What the model is and what it learnt from, for a reader of the file alone: the
      // architecture and loss, and the fetched sources the store was built from (the predictors'
      // then the observations'; their references and licences follow as training_data_*).
      {"model_architecture", spec.name + ", " + spec.loss + " loss"},
      {"training_data", training_sources(meta.sources)},
      {kStoreIdentityAttr, store.identity()},  // evaluate scores it against this store only
      // ... and against this checkpoint as it was loaded: a training rerun into the same folder
      // rewrites it, and the old prediction would be scored as the new model's.
      {kCheckpointSumAttr, checkpoint_sum},
      // ... and the model in it (spec and tensors), which evaluate compares: an identical
      // retraining, or one whose file records another version or command line, is the same model.
      {kModelSumAttr, model_sum}};
  // Whom to cite and on what terms, for a file shared on its own: the training data's (the
  // store's record of its fetched files) and, for new predictors, theirs (preprocess/data_terms.h).
  const auto add_terms = [&](const std::string& prefix, const std::string& references, const std::string& license) {
    if (!references.empty()) attributes[prefix + "_references"] = references;
    if (!license.empty()) attributes[prefix + "_license"] = license;
  };
  add_terms("training_data", meta.source_references, meta.source_license);
  // The stochastic members are drawn from predict.seed: the file says which, to draw them again.
  if (cfg.predict.members > 0 && meta.is_precipitation()) attributes["members_seed"] = std::to_string(cfg.predict.seed);
  if (in.new_predictors) {
    const DataTerms terms = in.new_predictors->terms();
    add_terms("predictors", terms.references(), terms.license());
  }
  return attributes;
}

}  // namespace

int run_predict(const Config& cfg) {
  const RunPaths paths = RunPaths::of(cfg);
  // One predict per model's folder; then whatever a killed one left (precipitation.nc.tmp-PID).
  RunLock lock(paths.predict_dir(), "predict");
  remove_stale_temps(paths.predict_dir());
  const std::string ckpt = existing_checkpoint(cfg, paths);
  StoreReader store(paths.store());
  const StoreMeta& meta = store.meta();
  // New predictors too: their thresholds, climatology and checks come from the train split.
  if (const std::string changed = store_settings_change(cfg, store); !changed.empty()) spdlog::warn("{}", changed);
  // Hashed before it is read: a training writing into the folder meanwhile must not get its
  // newer checkpoint's hash recorded for the weights used here.
  const std::string checkpoint_sum = file_sha256(ckpt);
  const std::string model_sum = checkpoint_model_sha256(ckpt);  // what evaluate compares
  const model::ModelSpec spec = read_checkpoint_spec(ckpt);
  const model::LossKind loss = check_model_fits_store(spec, ckpt, meta, paths, cfg);
  const int channels = model::loss_channels(loss);
  check_fetch_folder(cfg, "predict.predictors", cfg.predict.predictors);
  check_fetch_folder(cfg, "predict.reference_predictors", cfg.predict.reference_predictors);
  warn_fetch_keys_on_predict(cfg, paths);
  const std::string nc_path =
      product_path(paths, meta.is_precipitation() ? "precipitation" : meta.predictand, cfg.predict);
  const std::string replaced_standardization = check_not_replacing_other_run(nc_path, cfg);
  // Said when the file is written: a rerun's output replaces the earlier one under its name.
  const std::string replacing = path_exists(nc_path) ? ", replacing the earlier prediction" : "";
  if (cfg.predict.members > 0 && !meta.is_precipitation())
    spdlog::warn("predict.members: {} is for precipitation models (stochastic Bernoulli-Gamma draws); this {} "
                 "model writes its mean{} only, no members",
                 cfg.predict.members, meta.predictand, loss == model::LossKind::kGaussian ? " and standard deviation" : "");
  // run.device as in train: a GPU when one is visible (auto) or asked for (cuda), else the CPU.
  // One process, so GPU 0 of those visible (CUDA_VISIBLE_DEVICES picks another).
  const CpuThreads threads = cpu_threads(*make_single_process_communicator(), cfg.run.threads, "run.threads");
  auto be = model::make_backend(cfg.run.device, threads.threads, 0, "run.device", cfg.origin("run.device"));
  if (be->name().rfind("cuda", 0) != 0 && !threads.oversubscribed.empty()) spdlog::warn("{}", threads.oversubscribed);
  model::apply_math_mode(*be, cfg.train.precision, true);
  spdlog::info("predicting on {}", be->name());
  model::Net net(spec, *be);
  if (!net.activations16_summary().empty()) spdlog::info("{}", net.activations16_summary());
  if (!net.blocked_summary().empty()) spdlog::info("{}", net.blocked_summary());
  check_checkpoint_store(ckpt, load_checkpoint(ckpt, net, nullptr), store);
  net.set_mode({false, 0});  // inference: batch norm uses its running statistics, no dropout

  // The inputs: the store's test split, or new predictor files prepared as the training ones.
  const bool new_inputs = !cfg.predict.predictors.empty();
  const PredictInputs in = new_inputs ? open_new_predictors(cfg, store, paths, nc_path, replaced_standardization)
                                      : open_test_split(cfg, store);
  NewPredictors* const inputs = in.new_predictors.get();
  const std::vector<int64_t>& days = in.days;
  const std::string& calendar = in.calendar;
  const ReadSamples& read_inputs = in.read;
  const size_t n = days.size();
  const size_t hw = size_t(meta.Hy()) * meta.Wy();
  const int bs = cfg.train.batch_size;
  const Window win = observation_window(meta);
  const size_t block = days_per_block(cfg, hw);
  if (n > 0 && device_check_applies(cfg.train.device_check, *be)) check_device_forward(net, *be, cfg, meta, n, read_inputs);
  const std::map<std::string, std::string> attributes =
      prediction_attributes(cfg, paths, store, spec, in, checkpoint_sum, model_sum);
  make_dirs(paths.predict_dir());
  // The first score, on the test split only, against each box's training mean (evaluate's
  // climatology baseline); new predictors are not scored.
  const std::vector<float> box_means = new_inputs ? std::vector<float>() : training_box_means(store);
  TestScore score;
  // The network over every day, block by block (days_per_block): `use(first, count, raw)` gets
  // each block's checked output, which it may take apart.
  std::optional<Progress> progress;  // from the first block: the thresholds' pass is not in its rate
  // Until the early level check has run (`use` sets it), blocks hold no more than its days (whole
  // batches), so that it comes after about a year whatever predict.block_days: a small domain's
  // default block is decades, and a broken model would predict all of them first. (Precipitation
  // counts the days of the training's months, which may take more than one such block.)
  bool checked_early = false;
  auto for_each_block = [&](const std::function<void(size_t, size_t, std::vector<float>&)>& use) {
    progress.emplace("predicted days", int64_t(n));
    const size_t early_block = std::min(block, (kEarlyLevelDays + size_t(bs) - 1) / size_t(bs) * size_t(bs));
    for (size_t first = 0, nb = 0; first < n; first += nb) {
      nb = std::min(checked_early ? block : early_block, n - first);
      std::vector<float> raw = run_network(net, *be, meta, first, nb, n, channels, read_inputs, bs, *progress);
      check_finite(raw, channels, meta, days, first, calendar, "network's output");
      use(first, nb, raw);
    }
  };

  if (!meta.is_precipitation()) {
    const bool gaussian = channels == 2;
    PredictandOutput header;
    header.variable = meta.predictand;
    header.units = meta.predictand_units;
    header.lon = window_lon(meta, win);
    header.lat = window_lat(meta, win);
    header.days = days;
    header.calendar = calendar;
    header.method = gaussian ? "mean of the predicted Gaussian" : "network trained with the mean squared error";
    header.history = command_line();
    header.checkpoint = ckpt;
    header.config_file = cfg.file;
    header.attributes = attributes;
    spdlog::info("writing {} ({} days, {} a block)", nc_path, n, std::min(n, block));
    PredictandWriter writer(nc_path, header, gaussian);
    double sum = 0, values = 0;  // over the modelled boxes and days, for the plausibility check
    // Never a file of values the model could not have meant (continuous.h, predict.plausible_sd):
    // refused before the file is renamed into place, so nothing is written; checked once early
    // (kEarlyLevelDays) and at the end.
    const double limit = cfg.predict.plausible_sd;
    const TargetClimatology clim = limit > 0 ? training_climatology(store) : TargetClimatology{};
    const auto check_level = [&](size_t done) {
      if (limit <= 0) return;
      const double sd = std::sqrt(clim.domain_var);
      const double predicted = values > 0 ? sum / values : NAN;
      const double away = departure_in_sd(predicted, clim.domain_mean, sd);
      if (!(away <= limit))
        throw Error(fmt::format(
            "{}: the predicted {} averages {:.4g} {} over the modelled boxes and days, the training observations "
            "{:.4g} {} (sd {:.3g}): {:.3g} standard deviations apart (more than {:g}, predict.plausible_sd){}. The "
            "model does not reproduce the predictand's level: see its training loss (metrics.csv beside the "
            "checkpoint) and whether these predictors are the training ones; a scenario meant to lie this far out: "
            "raise predict.plausible_sd (0: unchecked); nothing written",
            ckpt, meta.predictand, predicted, meta.predictand_units, clim.domain_mean, meta.predictand_units, sd, away,
            limit, level_stage(done, n)));
    };
    for_each_block([&](size_t first, size_t nb, std::vector<float>& raw) {
      ContinuousPrediction pred = continuous_prediction(raw, size_t(channels), hw, meta.mask);
      std::vector<float>().swap(raw);
      // A finite log-variance past about 177 overflows exp into an infinity, written as
      // _FillValue over a modelled box (exit 0): stopped as the network's output is.
      if (gaussian) check_finite(pred.sd, 1, meta, days, first, calendar, "standard deviation (exp of half the log-variance)");
      for (float v : pred.mean)
        if (std::isfinite(v)) sum += v, ++values;
      if (!checked_early && first + nb >= kEarlyLevelDays && first + nb < n) {
        checked_early = true;
        check_early(inputs, [&] { check_level(first + nb); });
      }
      if (!new_inputs) add_test_scores(store, box_means, first, nb, pred.mean, score);
      const std::vector<float> mean = crop_to_window(std::move(pred.mean), win);
      const std::vector<float> sd = gaussian ? crop_to_window(std::move(pred.sd), win) : std::vector<float>();
      writer.write(nb, mean.data(), gaussian ? sd.data() : nullptr);
    });
    if (inputs) inputs->check_departures();
    check_level(n);
    writer.commit();
    if (new_inputs) {
      spdlog::info("wrote {} ({} days{}); not scored: predict scores the store's test split only", nc_path, n, replacing);
      return 0;
    }
    spdlog::info("wrote {} ({} days{})", nc_path, n, replacing);
    report_test_scores(paths.store(), paths.predict_dir(), score, n, ckpt, meta.predictand, meta.predictand_units, "",
                       {{"predictand", meta.predictand}, {"units", meta.predictand_units}, {"observed_values", score.count}});
    return 0;
  }

  const double shift = meta.wet_threshold;
  // Wet-day rule: p >= 0.5, or climate4R's per-box threshold that reproduces the training
  // period's observed wet-day frequency.
  std::vector<float> threshold(hw, 0.5f);
  // The amount's parts in two units (gamma_scale in pr's, the threshold in mm/day): said.
  const std::string amount =
      "amount gamma_shape * gamma_scale + the wet-day threshold (wet_day_threshold_mm / 86400 in kg m-2 s-1)";
  std::string rule = "wet where p_wet >= 0.5, " + amount;
  if (cfg.predict.occurrence == "frequency") {
    const size_t nt = store.count("train");
    BernoulliGammaParams train;  // p alone: the thresholds need no amounts
    train.npoints = hw;
    Progress train_progress("training days, for the wet-day thresholds (predict.occurrence: frequency)", int64_t(nt));
    train.p = run_network(net, *be, meta, 0, nt, nt, 3,
                          [&](size_t a, size_t k, float* x) {
                            store.read_x("train", a, k, x);
                            check_sane_x(store, "train", a, k, x);
                          },
                          bs, train_progress, 0,
                          "thresholds: training day");
    // The observed target as a byte a value (wet, dry, missing), read a block at a time: beside
    // p, the training split's floats would double the pass's memory (0.86 GB for North America).
    std::vector<uint8_t> target(nt * hw);
    store.for_each_block("train", StoreReader::Field::y, [&](size_t first, size_t r, const float* y) {
      for (size_t i = 0; i < r * hw; ++i)
        target[first * hw + i] = meta.mask[i % hw] ? observed_wet(y[i]) : kObservedMissing;
    });
    threshold = frequency_adapted_thresholds(train, target);
    rule = "wet where p_wet reaches the per-box threshold matching the training wet-day frequency, " + amount;
  }

  PrecipitationOutput header;
  header.lon = window_lon(meta, win);
  header.lat = window_lat(meta, win);
  header.days = days;
  header.calendar = calendar;
  header.members = cfg.predict.members;
  header.occurrence_rule = rule;
  header.wet_threshold = shift;
  header.history = command_line();
  header.checkpoint = ckpt;
  header.config_file = cfg.file;
  header.attributes = attributes;
  const int members = header.members;
  spdlog::info("writing {} ({} days{}, {} a block)", nc_path, n,
               members > 0 ? fmt::format(", {} member{}", members, members == 1 ? "" : "s") : std::string(),
               std::min(n, block));
  PrecipitationWriter writer(nc_path, header);
  StochasticPrecipitation draws(members, cfg.predict.seed, shift);
  PrecipitationLevel level;  // predict.plausible_ratio's two means, month by month
  MemberCheck member_check(members, shift);
  // The training observations, read once for both checks that need them.
  const double observed_max =
      cfg.predict.plausible_ratio != 0 || members > 0 ? read_training_level(store, level) : 0;
  const std::string predictors = new_inputs ? predictors_folder(cfg.predict.predictors) : "";
  const std::vector<int> months = months_of(days, parse_calendar(calendar, "predict"));
  for_each_block([&](size_t first, size_t nb, std::vector<float>& raw) {
    BernoulliGammaParams b = bernoulli_gamma_params(raw, hw);
    std::vector<float>().swap(raw);  // its values are in `b` now
    const std::vector<float> expected = expected_precipitation(b, shift);
    check_finite(expected, 1, meta, days, first, calendar, "expected precipitation");
    level.add_predicted(expected.data(), nb, months.data() + first, meta.mask);
    // Once, after kEarlyLevelDays predicted days in the training's months.
    if (!checked_early && level.predicted_days() >= kEarlyLevelDays && first + nb < n) {
      checked_early = true;
      check_early(inputs, [&] { check_precipitation_level(level, cfg, ckpt, predictors, first + nb, n); });
    }
    // A first score on the test period: the expected precipitation (the mean squared error's
    // optimum) against each grid box's training climatology. `downscale evaluate` gives the rest.
    if (!new_inputs) add_test_scores(store, box_means, first, nb, expected, score);
    const std::vector<float> pr = crop_to_window(deterministic_precipitation(b, threshold, shift), win);
    const std::vector<float> pr_expected = crop_to_window(expected, win);
    std::vector<float> pr_members;
    if (members > 0) {
      std::vector<float> drawn = draws.next(b);
      member_check.add(b, drawn, meta.mask, first);
      pr_members = crop_to_window(std::move(drawn), win);
    }
    // The parameters last, moved: nothing reads `b` after this.
    const std::vector<float> p_wet = crop_to_window(std::move(b.p), win);
    const std::vector<float> shape = crop_to_window(std::move(b.alpha), win);
    const std::vector<float> scale = crop_to_window(std::move(b.beta), win);
    writer.write({nb, pr.data(), pr_expected.data(), p_wet.data(), shape.data(), scale.data(),
                  members > 0 ? pr_members.data() : nullptr});
  });
  if (inputs) inputs->check_departures();
  check_precipitation_level(level, cfg, ckpt, predictors, n, n);
  if (members > 0) check_members(member_check, observed_max, meta, days, calendar, ckpt);
  writer.commit();
  if (new_inputs) {
    spdlog::info("wrote {} ({} days{}); not scored: predict scores the store's test split only", nc_path, n, replacing);
    return 0;
  }

  spdlog::info("wrote {} ({} days{}{})", nc_path, n,
               members ? fmt::format(", {} stochastic member{}", members, members == 1 ? "" : "s") : "",
               replacing);
  report_test_scores(paths.store(), paths.predict_dir(), score, n, ckpt, "the expected precipitation", "mm/day", "_mm_day",
                     {{"land_points", score.count / n}});
  return 0;
}

}  // namespace ds
