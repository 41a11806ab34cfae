// The run configuration: one YAML file (configs/*.yaml) plus `--set key=value` overrides.
// Every stage reads its own section; keys nobody reads are errors, so a typo such as
// `train.epoch` fails at start instead of silently training with the default.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ds {

// One predictor field as climate4R writes it: "z@500" is geopotential at 500 hPa; a bare
// variable ("psl", "tas") is a surface or single-level field.
struct FieldRequest {
  std::string var;
  int level = 0;  // hPa; 0: single-level
  std::string name() const { return level == 0 ? var : var + "@" + std::to_string(level); }
  // Parses "var@level" or "var"; throws UsageError naming `where` if malformed.
  static FieldRequest parse(const std::string& text, const std::string& where);
};

struct YearRange {
  int first = 0, last = -1;  // inclusive; empty when last < first
  bool empty() const { return last < first; }
  bool contains(int y) const { return y >= first && y <= last; }
  int count() const { return empty() ? 0 : last - first + 1; }
};

// A regular lon-lat grid given by its first and last cell centres and a step, in degrees.
struct GridSpec {
  double lon_first = 0, lon_last = 0, lat_first = 0, lat_last = 0, step = 1;
  int nlon() const;
  int nlat() const;
};

struct Config {
  std::string file;  // where it was read from, for messages
  std::string text;  // the file's text as load_config parsed it ("" for a config built in code)
  std::map<std::string, std::string> overrides;  // key -> "key=value" as given to --set
  // "--set k=2 replaces --set k=1 (...)" for each key set more than once: the stage warns.
  std::vector<std::string> replaced_overrides;
  // "<origin>: model.filters sets ... ignores it" for each key given that the chosen model or
  // optimizer does not read: the stage warns.
  std::vector<std::string> ignored_keys;
  // Where the value of `key` came from, for messages: "--set key=value" (an override of the key
  // or of a section above it) or the config file.
  std::string origin(const std::string& key) const;
  // The keys the file or a --set gives a value (a default left alone is not given), and whether
  // `key` or a key below it is one: a config for the later stages alone gives no preprocess keys,
  // and its defaults say nothing about the store those stages read.
  std::set<std::string> given;
  bool gives(const std::string& key) const;
  // The config as `stage` read it, for the files it writes (the store's and a checkpoint's
  // `config` attribute): the file's text as parsed (not read again: an edit since is not what
  // the stage runs with), then the --set overrides as YAML comments after it (listed by key, the
  // one that won for each; the text still parses as the file alone).
  std::string record(const std::string& stage) const;

  struct Run {
    std::string dir;          // the run's output folder; every stage writes below it
    int threads = 0;          // 0: all cores (shared by the ranks on a node)
    std::string device = "auto";  // auto (GPU local_rank if there are GPUs, else CPU) | cpu | cuda
    std::string log_level = "info";
    std::string communicator = "auto";  // auto (nccl on GPUs when the plugin has NCCL and ranks > 1) | mpi | nccl
  } run;

  struct Synth {                      // `downscale synth`: the embedded synthetic data source
    std::string dir = "data/synth";
    YearRange years{2000, 2004};
    double lon_min = -116, lon_max = -82, lat_min = 26, lat_max = 48;  // region written
    uint64_t seed = 42;
    bool present = false;  // the config file has a synth section (what `downscale synth` needs); --set does not count
  } synth;

  struct Fetch {                      // `downscale fetch`: what to cut from the sources
    std::string predictors_source;    // local path or OPeNDAP URL
    std::vector<FieldRequest> predictors;
    std::string predictand_source;    // predictand dataset and source both empty: no predictand
    std::string predictand_variable = "pr";  // (a GCM run's predictors alone)
    double lon_min = 0, lon_max = 0, lat_min = 0, lat_max = 0;
    bool has_box = false;  // the config gives fetch.lon and fetch.lat (a config for later stages alone may not)
    YearRange years;
    std::vector<int> season{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};  // months kept
    // Dataset definitions (configs/datasets/<name>.yaml or a path): URL, native names, units.
    // A `source` next to a dataset overrides its url (the server moved); a source alone is read
    // as is (every variable under its own name, unconverted). A dataset with per-variable urls
    // takes its url, or the source, as the base they are relative to.
    std::string predictors_dataset, predictand_dataset;
    bool has_predictand() const { return !predictand_dataset.empty() || !predictand_source.empty(); }
    int parallel = 2;                 // chunks in flight (one process each)
    int attempts = 5;                 // tries per chunk for transient failures (first included)
    double retry_delay = 5;           // seconds before the 2nd try; doubled before each next
    double piece_mb = 64;             // largest single read from the server (bounds memory)
    // A request to the server (an open, a read of at most piece_mb) that has not completed after
    // this many seconds is abandoned as a transient failure ("timed out"); 0: wait for ever.
    double timeout_s = 300;
  } fetch;

  struct Preprocess {
    GridSpec predictor_grid;          // the model's input grid
    bool has_predictor_grid = false;  // the config sets it (fetch widens the predictors' cut to its cells)
    // The observation grid the predictand is regridded onto; absent (has_predictand_grid false):
    // the observation grid as fetched, not regridded. The model's output grid is this grid, padded
    // to (4H-3) x (4W-3) for the convolutional models (preprocess/output_grid.h).
    GridSpec predictand_grid;
    bool has_predictand_grid = false;
    YearRange train_years, validation_years, test_years;
    // "train 1979..2002, validation none, test 2003..2008": what a store records of the years it
    // was built with (its split_years attribute) and train/store_settings.h compares; "" when the
    // config gives no years at all (a config for the later stages alone).
    std::string split_years_text() const;
    double wet_threshold = 0.99;      // mm/day; target = pr - threshold where pr >= threshold
    // Regridding method per field ("z@500"), per variable ("z", "pr") or "default":
    // bilinear | conservative | nearest. Unlisted fields use "default", itself bilinear.
    std::map<std::string, std::string> regrid;
    // The key of `regrid` that sets the method of field `name` (of variable `var`): the field's,
    // else the variable's, else "default"; "" when none does (bilinear).
    std::string regrid_key(const std::string& name, const std::string& var) const;
    std::string standardize = "grid_box";  // grid_box: mean/sd per box; field: one per channel
    std::string fill = "none";        // NaN in predictors: none (error) | nearest_time | climatology
    int compression = 0;              // deflate level 0..9 of x, y, pr (0: none, fastest to train from)
    int block_days = 128;             // days read, regridded and written at a time (memory bound)
    std::map<std::string, std::string> units;  // expected units per predictor variable (adds to built-ins)
    // A box is modelled (mask 1) when observed on at least this share of the training days; its
    // other days are NaN targets the losses skip.
    double min_valid_fraction = 0.9;
  } preprocess;

  struct Model {
    std::string name = "demo";        // demo | mnn | deepesd
    std::vector<int> filters{16, 16, 16};  // demo: input conv, after 1st and 2nd upsampling
  } model;

  struct Train {
    int batch_size = 32;              // per rank
    double learning_rate = 1e-4;      // per rank; multiplied by the number of ranks
    int epochs = 200;
    int patience = 0;                 // early stopping on validation loss; 0: off
    uint64_t seed = 1;
    std::string loss = "bernoulli_gamma";  // bernoulli_gamma | gaussian | mse (the model's head follows)
    std::string optimizer = "adam";   // adam | sgd
    double momentum = 0.9;            // sgd only
    double warmup_epochs = 0;         // under N ranks: linear warmup from learning_rate to N x it (Horovod)
    double reference_samples_per_second = 0;  // one rank's throughput, for the scaling efficiency; 0: none
    double allreduce_bucket_mb = 4;   // gradient buckets reduced while backward goes on; 0: one after backward
    std::string allreduce_dtype = "fp32";  // fp32 | bf16 | fp16: gradients carried in 16 bits between ranks
    // The train and validation splits read once into the backend's memory (device memory on a GPU)
    // and batches gathered there: auto when they fit in a share of the free memory (train/device_batches.h).
    std::string data_on_device = "auto";  // auto | true | false
    // One training step on the run's backend checked against the CPU's FP32 before training
    // (train/device_check.h): auto on a GPU, true on any backend (a CPU run in bf16), false never.
    std::string device_check = "auto";  // auto | true | false
    double stall_warning_seconds = 60;  // a rank waiting longer at a collective logs the missing ranks; 0: off
    double stall_abort_seconds = 1800;  // ... and past this ends the job rather than burn the allocation; 0: never
    std::string name;                 // several models from one store: train/<name>, predict/<name>, evaluate/<name>
    // Arithmetic of convolutions and matrix products (model/math_mode.h), predict's too:
    // tf32 | fp32 | bf16 | fp16. Weights, gradients and optimizer state stay FP32; activations
    // between convolutions are stored in 16 bits where the backend can (Net::set_activations16).
    std::string precision = "tf32";
    // Loss scaling (train/loss_scaler.h): "dynamic" or a fixed number; empty: dynamic under fp16,
    // 1 (none) otherwise.
    std::string loss_scale;
  } train;

  struct Predict {
    std::string checkpoint = "best";  // best | last | a path
    std::string predictors;           // a fetch folder of new predictors (e.g. a GCM run); empty: the store's test split
    std::string occurrence = "frequency";  // frequency (climate4R's adapted threshold) | p50
    int members = 0;                  // stochastic realizations written besides the deterministic one
    uint64_t seed = 1;                // for the stochastic members
    // A continuous predictand's prediction whose mean lies further than this many training standard
    // deviations from the training observations' is refused (predict/continuous.h); 0: unchecked,
    // for a scenario far outside the training climate on purpose.
    double plausible_sd = 5;
    // A precipitation prediction whose mean is more than this factor above or below the training
    // observations' is refused (predict/precipitation.h); 0: unchecked.
    double plausible_ratio = 5;
    // Days predicted and written at a time, rounded up to whole batches (memory bound: a 30-year
    // run is never in memory whole); 0: about 32 MiB of network output a channel (North America:
    // 352 days). The output does not depend on it.
    int block_days = 0;
    // New predictors standardized with the store's training statistics (`training`) or each field
    // against its own climatology over reference_years (`own`), as climate4R's scaleGrid offers.
    std::string standardize = "training";
    YearRange reference_years;        // required with standardize: own
    // own: the fetch folder whose climatology over reference_years standardizes the predictors;
    // empty: the predictors themselves. A scenario run (RCP8.5, 2081-2100) names its model's
    // historical run here: standardized against its own future climate, the warming would vanish.
    std::string reference_predictors;
    // New predictors' missing values: none | nearest_time | climatology (preprocess/fill.h);
    // empty: the store's preprocess.fill. A GCM run may have a gap the reanalysis had not.
    std::string fill;
    // New predictors are written to predict/<var>_<label>.nc; empty: the fetch run's folder name,
    // with _own under standardize: own (tas_cmip5_rcp85_own.nc).
    std::string label;
  } predict;

  struct Evaluate {
    int pcs = 20;                     // principal components of the linear baseline
    double ridge = 1.0;               // its ridge penalty
    // The seasons scored (evaluate/seasons.h): annual, DJF, MAM, JJA, SON. The annual figures are
    // always written; each other season adds its own (scores.json "seasons", scores.csv rows, ...).
    std::vector<std::string> seasons{"annual"};
  } evaluate;
};

// Reads a YAML config and applies overrides "dotted.key=value" (value in YAML syntax, so
// `--set fetch.years=[2000,2001]` works). Throws UsageError naming the file (or `--set`) and key.
Config load_config(const std::string& path, const std::vector<std::string>& overrides = {});

}  // namespace ds
