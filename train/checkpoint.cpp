#include "train/checkpoint.h"

#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>

#include "io/atomic_file.h"
#include "io/error.h"
#include "io/hdf5_file.h"
#include "io/sha256.h"
#include "io/version.h"
#include "model/imagenet_models.h"
#include "model/models.h"

namespace ds {

namespace {

std::vector<hsize_t> dims_of(const model::Tensor& t) {
  const auto& s = t.shape();
  return {hsize_t(s.n), hsize_t(s.c), hsize_t(s.h), hsize_t(s.w)};
}

void load_tensor(const H5File& f, const std::string& name, model::Tensor& t) {
  if (!f.exists(name)) throw InputError(f.path() + ": checkpoint has no " + name);
  if (f.dims(name) != dims_of(t))
    throw InputError(f.path() + ": " + name + " has a different shape than the model's " + t.shape().str());
  std::vector<float> host(t.size());
  f.read(name, host.data());
  // Training never saves a non-finite value (a diverging run stops first, a skipped FP16 step
  // leaves the weights as they were): one here is damage, named here rather than as "training
  // diverged" or a NaN output far from its cause.
  for (size_t i = 0; i < host.size(); ++i)
    if (!std::isfinite(host[i]))
      throw InputError(f.path() + ": " + name + " holds " + (std::isnan(host[i]) ? "NaN" : "an infinity") +
                       " (element " + std::to_string(i) + "): the checkpoint is damaged; use the other checkpoint "
                       "(predict.checkpoint best or last) or train again");
  t.upload(host.data());
}

// The model_spec attribute of the checkpoint `f` at `path`: exit 3 naming the checkpoint where it
// is no JSON or names a model this version does not build.
model::ModelSpec saved_spec(const H5File& f, const std::string& path) {
  model::ModelSpec spec;
  try {
    spec = model::ModelSpec::from_json(f.attr_string("/", "model_spec"));
  } catch (const std::exception& e) {
    throw InputError(path + ": attribute model_spec: " + e.what() + " (a damaged checkpoint)");
  }
  if (!model::is_known_model(spec.name))
    throw InputError(path + ": the checkpoint's model '" + spec.name + "' is not one this version of downscale builds (" +
                     model::known_models() + "): written by another version, or damaged");
  return spec;
}

// A configuration that does not fit the checkpoint (as a global batch that does not): exit 2.
void check_saved_model(const H5File& f, const std::string& path, const model::ModelSpec& want) {
  if (!f.has_attr("/", "model_spec")) return;  // absent in checkpoints of older versions
  const model::ModelSpec saved = saved_spec(f, path);
  // `value`: the checkpoint's, as a --set takes it, so the way out can be copied (a model trained
  // with --set model.filters=... needs it again on resume).
  const auto refuse = [&](const std::string& what, const std::string& a, const std::string& b, const std::string& key,
                          const std::string& value) {
    throw UsageError(path + ": the checkpoint holds " + what + " " + a + ", the configuration asks for " + b + " (" + key +
                     "): use the checkpoint's (--set '" + key + "=" + value +
                     "'), or train into another folder (train.name)");
  };
  if (saved.name != want.name) refuse("model", "'" + saved.name + "'", "'" + want.name + "'", "model.name", saved.name);
  if (saved.loss != want.loss && !model::is_image_classifier(want.name))
    refuse("a model trained with the loss", saved.loss, want.loss, "train.loss", saved.loss);
  if (want.name == "demo" && saved.filters != want.filters) {  // the only model that reads them
    const auto list = [](const std::vector<int>& v) {
      std::string t;
      for (int x : v) t += (t.empty() ? "" : ", ") + std::to_string(x);
      return "[" + t + "]";
    };
    refuse("filters", list(saved.filters), list(want.filters), "model.filters", list(saved.filters));
  }
}

// Another optimizer's state: the configuration does not fit the checkpoint, as another model
// does (exit 2). Checkpoints from before SGD existed hold Adam's state under "adam_steps".
void check_saved_optimizer(const H5File& f, const std::string& path, const std::string& want) {
  const bool has_name = f.has_attr("/", "optimizer");
  const std::string saved = has_name ? f.attr_string("/", "optimizer") : (f.has_attr("/", "adam_steps") ? "adam" : "");
  if (saved != want)
    throw UsageError(path + ": the checkpoint holds the state of optimizer '" + (saved.empty() ? "none" : saved) +
                     "', the configuration asks for '" + want + "' (train.optimizer): use the checkpoint's, or train "
                     "into another folder (train.name)");
}

// The record of the store a checkpoint was trained on.
StoreProvenance read_provenance(const H5File& f, const std::string& path) {
  StoreProvenance p;
  if (f.has_attr("/", "store_identity")) {
    p.identity = f.attr_string("/", "store_identity");
    p.channels = split_commas(f.attr_string("/", "channels"));
    p.statistics = f.attr_string("/", "store_statistics");
    const std::string grids = f.attr_string("/", "store_grids");
    int* g = p.grid;
    if (std::sscanf(grids.c_str(), "%d,%d,%d,%d", &g[0], &g[1], &g[2], &g[3]) != 4)
      throw InputError(path + ": attribute store_grids '" + grids + "' is not H,W,H',W'");
  }
  if (f.has_attr("/", "train_split_hash")) {
    p.train_hash = f.attr_string("/", "train_split_hash");
    p.validation_hash = f.attr_string("/", "validation_split_hash");
  }
  return p;
}

// The root attributes a resume computes with, and their types: the checksum state_sha256 covers
// them as Fletcher-32 covers each tensor. (HDF5's default file format checks no metadata: a
// flipped byte in rng_state resumed another shuffle without a word, an edited step_in_epoch
// "trained" an epoch of no steps, both exit 0.) The config record, the setup and the version are
// for a reader, not the arithmetic, and stay out.
std::string state_sha256(const H5File& f) {
  using T = H5File::AttrType;
  return f.root_attributes_sha256(
      {{"model_spec", T::kString},          {"epoch", T::kInt},
       {"rng_state", T::kString},           {"best_val_loss", T::kDouble},
       {"epochs_without_improvement", T::kInt}, {"step_in_epoch", T::kInt},
       {"epoch_loss_sum", T::kDouble},      {"store_identity", T::kString},
       {"channels", T::kString},            {"store_grids", T::kString},
       {"store_statistics", T::kString},    {"train_split_hash", T::kString},
       {"validation_split_hash", T::kString}, {"global_batch", T::kInt},
       {"epoch_metrics", T::kString},       {"epoch_learning_rate", T::kDouble},
       {"loss_scale", T::kDouble},          {"loss_scale_good_steps", T::kInt},
       {"run_id", T::kString},              {"optimizer", T::kString},
       {"optimizer_steps", T::kInt}});
}

// Refuses (InputError, exit 3) a checkpoint whose state attributes are not those it was written
// with, or hold what training never writes; checkpoints before the checksum: the ranges alone.
void check_state(const H5File& f, const std::string& path, const TrainState& s) {
  const auto damaged = [&](const std::string& what) {
    return InputError(path + ": " + what + ": the checkpoint was damaged or edited after it was written; use the "
                      "other checkpoint (predict.checkpoint best or last; to resume, a copy of checkpoint_best.h5 as "
                      "checkpoint_last.h5) or train anew");
  };
  if (f.has_attr("/", "state_sha256") && f.attr_string("/", "state_sha256") != state_sha256(f))
    throw damaged("its training state (the attributes epoch, step_in_epoch, rng_state, optimizer_steps and the rest) "
                  "does not match its checksum state_sha256");
  if (s.epoch < 0) throw damaged("attribute epoch is " + std::to_string(s.epoch));
  if (s.step_in_epoch < 0) throw damaged("attribute step_in_epoch is " + std::to_string(s.step_in_epoch));
  if (s.epochs_without_improvement < 0)
    throw damaged("attribute epochs_without_improvement is " + std::to_string(s.epochs_without_improvement));
  if (!std::isfinite(s.epoch_loss_sum)) throw damaged(fmt::format("attribute epoch_loss_sum is {}", s.epoch_loss_sum));
  if (std::isnan(s.best_val_loss)) throw damaged("attribute best_val_loss is NaN");
  if (s.global_batch < 0) throw damaged("attribute global_batch is " + std::to_string(s.global_batch));
  if (!(s.loss_scale >= 0) || !std::isfinite(s.loss_scale) || s.loss_scale_good_steps < 0)
    throw damaged(fmt::format("attributes loss_scale {} and loss_scale_good_steps {}", s.loss_scale,
                              s.loss_scale_good_steps));
  if (f.has_attr("/", "optimizer_steps") && f.attr_int("/", "optimizer_steps") < 0)
    throw damaged("attribute optimizer_steps is " + std::to_string(f.attr_int("/", "optimizer_steps")));
  std::mt19937_64 rng;
  if (!(std::istringstream(s.rng_state) >> rng)) throw damaged("attribute rng_state is no random generator's state");
}

// The training state's attributes (everything but the tensors).
TrainState read_state(const H5File& f, const std::string& path) {
  TrainState s;
  s.epoch = static_cast<int>(f.attr_int("/", "epoch"));
  s.rng_state = f.attr_string("/", "rng_state");
  s.best_val_loss = f.attr_double("/", "best_val_loss");
  s.epochs_without_improvement = static_cast<int>(f.attr_int("/", "epochs_without_improvement"));
  // Checkpoints from before mid-epoch ones were written have neither: an epoch's end.
  if (f.has_attr("/", "step_in_epoch")) s.step_in_epoch = f.attr_int("/", "step_in_epoch");
  if (f.has_attr("/", "epoch_loss_sum")) s.epoch_loss_sum = f.attr_double("/", "epoch_loss_sum");
  s.store = read_provenance(f, path);
  if (f.has_attr("/", "global_batch")) s.global_batch = f.attr_int("/", "global_batch");
  if (f.has_attr("/", "config")) s.config_text = f.attr_string("/", "config");
  if (f.has_attr("/", "training_setup")) s.setup = f.attr_string("/", "training_setup");
  if (f.has_attr("/", "epoch_metrics")) {
    s.epoch_metrics = f.attr_string("/", "epoch_metrics");
    s.epoch_learning_rate = f.attr_double("/", "epoch_learning_rate");
  }
  if (f.has_attr("/", "loss_scale")) {
    s.loss_scale = f.attr_double("/", "loss_scale");
    s.loss_scale_good_steps = f.attr_int("/", "loss_scale_good_steps");
  }
  if (f.has_attr("/", "run_id")) s.run_id = f.attr_string("/", "run_id");
  check_state(f, path, s);
  return s;
}

}  // namespace

void save_checkpoint(const std::string& path, model::Net& net, model::Optimizer* optimizer, const TrainState& state) {
  AtomicFile out(path);
  H5File f = H5File::create(out.temp_path());
  f.checksum_datasets();  // every tensor verified when read back (predict, resume)
  f.set_attr("/", "model_spec", net.spec().to_json());
  f.set_attr("/", "epoch", int64_t{state.epoch});
  f.set_attr("/", "rng_state", state.rng_state);
  f.set_attr("/", "best_val_loss", state.best_val_loss);
  f.set_attr("/", "epochs_without_improvement", int64_t{state.epochs_without_improvement});
  f.set_attr("/", "step_in_epoch", state.step_in_epoch);
  f.set_attr("/", "epoch_loss_sum", state.epoch_loss_sum);
  f.set_attr("/", "software_version", std::string("downscale " DOWNSCALE_VERSION));
  f.set_attr("/", "store_identity", state.store.identity);
  f.set_attr("/", "channels", join_commas(state.store.channels));
  const int* g = state.store.grid;
  f.set_attr("/", "store_grids", std::to_string(g[0]) + "," + std::to_string(g[1]) + "," + std::to_string(g[2]) + "," +
                                     std::to_string(g[3]));
  f.set_attr("/", "store_statistics", state.store.statistics);
  if (!state.store.train_hash.empty()) {
    f.set_attr("/", "train_split_hash", state.store.train_hash);
    f.set_attr("/", "validation_split_hash", state.store.validation_hash);
  }
  f.set_attr("/", "global_batch", state.global_batch);
  if (!state.config_text.empty()) f.set_attr("/", "config", state.config_text);
  if (!state.setup.empty()) f.set_attr("/", "training_setup", state.setup);
  if (!state.epoch_metrics.empty()) {
    f.set_attr("/", "epoch_metrics", state.epoch_metrics);
    f.set_attr("/", "epoch_learning_rate", state.epoch_learning_rate);
  }
  if (state.loss_scale > 0) {
    f.set_attr("/", "loss_scale", state.loss_scale);
    f.set_attr("/", "loss_scale_good_steps", state.loss_scale_good_steps);
  }
  if (!state.run_id.empty()) f.set_attr("/", "run_id", state.run_id);
  const auto params = net.params();
  for (const auto& p : params) f.write("/weights/" + p.name, dims_of(*p.value), p.value->to_host().data());
  for (const auto& b : net.buffers()) f.write("/buffers/" + b.name, dims_of(*b.value), b.value->to_host().data());
  if (optimizer) {
    for (const auto& slot : optimizer->slots())
      for (size_t i = 0; i < params.size(); ++i) {
        const model::Tensor& t = (*slot.tensors)[i];
        f.write("/" + slot.name + "/" + params[i].name, dims_of(t), t.to_host().data());
      }
    f.set_attr("/", "optimizer", optimizer->name());
    f.set_attr("/", "optimizer_steps", int64_t{optimizer->steps()});
  }
  f.set_attr("/", "state_sha256", state_sha256(f));  // last: over the attributes as written
  f.close();
  out.commit();
}

model::ModelSpec read_checkpoint_spec(const std::string& path) {
  H5File f = H5File::open(path);
  if (!f.has_attr("/", "model_spec")) throw InputError(path + ": no model_spec attribute: not a downscale checkpoint");
  return saved_spec(f, path);
}

void check_checkpoint_model(const std::string& path, const model::ModelSpec& want) {
  H5File f = H5File::open(path);
  check_saved_model(f, path, want);
}

void check_resumable(const std::string& path, const std::string& optimizer, const StoreReader& store) {
  H5File f = H5File::open(path);
  check_saved_optimizer(f, path, optimizer);
  check_checkpoint_store(path, read_state(f, path), store);
}

TrainState load_checkpoint(const std::string& path, model::Net& net, model::Optimizer* optimizer) {
  H5File f = H5File::open(path);
  // Another model's checkpoint (a resume after model.name or train.loss changed) is named as such,
  // not by the first weight whose shape differs.
  check_saved_model(f, path, net.spec());
  const auto params = net.params();
  for (const auto& p : params) load_tensor(f, "/weights/" + p.name, *p.value);
  for (const auto& b : net.buffers()) load_tensor(f, "/buffers/" + b.name, *b.value);
  if (optimizer) {
    const bool has_name = f.has_attr("/", "optimizer");
    check_saved_optimizer(f, path, optimizer->name());
    for (const auto& slot : optimizer->slots())
      for (size_t i = 0; i < params.size(); ++i)
        load_tensor(f, "/" + slot.name + "/" + params[i].name, (*slot.tensors)[i]);
    optimizer->set_steps(f.attr_int("/", has_name ? "optimizer_steps" : "adam_steps"));
  }
  return read_state(f, path);
}

void check_checkpoint_store(const std::string& checkpoint_path, const TrainState& state, const StoreReader& store) {
  const std::string& store_path = store.path();
  if (state.store.identity.empty()) {
    spdlog::warn("{}: the checkpoint records no store identity (written by an older version): cannot check that it "
                 "was trained on {}", checkpoint_path, store_path);
    return;
  }
  const std::string diff = provenance_difference(state.store, provenance_of(store.meta()));
  if (!diff.empty())
    throw InputError(checkpoint_path + ": trained on another store than " + store_path + ": " + diff +
                     " (checkpoint vs store); predict and resume only with the store it was trained on, or train anew");
  // The same predictors and statistics, but other training or validation days: a store rebuilt
  // with another wet threshold (the target the amounts were learnt above), other sources, or the
  // validation and test years swapped (the test split would hold the days that chose this
  // checkpoint). Not recorded by older checkpoints or stores: not checked.
  const std::string changed = changed_split(state.store, store.split_hash("train"), store.split_hash("validation"));
  if (changed == "train")
    throw InputError(checkpoint_path + ": trained on other training days than the train split of " + store_path +
                     " holds now (the store was rebuilt with the same predictors and statistics but another "
                     "preprocess.wet_threshold, other observations or other training days); predict and resume only "
                     "with the store it was trained on, or train anew");
  if (changed == "validation")
    throw InputError(checkpoint_path + ": its best epoch was chosen on another validation split than " + store_path +
                     " holds now (preprocess.validation_years or test_years changed: a test split holding the days that "
                     "chose the model would score it on them); predict and resume only with the store it was trained "
                     "on, or train anew");
}

std::string checkpoint_model_sha256(const std::string& path) {
  const H5File f = H5File::open(path);
  Sha256 h;
  h.update(f.attr_string("/", "model_spec"));
  for (const char* group : {"/weights", "/buffers"}) {
    for (const std::string& name : f.datasets(group)) {  // in HDF5's name order, the same every time
      size_t n = 1;
      for (auto d : f.dims(name)) n *= d;
      std::vector<float> v(n);
      f.read(name, v.data());
      h.update(name).update(v);
    }
  }
  return h.hex();
}

TrainState read_checkpoint_state(const std::string& path) { return read_state(H5File::open(path), path); }

CheckpointRun read_checkpoint_run(const std::string& path) {
  const H5File f = H5File::open(path);
  CheckpointRun r;
  if (f.has_attr("/", "run_id")) r.run_id = f.attr_string("/", "run_id");
  if (f.has_attr("/", "epoch")) r.epoch = static_cast<int>(f.attr_int("/", "epoch"));
  return r;
}

std::string nothing_to_train(const TrainState& state, const std::string& path, int epochs, int patience,
                             bool report_kept) {
  // An early-stopped run is finished too (its patience ran out), unless patience was raised. A
  // checkpoint written mid-epoch past train.epochs (interrupted in epoch 3, resumed with epochs
  // 1) has nothing to train either: its partial epoch lies beyond the run asked for.
  const bool all_epochs = state.epoch >= epochs;
  const bool stopped_early = patience > 0 && state.epochs_without_improvement >= patience;
  if (!all_epochs && !(stopped_early && state.step_in_epoch == 0)) return "";
  const std::string partial =
      state.step_in_epoch > 0 ? fmt::format(" (and {} steps of epoch {})", state.step_in_epoch, state.epoch + 1) : "";
  return fmt::format(
      "{} {}: nothing to train; its checkpoints, metrics.csv{} (raise {} to train on)", path,
      all_epochs ? (state.epoch == epochs && partial.empty()
                        ? fmt::format("holds all {} epochs of train.epochs {}", state.epoch, epochs)
                        : fmt::format("holds {} epochs{}, {} train.epochs {}", state.epoch, partial,
                                      state.epoch == epochs ? "all of" : "more than", epochs))
                 : fmt::format("stopped early after epoch {} (no improvement for train.patience {} epochs)",
                               state.epoch, patience),
      report_kept ? " and train_report.json are kept"
                  : " are kept, and no train_report.json (a run writes it when its training ends: this one's end "
                    "was not reached, or its report was lost when it was stopped after its last checkpoint, or the "
                    "one there was another run's)",
      all_epochs ? "train.epochs" : "train.patience");
}

StoreProvenance read_checkpoint_provenance(const std::string& path) { return read_provenance(H5File::open(path), path); }

std::string changed_split(const StoreProvenance& saved, const std::string& train_now, const std::string& validation_now) {
  const auto differs = [](const std::string& a, const std::string& b) { return !a.empty() && !b.empty() && a != b; };
  if (differs(saved.train_hash, train_now)) return "train";
  if (differs(saved.validation_hash, validation_now)) return "validation";
  return "";
}

void check_resumed_global_batch(const std::string& checkpoint, int64_t saved, int64_t now, int batch_size, int ranks) {
  if (saved == 0 || saved == now) return;
  std::string keep = "resume with a rank count and train.batch_size whose product is " + std::to_string(saved);
  if (saved % batch_size == 0) keep = "resume on " + std::to_string(saved / batch_size) + " rank(s), or " + keep;
  throw UsageError(checkpoint + ": trained with a global batch of " + std::to_string(saved) +
                   " samples per step; this run's is " + std::to_string(now) + " (train.batch_size " +
                   std::to_string(batch_size) + " x " + std::to_string(ranks) + " rank(s)): " + keep +
                   " (train.learning_rate is per rank, so scale it by the old ranks / the new), or train anew");
}

}  // namespace ds
