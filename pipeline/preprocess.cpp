// Driver of `downscale preprocess`.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "io/atomic_file.h"
#include "io/error.h"
#include "io/fetch_manifest.h"
#include "io/run_lock.h"
#include "io/stop_signal.h"
#include "io/store_identity.h"
#include "io/training_store.h"
#include "pipeline/stages.h"
#include "preprocess/build_store.h"
#include "preprocess/fetched_field.h"
#include "train/checkpoint.h"

namespace ds {

namespace {

// The identity and its parts of the store at `path` (empty when there is none, or none readable).
struct Identity {
  std::string id, parts;
  std::string train_hash, validation_hash;  // the splits' content (StoreReader::split_hash)
};
Identity identity_of(const std::string& path) {
  if (!path_exists(path)) return {};
  try {
    const StoreReader store(path);
    return {store.identity(), identity_parts(store.meta()), store.split_hash("train"), store.split_hash("validation")};
  } catch (const std::exception&) {
    return {};
  }
}

// A checkpoint under <run>/train and the store it records it was trained on.
struct SavedCheckpoint {
  std::string path;
  StoreProvenance store;
};

// The checkpoints under <run>/train (train/ and train/<name>/) that record `store_identity` as
// the store they were trained on, sorted.
std::vector<SavedCheckpoint> checkpoints_of_store(const std::string& train_dir, const std::string& store_identity) {
  namespace fs = std::filesystem;
  std::vector<SavedCheckpoint> found;
  std::error_code ec;
  if (!fs::is_directory(train_dir, ec)) return found;
  for (fs::recursive_directory_iterator it(train_dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it.depth() >= 1) it.disable_recursion_pending();  // train/ and train/<name>/ only
    const fs::path& p = it->path();
    if (p.extension() != ".h5" || p.filename().string().rfind("checkpoint_", 0) != 0) continue;
    try {
      StoreProvenance store = read_checkpoint_provenance(p.string());
      if (store.identity == store_identity) found.push_back({p.string(), std::move(store)});
    } catch (const std::exception&) {  // not a checkpoint it can read: not this warning's business
    }
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  return found;
}

// The first four of `models`' paths, then "and N more": a warning's list of checkpoints.
std::string first_few(const std::vector<SavedCheckpoint>& models) {
  std::string list;
  for (size_t i = 0; i < models.size() && i < 4; ++i) list += (i ? ", " : "") + models[i].path;
  if (models.size() > 4) list += fmt::format(" and {} more", models.size() - 4);
  return list;
}

// A store rebuilt with other settings (training years, regrid method, fill, ...) no longer fits
// the models trained on the one it replaced: predict and train --resume refuse them later, far
// from the cause. Said here, when the cause is the command just run. The same predictors and
// statistics with other training or validation days (another wet_threshold, validation and test
// years swapped) keep the store's identity, and are told by the splits' hashes.
void warn_models_of_replaced_store(const Identity& old, const std::string& store, const std::string& train_dir) {
  if (old.id.empty()) return;
  const Identity now = identity_of(store);
  if (now.id == old.id) {
    if (now.train_hash == old.train_hash && now.validation_hash == old.validation_hash) return;
    std::vector<SavedCheckpoint> models;
    for (SavedCheckpoint& c : checkpoints_of_store(train_dir, now.id))
      if (!changed_split(c.store, now.train_hash, now.validation_hash).empty()) models.push_back(std::move(c));
    if (models.empty()) return;
    spdlog::warn("{} was rebuilt with the same predictors and statistics but other {} (preprocess.wet_threshold, the "
                 "observations, or the validation and test years): the {} checkpoint(s) trained on the old splits no "
                 "longer fit it, and predict and train --resume refuse them: {}. Train them again, or preprocess with "
                 "the earlier settings to use them",
                 store, now.train_hash != old.train_hash ? "training days" : "validation days", models.size(),
                 first_few(models));
    return;
  }
  const std::vector<SavedCheckpoint> models = checkpoints_of_store(train_dir, old.id);
  if (models.empty()) return;
  std::vector<std::string> changed = changed_identity_parts(old.parts, now.parts);
  if (changed.empty()) changed.push_back("content");
  spdlog::warn("{} was rebuilt and differs from the store it replaced in its {} (this preprocess's settings or the "
               "fetched data differ from the last one's): the {} checkpoint(s) trained on the old store no longer fit it, and predict and "
               "train --resume refuse them: {}. Train them again, or preprocess with the earlier settings to use them",
               store, join_commas(changed), models.size(), first_few(models));
}

}  // namespace

int run_preprocess(const Config& cfg) {
  const RunPaths paths = RunPaths::of(cfg);
  // Without training years there are no statistics to standardize with and no samples: said as
  // the config's fault, before any data is read (not as "0 training days" in the fetched data).
  const std::string train_key = "preprocess.train_years";
  if (cfg.preprocess.train_years.empty())
    throw UsageError(cfg.gives(train_key)
                         ? cfg.origin(train_key) + ": key '" + train_key + "' gives no years: the model trains on them, "
                           "and the standardization statistics and the land mask come from them ([first, last])"
                         : cfg.file + ": key '" + train_key + "' is not given: the years [first, last] the model trains "
                           "on, and the standardization statistics and the land mask come from");
  // Without a predictor grid it would be GridSpec's default, one point at (0, 0), and the error a
  // regridding one about a 1 x 1 grid the user never gave.
  if (!cfg.preprocess.has_predictor_grid) {
    std::string fetched;
    try {  // what the fetched predictors are on, to choose by; the manifest's own errors come later
      const FetchManifest manifest = FetchManifest::read(paths.fetch_dir() + "/manifest.json");
      if (!manifest.predictors.empty()) {
        const auto& p = manifest.predictors.front();
        fetched = "; the fetched " + p.name + " is on " + FetchedField(manifest.path_of(p), p.variable).grid().describe();
      }
    } catch (const Error&) {
    }
    throw UsageError(cfg.file + ": preprocess.predictor_grid is not given: the model's input grid, which every "
                     "predictor is regridded onto ({lon: [first, last], lat: [first, last], step})" + fetched);
  }
  if (cfg.preprocess.test_years.empty())
    spdlog::info("no test split (preprocess.test_years {}): `downscale predict` and `evaluate` have no test days to "
                 "predict and score; new predictors (predict.predictors) can still be predicted",
                 cfg.gives("preprocess.test_years") ? "gives no years" : "is not given");
  // One preprocess per run folder; then whatever a killed one left (a full-size store.h5.tmp-PID).
  const std::string dir = cfg.run.dir + "/preprocess";
  RunLock lock(dir, "preprocess");
  remove_stale_temps(dir);
  const Identity old = identity_of(paths.store());
  const auto s = build_store(cfg, paths.fetch_dir(), paths.store());
  warn_models_of_replaced_store(old, paths.store(), paths.root + "/train");
  spdlog::info("splits by year: {}", s.splits);
  if (s.precipitation)
    spdlog::info("wrote {}: {} train, {} validation, {} test days; {:.0f}% land; {:.0f}% wet days in training",
                 paths.store(), s.train, s.validation, s.test, 100 * s.land_share, 100 * s.wet_day_share);
  else
    spdlog::info("wrote {}: {} train, {} validation, {} test days; {:.0f}% of the observation grid modelled",
                 paths.store(), s.train, s.validation, s.test, 100 * s.land_share);
  return 0;
}

}  // namespace ds
