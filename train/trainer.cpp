#include "train/trainer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <array>
#include <csignal>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <utility>

#include "io/atomic_file.h"
#include "io/error.h"
#include "io/stop_signal.h"
#include "io/training_store.h"
#include "model/counter_rng.h"
#include "model/loss.h"
#include "model/loss_accumulator.h"
#include "model/math_mode.h"
#include "model/net.h"
#include "model/optimizer.h"
#include "train/batches.h"
#include "train/check.h"
#include "train/checkpoint.h"
#include "train/climatology_start.h"
#include "train/device_batches.h"
#include "train/device_check.h"
#include "train/device_communicator.h"
#include "train/divergence.h"
#include "train/fused_tensors.h"
#include "train/gradient_buckets.h"
#include "train/loss_scaler.h"
#include "train/metrics_csv.h"
#include "train/rank_agreement.h"
#include "train/rank_device_check.h"
#include "train/run_history.h"
#include "train/store_settings.h"
#include "train/tensorboard.h"
#include "train/test_hooks.h"
#include "train/timeline.h"
#include "train/training_setup.h"

namespace ds {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Mean loss over a whole split, in order, in inference mode (batch norm's running statistics,
// no dropout), without touching the gradients' consumers. Each rank evaluates its contiguous
// share of the split; the sums are added across ranks.
// `resident`: the split in backend memory (train.data_on_device), else read from the store. The
// batches' losses add up in backend memory (acc), read once at the end.
double validation_loss(model::Net& net, model::Backend& be, model::LossKind loss, const StoreReader& store,
                       const std::string& split, const model::Tensor& mask, int batch_size, Batch& batch,
                       Communicator& comm, const DeviceSplit* resident, model::LossAccumulator& acc) {
  const size_t n = store.count(split);
  const auto [lo, hi] = rank_slice(n, comm);
  net.set_mode(model::ForwardMode{false, 0});
  acc.reset();
  for (size_t start = lo; start < hi; start += batch_size) {
    std::vector<size_t> rows(std::min<size_t>(batch_size, hi - start));
    std::iota(rows.begin(), rows.end(), start);
    if (resident)
      resident->slice(start, rows.size(), batch);
    else
      read_batch(store, split, rows, batch);
    const auto& out = net.forward(batch.x);
    model::masked_loss_accumulate(be, loss, out, batch.y, mask, batch.valid, double(rows.size()), 0,
                                  acc.data(), nullptr);
  }
  double sum = acc.read()[0];
  comm.allreduce_sum(&sum, 1, split + " loss");
  return sum / static_cast<double>(n);
}

// Initial state from rank 0 (Horovod's broadcast_parameters + broadcast_optimizer_state):
// weights, batch-norm buffers and every optimizer slot.
// In one fused buffer (on the GPU under NCCL).
void broadcast_state(model::Net& net, model::Optimizer& opt, Communicator& comm, const std::string& what) {
  std::vector<model::Tensor*> ts;
  for (auto& p : net.params()) ts.push_back(p.value);
  for (auto& b : net.buffers()) ts.push_back(b.value);
  for (auto& slot : opt.slots())
    for (auto& t : *slot.tensors) ts.push_back(&t);
  FusedTensors fused(ts, comm.device_memory());
  fused.pack();
  comm.broadcast(fused.data(), fused.size(), 0, what);
  fused.unpack();
}

// Batch-norm running statistics are computed on each rank's own samples: averaged across ranks
// before every validation and checkpoint so that all ranks hold the same model.
void average_buffers(model::Net& net, Communicator& comm) {
  std::vector<model::Tensor*> ts;
  for (auto& b : net.buffers()) ts.push_back(b.value);
  if (ts.empty()) return;
  FusedTensors fused(ts, comm.device_memory());
  fused.pack();
  comm.allreduce_sum(fused.data(), fused.size(), "batch-norm running statistics");
  fused.scale(1.0f / float(comm.size()));
  fused.unpack();
}

uint64_t weights_checksum(model::Net& net) {
  uint64_t h = 1469598103934665603ull;
  for (auto& p : net.params())
    for (float v : p.value->to_host()) {
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      for (int k = 0; k < 4; ++k) h = (h ^ ((bits >> (8 * k)) & 0xff)) * 1099511628211ull;
    }
  return h;
}

std::string rng_to_string(const std::mt19937_64& rng) {
  std::ostringstream s;
  s << rng;
  return s.str();
}

// An epoch's line put back into metrics.csv from the checkpoint (metrics_csv.h): its event too,
// and said.
void report_restored_epoch(const std::string& line, const TrainState& state, const std::string& out_dir,
                           const std::string& last_path, TrainingEvents& events) {
  const EpochMetrics m = parse_metrics_line(line);
  events.epoch(m.epoch, m.train_loss, m.val_loss, state.epoch_learning_rate, m.seconds, m.samples_per_second);
  spdlog::warn("{}/metrics.csv lacked epoch {}, which {} holds (the run that trained it stopped before writing its "
               "line): restored from it, with its TensorBoard points",
               out_dir, m.epoch, last_path);
}

}  // namespace

TrainReport train_model(const Config& cfg, const std::string& store_path, const std::string& out_dir, bool resume,
                        const LearningRateSchedule& schedule, Communicator* comm_arg, const std::string& timeline_path) {
  const auto t_start = Clock::now();
  const auto single = make_single_process_communicator();
  // The host (MPI) communicator; `comm`, from the backend on, may be NCCL on top of it.
  Communicator& host = comm_arg ? *comm_arg : *single;
  const bool root = host.is_root();
  host.set_stall_limits(cfg.train.stall_warning_seconds, cfg.train.stall_abort_seconds);
  StoreReader store(store_path);
  const StoreMeta& meta = store.meta();
  const size_t n_train = store.count("train"), n_val = store.count("validation");
  if (n_train == 0) throw InputError(store_path + ": the train split is empty");
  // Every rank must read the same store (README: a shared file system) with the same config.
  check_ranks_read_alike(host, store_path, store.identity() + " " + store.content_hash(), cfg.file, cfg.record("train"));
  if (const std::string changed = store_settings_change(cfg, store); root && !changed.empty()) spdlog::warn("{}", changed);
  const auto& tc = cfg.train;

  check_loss_fits_predictand(cfg, meta, store_path);
  const model::ModelSpec spec = model_spec_for(cfg, meta);
  const model::LossKind loss_kind = model::parse_loss(tc.loss, cfg.origin("train.loss") + ": key 'train.loss'");
  const int64_t global_batch = int64_t(tc.batch_size) * host.size();
  const int64_t steps_per_epoch = (int64_t(n_train) + global_batch - 1) / global_batch;
  const LearningRateSchedule lr_at = scaled_learning_rate(
      schedule ? schedule : constant_learning_rate(tc.learning_rate), host.size(), tc.warmup_epochs, steps_per_epoch);

  // run.threads 0 means all the cores this rank may use, shared with the ranks that may use them too.
  const CpuThreads threads = cpu_threads(host, cfg.run.threads, "run.threads");
  // Each rank takes GPU local_rank when there are GPUs (run.device auto), else the CPU.
  auto be =
      model::make_backend(cfg.run.device, threads.threads, host.local_rank(), "run.device", cfg.origin("run.device"));
  model::apply_math_mode(*be, cfg.train.precision, root);
  const bool on_gpu = be->name().rfind("cuda", 0) == 0;
  if (!on_gpu && !threads.oversubscribed.empty()) spdlog::warn("{}", threads.oversubscribed);
  {
    // Ranks that see the same GPUs (same CUDA_VISIBLE_DEVICES) and are more than those GPUs
    // share some; with one GPU per task (--gpus-per-task) each sees its own and all is well.
    const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
    const std::string visible = v ? v : "(all)";
    const auto all = host.local_allgather(on_gpu ? visible : std::string("cpu"));
    const int same = int(std::count(all.begin(), all.end(), visible));
    if (on_gpu && same > model::cuda_device_count())
      spdlog::warn("{} ranks on this node share {} GPUs (CUDA_VISIBLE_DEVICES {}): start one rank per GPU "
                   "(ntasks-per-node = GPUs)", same, model::cuda_device_count(), visible);
  }
  // run.communicator (train/device_communicator.h). Under nccl even one rank goes through the
  // communicator and the gradient buckets, so a one-GPU run exercises NCCL (summing one rank is
  // exact: the same weights as without it).
  const auto device_comm = make_training_communicator(cfg.run.communicator, host, *be, root);
  Communicator& comm = device_comm ? *device_comm : host;
  comm.set_stall_limits(cfg.train.stall_warning_seconds, cfg.train.stall_abort_seconds);
  const bool distributed = comm.size() > 1 || comm.name() == "nccl";
  model::Net net(spec, *be);
  if (root && !net.activations16_summary().empty()) spdlog::info("{}", net.activations16_summary());
  if (root && !net.blocked_summary().empty()) spdlog::info("{}", net.blocked_summary());
  const auto out_shape = net.output_shape(1);
  if (out_shape.h != meta.Hy() || out_shape.w != meta.Wy())
    throw InputError(store_path + ": the store's predictand grid is " + std::to_string(meta.Hy()) + " x " +
                     std::to_string(meta.Wy()) + " but model '" + spec.name + "' outputs " +
                     std::to_string(out_shape.h) + " x " + std::to_string(out_shape.w));
  net.init(tc.seed);
  // A resumed run loads its biases. Rank 0 alone reads the train split's target for the
  // climatology (0.86 GB for North America): broadcast_state below gives its biases to every rank.
  const bool climatology_start = !resume && loss_kind != model::LossKind::kBernoulliGamma;
  if (climatology_start && root)
    spdlog::info("{}", start_from_climatology(net, loss_kind, training_climatology(store), meta.predictand_units));
  auto optimizer = model::make_optimizer(model::OptimizerSpec{tc.optimizer, tc.momentum}, net.params(), *be);
  const std::string last_path = out_dir + "/checkpoint_last.h5", best_path = out_dir + "/checkpoint_best.h5";

  std::mt19937_64 rng(tc.seed);
  TrainState state;
  if (resume) {
    if (!path_exists(last_path)) throw InputError(last_path + ": no checkpoint to resume from");
    state = load_checkpoint(last_path, net, optimizer.get());
    check_checkpoint_store(last_path, state, store);
    // (A mid-epoch checkpoint may be written after the epoch's last step: the end is allowed.)
    if (state.step_in_epoch > steps_per_epoch && state.global_batch == global_batch)
      throw InputError(fmt::format("{}: attribute step_in_epoch is {}, past the {} steps of an epoch at a global batch of "
                                   "{}: the checkpoint was damaged or edited after it was written",
                                   last_path, state.step_in_epoch, steps_per_epoch, global_batch));
  }
  // Before any collective that resuming decides (nothing_to_train below returns before the rest).
  check_ranks_start_alike(host, resume, state, optimizer->steps(), last_path);
  if (resume) {
    // A fresh run that stopped between its first checkpoint and taking the folder over
    // (train/run_history.h): the folder is made this run's before anything reads its history.
    // Rank 0 reads the files and decides; the others take the one thing they keep, whether the
    // best loss is forgotten (ranks disagreeing on it would disagree on early stopping, and wait
    // for each other at a collective one of them never reaches).
    HistorySettlement settlement;
    if (root) settlement = plan_history_settlement(out_dir, state);
    if (host.size() > 1) {
      float forget = settlement.forget_best_loss ? 1.0f : 0.0f;
      host.broadcast(&forget, 1, 0, "rank 0's settling of checkpoint_best.h5");
      settlement.forget_best_loss = forget != 0.0f;
    }
    settle_history(settlement, out_dir, net.summary(), state, root);
    std::istringstream(state.rng_state) >> rng;
    if (state.step_in_epoch > 0)
      spdlog::info("resuming from {} at epoch {}, step {} of {} (written when a signal stopped it)", last_path,
                   state.epoch + 1, state.step_in_epoch, steps_per_epoch);
    else
      spdlog::info("resuming from {} after epoch {}", last_path, state.epoch);
    // A finished run resumed (a requeued job that had ended, --resume by hand): training on would
    // rewrite its report with a run of no steps (0 samples/s) and append nothing to its metrics.
    // Said before the global batch is checked: a finished run resubmitted on other ranks has
    // nothing to train either.
    if (const std::string done = nothing_to_train(state, last_path, tc.epochs, tc.patience,
                                                  path_exists(out_dir + "/train_report.json"));
        !done.empty()) {
      if (root) spdlog::info("{}", done);
      if (root && settlement.forget_best_loss)
        spdlog::warn("{}: this run has no best model and trains no further: predict.checkpoint last predicts from its "
                     "last checkpoint, or raise train.epochs and --resume to train one", best_path);
      // Its last epoch's line, lost after the checkpoint, is put back all the same.
      if (root) {
        const std::string restored = restore_metrics(out_dir + "/metrics.csv", state.epoch, state.epoch_metrics);
        if (!restored.empty()) {
          TrainingEvents events(out_dir, state.epoch);  // the restored epoch's points
          report_restored_epoch(restored, state, out_dir, last_path, events);
        }
      }
      TrainReport finished;
      finished.already_done = true;
      finished.epochs = state.epoch;
      return finished;
    }
    check_resumed_global_batch(last_path, state.global_batch, global_batch, tc.batch_size, comm.size());
  }
  // A checkpoint written mid-epoch: that epoch goes on from its next step, with the loss of the
  // steps done (the rng is the one before its shuffle, so the same order comes out).
  int64_t resume_step = state.step_in_epoch;
  double resume_loss_sum = state.epoch_loss_sum;
  state.step_in_epoch = 0;
  state.epoch_loss_sum = 0;
  state.store = provenance_of(store);  // recorded in every checkpoint written from here
  state.global_batch = global_batch;
  state.config_text = cfg.record("train");  // this session's, also when it resumes an earlier one
  // A fresh run's id, in its checkpoints (train/run_history.h); an earlier version's run resumed
  // keeps none, so that its best model, which has none either, stays its own.
  if (!resume) state.run_id = new_run_id();
  // (The CPU backend's name holds its thread count: "cpu (oneDNN, 2 threads)".) A resumed run on
  // another setup keeps the earlier one's before it: both decided the arithmetic.
  // The learning rate after warmup (train.learning_rate x ranks, Horovod's rule) with them: a
  // resume at the same global batch on other ranks, or with another train.learning_rate, changes
  // Adam's steps, and is said (below) and recorded.
  const std::string lr_text =
      schedule ? std::string("from the schedule hook") : fmt::format("{:g}", lr_at(tc.epochs, int64_t(1) << 40));
  const std::string setup = fmt::format("{} rank(s), backend {}, train.precision {}, train.seed {}, learning rate {}",
                                        comm.size(), be->name(), cfg.train.precision, tc.seed, lr_text);
  const std::string latest = latest_setup(state.setup);
  if (const std::string changed =
          learning_rate_change(last_path, state.setup, lr_text, tc.learning_rate, host.size(), state.epoch + 1);
      root && !changed.empty())
    spdlog::warn("{}", changed);
  if (const std::string changed = seed_change(last_path, state.setup, tc.seed, state.epoch + 1); root && !changed.empty())
    spdlog::warn("{}", changed);
  // (A checkpoint of a version before the rate was recorded: the rest compared alone.)
  const bool same_setup =
      latest == setup || (setup_learning_rate(latest).empty() && latest == without_learning_rate(setup));
  // Another thread count, backend, precision or rank count sums in another order: the resumed run
  // is then no longer bit for bit the run that was never stopped (a requeue onto a node with other
  // cores, under run.threads 0, does it). Said, as the rate above is; not refused.
  if (root && resume && !latest.empty() && setup_arithmetic(latest) != setup_arithmetic(setup))
    spdlog::warn("{} was trained with {}; this run goes on with {}: its sums run in another order, so from epoch {} "
                 "on it is not bit for bit the run an uninterrupted job would have trained (the same threads, "
                 "backend, precision and ranks keep it so)",
                 last_path, setup_arithmetic(latest), setup_arithmetic(setup), state.epoch + 1);
  if (state.setup.empty())
    state.setup = setup;
  else if (!same_setup && state.setup.size() < 4000)  // (a bound against endless requeues)
    state.setup += fmt::format("; from epoch {}: {}", state.epoch + 1, setup);
  // The label names what the other ranks wait for when rank 0 is slow to arrive: reading the
  // training climatology takes it a while on a large store, and that is no stall.
  if (distributed)
    broadcast_state(net, *optimizer, comm,
                    climatology_start ? "the initial state from rank 0, which first reads the train split's climatology"
                                      : "the initial state from rank 0");
  std::optional<GradientBuckets> buckets;
  if (distributed)
    buckets.emplace(net.params(), size_t(tc.allreduce_bucket_mb * 1024 * 1024), comm,
                    parse_wire_type(tc.allreduce_dtype));
  spdlog::info("model {}: {} parameters, input {}x{}x{}, output {}x{}, backend {}", spec.name, net.parameter_count(),
               spec.in_channels, spec.in_h, spec.in_w, out_shape.h, out_shape.w, be->name());
  spdlog::info("{} training and {} validation samples, batch {}, {} epoch{}, loss {}, optimizer {}, learning rate {}",
               n_train, n_val, tc.batch_size, tc.epochs, tc.epochs == 1 ? "" : "s", tc.loss, optimizer->name(),
               schedule ? std::string("from the schedule hook") : fmt::format("{:g}", tc.learning_rate));
  if (n_val == 0)
    spdlog::info("no validation split in the store (its preprocess had no validation years): checkpoint_best.h5{} follows the "
                 "training loss; metrics.csv's val_loss stays empty", tc.patience > 0 ? " (and early stopping)" : "");
  // Legal, but rarely meant (a short season, a store cut for a test, a batch sized for another
  // domain): every epoch is then one optimizer step, and 200 epochs train 200 steps.
  if (const std::string note = one_step_epoch_note(n_train, tc.batch_size, host.size()); root && !note.empty())
    spdlog::warn("{}; a smaller train.batch_size gives more", note);
  if (distributed)
    spdlog::info("data parallel over {} ranks ({} on this node, local rank {}): global batch {}, learning rate x{} "
                 "after {:g} warmup epochs, gradients averaged in {} allreduce bucket(s) of up to {:g} MB overlapping "
                 "backward ({} floats, {} on the wire, communicator {}{})",
                 comm.size(), comm.local_size(), comm.local_rank(), global_batch, comm.size(), tc.warmup_epochs,
                 buckets->bucket_count(), tc.allreduce_bucket_mb, net.parameter_count(), tc.allreduce_dtype, comm.name(),
                 buckets->on_device() ? ", buckets in device memory" : "");
  if (distributed && root && tc.warmup_epochs > tc.epochs)
    spdlog::warn("train.warmup_epochs {:g} is more than train.epochs {}: the learning rate never reaches the x{} it "
                 "warms up to (training_setup records that rate, metrics its epochs' own)",
                 tc.warmup_epochs, tc.epochs, comm.size());

  // metrics.csv is appended on resume, so it always holds every epoch once.
  // Only rank 0 writes files.
  const std::string csv_path = out_dir + "/metrics.csv";
  // Each line is written whole and checked: a full disk stops training naming the file.
  AppendFile csv;
  // A new event file per run (and per resume): TensorBoard merges every file of the folder.
  std::optional<TrainingEvents> events;
  // A fresh run writes its history (metrics.csv, event files, model_summary.txt) only with its
  // first checkpoint, at the end of its first epoch (or at a SIGUSR1 before then: the requeued
  // job continues this run). In a folder holding an earlier run it replaces that run's history,
  // checkpoints and train_report.json then: stopped before (as its warning invites, to --resume
  // the earlier run instead), or failing in it, it leaves the earlier run whole, and a failed
  // run in an empty folder leaves nothing. Every rank decides the same before the start barrier.
  // An earlier run's best model without its last checkpoint is replaced too (pipeline/train.cpp
  // warns of either): a stop in this run's first epoch leaves it whole.
  const bool had_last = path_exists(last_path);
  const bool replaces_previous = !resume && (had_last || path_exists(best_path));
  const auto open_history = [&] {
    if (!root || csv.is_open()) return;
    // A fresh run's history starts: an earlier run's metrics, events, report and best model go
    // (predict would take that best model for this run's, were this one's not written yet).
    if (!resume)
      begin_history(out_dir, net.summary());
    else
      write_file_atomically(out_dir + "/model_summary.txt", net.summary());  // the run's, with its history
    const std::string restored = resume ? restore_metrics(csv_path, state.epoch, state.epoch_metrics) : "";
    const bool header = !path_exists(csv_path) || std::filesystem::file_size(csv_path) == 0;
    csv = AppendFile(csv_path, false);
    if (header) csv.append(std::string(kMetricsHeader) + "\n");
    // A fresh run's earlier event files went with begin_history: its file's first points are
    // epoch 1's. A resume's: the restored epoch's, or the next epoch's (points of later epochs,
    // abandoned where an older checkpoint was put back, are dropped from there on).
    events.emplace(out_dir, !resume ? int64_t(1) : restored.empty() ? int64_t(state.epoch) + 1 : int64_t(state.epoch));
    if (!restored.empty()) report_restored_epoch(restored, state, out_dir, last_path, *events);
  };
  if (resume) open_history();

  const model::Tensor mask = mask_tensor(meta, *be);
  Batch batch{model::Tensor(*be, {1, 1, 1, 1}), model::Tensor(*be, {1, 1, 1, 1})};
  if (std::find_if(meta.mask.begin(), meta.mask.end(), [](uint8_t v) { return v > 0; }) == meta.mask.end())
    throw InputError(model::loss_name(loss_kind) + " loss: the mask has no valid (land) points");
  // train.data_on_device: the splits in backend memory, batches gathered there (device_batches.h).
  std::optional<DeviceSplit> resident_train, resident_val;
  if (choose_data_on_device(tc.data_on_device, split_bytes(meta, n_train + n_val), *be, comm.local_size(), root)) {
    resident_train.emplace(store, "train", *be, root);
    if (n_val) resident_val.emplace(store, "validation", *be, root);
  }
  model::Tensor epoch_index(*be, {1, 1, 1, 1});  // the epoch's rows, step after step (resident_train)
  // The epoch's loss sum and first non-finite step, in backend memory: read back every
  // loss_check_steps steps (1 on the CPU, where reading costs nothing), at an interruption and at
  // the epoch's end, so a GPU step queues its work without waiting for the loss.
  model::LossAccumulator loss_acc(*be), val_acc(*be);
  const int64_t loss_check_steps = on_gpu ? 50 : 1;
  model::Tensor d_out(*be, net.output_shape(tc.batch_size));
  LossScaler scaler(tc.loss_scale, tc.precision);
  if (resume && scaler.restore(state.loss_scale, state.loss_scale_good_steps) && root)
    spdlog::info("loss scale {:g} restored from {}", scaler.scale(), last_path);
  if (root && scaler.enabled())
    spdlog::info("loss scaling: {}", scaler.dynamic() ? fmt::format("dynamic from {:g}", scaler.scale())
                                                      : fmt::format("fixed at {:g}", scaler.scale()));
  std::vector<size_t> order(n_train);
  if (tc.device_check != "false")
    check_device_step(net, *be, cfg, store, mask, loss_kind, threads.threads, scaler, comm, global_batch,
                      device_check_applies(tc.device_check, *be));

  // Every rank leaves this barrier at about the same time: the timeline's common origin.
  Timeline timeline = timeline_path.empty() ? Timeline() : Timeline(timeline_path);
  comm.barrier("start of training");
  timeline.set_origin(Clock::now());
  std::function<void(const std::vector<model::Param>&)> layer_done;
  bool stall_tested = false;
  if (distributed)
    layer_done = [&](const std::vector<model::Param>& ps) {
      buckets->ready(ps);
      if (!stall_tested && optimizer->steps() == 0 && buckets->started() > 0) {
        stall_tested = true;
        maybe_stall(comm, "backward");
      }
    };

  TrainReport report;
  report.epochs = state.epoch;
  report.first_epoch = state.epoch + 1;
  report.resumed = resume;
  // train_seconds: each epoch's training steps as the device ran them, from the epoch's start to
  // the read of its loss, which waits for every queued step. (The host's own time per step is
  // less on a GPU: it queues steps ahead, and with few steps an epoch the GPU's last steps would
  // fall outside; a 12-step epoch on an H100 read 1832 samples/s that way.)
  double train_seconds = 0, epoch_seconds = 0;
  int64_t batches = 0;
  int epochs_run = 0;
  size_t samples = 0;
  for (int epoch = state.epoch + 1; epoch <= tc.epochs; ++epoch) {
    const auto t_epoch = Clock::now();
    // A progress line every kProgressSeconds within the epoch (a North America epoch on a CPU
    // node is hours): step, throughput, time left in the epoch, and rank 0's mean loss so far.
    constexpr double kProgressSeconds = 10;
    auto last_progress = t_epoch;
    const std::string rng_before_shuffle = rng_to_string(rng);  // for a checkpoint written mid-epoch
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    double loss_sum = root ? resume_loss_sum : 0, lr = 0;
    loss_acc.reset(loss_sum);
    const double resumed_loss_sum = loss_sum;  // all ranks' steps before this run, on rank 0
    int64_t step_in_epoch = resume_step;
    const int64_t first_step_in_epoch = step_in_epoch;  // a resumed epoch's steps before this run
    resume_step = 0;
    resume_loss_sum = 0;
    const size_t first_start = std::min<size_t>(n_train, size_t(step_in_epoch) * global_batch);
    // This rank's rows of the global batch order[start, start + batch_size x size), split evenly across ranks.
    const auto rows_at = [&](size_t start) {
      const size_t n_global = std::min<size_t>(n_train - start, global_batch);
      const auto [lo, hi] = rank_slice(n_global, comm);
      std::vector<size_t> rows(order.begin() + start + lo, order.begin() + start + hi);
      std::sort(rows.begin(), rows.end());  // the order inside a batch does not matter; sorted reads are faster
      return rows;
    };
    size_t index_at = 0;  // this step's rows in epoch_index
    if (resident_train) {
      std::vector<float> all;
      for (size_t start = first_start; start < n_train; start += global_batch)
        for (size_t r : rows_at(start)) all.push_back(float(r));
      epoch_index.reshape({1, 1, 1, int(std::max<size_t>(all.size(), 1))});
      if (!all.empty()) epoch_index.upload(all.data());  // one upload per epoch
    }
    // The divergence error, from the device-side record of the first non-finite step.
    const auto check_loss = [&](int64_t at_step) {
      const auto acc = loss_acc.read();
      if (acc[1] < 0) return acc;
      const std::string culprit = first_nonfinite_parameter(net.params());
      // The device records the epoch's batch index (from 0); the message counts from 1, as the
      // progress line and the stop message do (steps loss scaling skipped count too).
      const auto in_epoch = [](int64_t index) { return index + 1; };
      throw Error("training diverged: the loss is " + std::to_string(acc[0]) + " at epoch " + std::to_string(epoch) +
                  ", step " + std::to_string(in_epoch(int64_t(acc[1]))) + " of " + std::to_string(steps_per_epoch) +
                  " (rank " + std::to_string(comm.rank()) + "); " +
                  (culprit.empty() ? "weights and gradients are finite, the forward pass overflowed"
                                   : "first non-finite: " + culprit) +
                  (at_step != int64_t(acc[1]) ? " (seen at step " + std::to_string(in_epoch(at_step)) + ")" : std::string()) +
                  " (lower train.learning_rate, or check the store)");
    };
    for (size_t start = first_start; start < n_train; start += global_batch) {
      const auto t_batch = Clock::now();
      const size_t n_global = std::min<size_t>(n_train - start, global_batch);
      const std::vector<size_t> rows = rows_at(start);
      // Dropout masks come from (seed, global step, rank): a resumed run draws the same ones.
      const int64_t step = optimizer->steps();
      if (step == 0) maybe_inject_failure(comm);
      // This rank's mean gradient weighs rows here / rows in all in the global batch's mean.
      if (distributed) buckets->begin(float(rows.size()) / float(n_global));
      if (!rows.empty()) {
        if (resident_train)
          resident_train->gather(rows, epoch_index.data() + index_at, batch);
        else
          read_batch(store, "train", rows, batch);
        index_at += rows.size();
        const auto t_forward = Clock::now();
        timeline.add("data", Timeline::kStep, t_batch, t_forward, step, epoch);
        net.set_mode(model::ForwardMode{true, model::splitmix64(tc.seed) ^ uint64_t(step) ^ (uint64_t(comm.rank()) << 48)});
        const auto& out = net.forward(batch.x);
        d_out.reshape(out.shape());
        model::masked_loss_accumulate(*be, loss_kind, out, batch.y, mask, batch.valid, double(rows.size()),
                                      step_in_epoch, loss_acc.data(), &d_out);
        // By the epoch's batches, not the optimizer's steps, which loss scaling's skipped steps do
        // not advance (a diverging fp16 run would check every batch, or never).
        if ((step_in_epoch + 1) % loss_check_steps == 0) check_loss(step_in_epoch);
        scaler.scale_loss_gradient(*be, d_out);  // FP16's range: backward sees S x the gradient
        const auto t_backward = Clock::now();
        timeline.add("forward", Timeline::kStep, t_forward, t_backward, step, epoch);
        // Under MPI each finished layer's gradients join their bucket, whose allreduce starts as
        // soon as it is full while backward goes on.
        net.backward(d_out, layer_done);
        timeline.add("backward", Timeline::kStep, t_backward, Clock::now(), step, epoch);
      }
      if (distributed) {
        const auto t_wait = Clock::now();
        for (const auto& span : buckets->finish("gradients of step " + std::to_string(step)))
          timeline.add("allreduce bucket", Timeline::kCommunication, span.start, span.end, step, epoch);
        timeline.add("allreduce", Timeline::kStep, t_wait, Clock::now(), step, epoch);
      }
      const auto t_optimizer = Clock::now();
      lr = lr_at(epoch, step);
      // After the allreduce: every rank checks the same gradients, so all skip the same steps.
      if (scaler.unscale_or_skip(*be, net.params())) optimizer->step(lr);
      timeline.add("optimizer", Timeline::kStep, t_optimizer, Clock::now(), step, epoch);
      ++batches;
      samples += rows.size();
      ++step_in_epoch;
      if (root && seconds_since(last_progress) >= kProgressSeconds && step_in_epoch < steps_per_epoch) {
        last_progress = Clock::now();
        const double done = double(step_in_epoch - first_step_in_epoch), secs = seconds_since(t_epoch);
        const double sum = check_loss(step_in_epoch - 1)[0];  // this rank's sum of the epoch's losses x rows
        spdlog::info("epoch {}/{}: step {}/{}, {:.1f} samples/s, {:.0f} s left in the epoch, loss so far {:.4f}", epoch,
                     tc.epochs, step_in_epoch, steps_per_epoch, done * double(global_batch) / secs,
                     secs / done * double(steps_per_epoch - step_in_epoch),
                     // This rank's mean over this run's steps: a resumed epoch's earlier sum is every rank's.
                     (sum - resumed_loss_sum) / double(std::max<int64_t>(1, int64_t(done) * tc.batch_size)));
      }

      // SIGINT/SIGTERM/SIGUSR1: the step is complete; write checkpoint_last.h5 mid-epoch and stop.
      const std::string where = fmt::format("epoch {} step {} of {}", epoch, step_in_epoch, steps_per_epoch);
      if (const int sig = agreed_stop_signal(comm, where)) {
        loss_sum = check_loss(step_in_epoch - 1)[0];
        comm.allreduce_sum(&loss_sum, 1, "training loss at the interruption");
        TrainState mid = state;
        if (scaler.dynamic()) mid.loss_scale = scaler.scale(), mid.loss_scale_good_steps = scaler.good_in_a_row();
        mid.epoch = epoch - 1;
        mid.rng_state = rng_before_shuffle;
        mid.step_in_epoch = step_in_epoch;
        mid.epoch_loss_sum = loss_sum;
        const bool requeue = sig == SIGUSR1;
        // A fresh run stopped in its first epoch over an earlier run: that run stays whole (the
        // warning at the start said how to continue it), and this one's few steps are dropped.
        // Not for SIGUSR1: that is Slurm's warning before the time limit, and the requeued job
        // resumes what was submitted, this run, so its history starts here with its checkpoint.
        if (replaces_previous && epoch == 1 && !requeue)
          throw Interrupted(sig,
                            fmt::format("interrupted by {} at {}; nothing written: the earlier run's {}/{}, "
                                        "metrics.csv and TensorBoard events are as they were (this fresh run had not "
                                        "finished its first epoch{})",
                                        signal_name(sig), where, out_dir,
                                        had_last ? "checkpoint_last.h5" : "checkpoint_best.h5",
                                        had_last ? "; --resume continues the earlier run" : ""));
        // Under MPI each rank's batch-norm running statistics differ until the epoch's end
        // averages them: the checkpoint holds rank 0's (weights and optimizer are the same on all).
        if (root) save_checkpoint(last_path, net, optimizer.get(), mid);
        // A fresh run in its first epoch: the requeued job continues it, so its history starts
        // here. After the checkpoint: a failed write leaves the earlier run whole.
        if (root && !csv.is_open()) open_history();
        comm.barrier("checkpoint at the interruption");
        throw Interrupted(sig,
                          fmt::format("interrupted by {} at {}; {} {}/checkpoint_last.h5 ({})", signal_name(sig), where,
                                      root ? "wrote" : "rank 0 wrote", out_dir,
                                      requeue ? fmt::format("exit {}: the planned checkpoint-and-requeue; the requeued job "
                                                            "resumes from it (--resume-auto, or --resume by hand)",
                                                            kExitRequeue)
                                              : "resume with --resume"),
                          requeue ? kExitRequeue : 0);
      }
    }
    loss_sum = check_loss(step_in_epoch - 1)[0];  // waits for the epoch's last step on the device
    train_seconds += seconds_since(t_epoch);
    const auto t_validation = Clock::now();
    comm.allreduce_sum(&loss_sum, 1, "training loss of epoch " + std::to_string(epoch));
    if (distributed) average_buffers(net, comm);
    const double train_loss = loss_sum / static_cast<double>(n_train);
    const double val_loss =
        n_val ? validation_loss(net, *be, loss_kind, store, "validation", mask, tc.batch_size, batch, comm,
                        resident_val ? &*resident_val : nullptr, val_acc) : train_loss;
    const int64_t last_step = optimizer->steps() - 1;
    timeline.add("validation", Timeline::kStep, t_validation, Clock::now(), last_step, epoch);
    const double secs = seconds_since(t_epoch);
    epoch_seconds += secs;
    ++epochs_run;
    report.epochs = epoch;
    report.final_train_loss = train_loss;
    report.skipped_steps = scaler.skipped_total();
    report.loss_scale = scaler.scale();
    if (root && scaler.enabled())
      spdlog::info("loss scaling: {} step(s) skipped for non-finite gradients in epoch {}, scale now {:g}",
                   scaler.take_skipped_in_epoch(), epoch, scaler.scale());

    state.epoch = epoch;
    if (scaler.dynamic()) state.loss_scale = scaler.scale(), state.loss_scale_good_steps = scaler.good_in_a_row();
    state.rng_state = rng_to_string(rng);
    const bool improved = val_loss < state.best_val_loss;
    if (improved) {
      state.best_val_loss = val_loss;
      state.epochs_without_improvement = 0;
    } else {
      ++state.epochs_without_improvement;
    }
    // An epoch resumed after its last step ran none here: its learning rate is its last step's.
    if (first_start >= n_train) lr = lr_at(epoch, std::max<int64_t>(0, optimizer->steps() - 1));
    // Without a validation split val_loss is left empty (Keras writes no val_loss then) and
    // TensorBoard's validation run gets no point: a copy of the training loss there would read
    // as a validation curve. The rate: the samples this run trained in the epoch (a resumed
    // epoch's earlier steps ran before it), none (empty) for an epoch resumed after its last step.
    const EpochMetrics metrics{epoch, train_loss, n_val ? val_loss : NAN, secs,
                               first_start < n_train ? double(n_train - first_start) / secs : NAN};
    state.epoch_metrics = metrics_line(metrics);  // in the checkpoints too, for a resume that lacks it
    state.epoch_learning_rate = lr;
    const auto t_checkpoint = Clock::now();
    if (root && !csv.is_open()) {
      // A fresh run over an earlier one (its first epoch): its last checkpoint first, so that a
      // failed write leaves the earlier run whole (its checkpoints, metrics.csv and events); once
      // it stands, the earlier history goes, and the earlier best model with it.
      save_checkpoint(last_path, net, optimizer.get(), state);
      open_history();
      if (improved) save_checkpoint(best_path, net, optimizer.get(), state);
    } else if (root) {
      // The last checkpoint first, as in the first epoch: a run stopped between the two holds the
      // improving epoch's last checkpoint beside an earlier best model, which its resume replaces
      // (train/run_history.h); a best model of a later epoch than the last checkpoint's is then
      // never this run's history.
      save_checkpoint(last_path, net, optimizer.get(), state);
      if (improved) save_checkpoint(best_path, net, optimizer.get(), state);
    }
    if (root) {
      // The events first: a run stopped between the two then lacks the metrics.csv line, which a
      // resume restores from the checkpoint together with the events (a point written twice at
      // one step is drawn once); the other order could lose the epoch's points for good, as a
      // resume finding the line whole restores nothing.
      events->epoch(epoch, train_loss, metrics.val_loss, lr, secs, metrics.samples_per_second);
      csv.append(state.epoch_metrics + "\n");
      timeline.add("checkpoint", Timeline::kStep, t_checkpoint, Clock::now(), last_step, epoch);
    }
    // The losses are every rank's together: rank 0 says them, as Horovod's examples do (each rank's
    // copy made 4 ranks x 200 epochs of identical lines).
    if (root && n_val)
      spdlog::info("epoch {}/{}: train loss {:.4f}, validation loss {:.4f}{}, {:.1f} s", epoch, tc.epochs, train_loss,
                   val_loss, improved ? " (best)" : "", secs);
    else if (root)  // no validation loss to show: the training loss stands in for it (said once at the start)
      spdlog::info("epoch {}/{}: train loss {:.4f}{}, {:.1f} s", epoch, tc.epochs, train_loss,
                   improved ? " (best)" : "", secs);
    if (tc.patience > 0 && state.epochs_without_improvement >= tc.patience) {
      if (root) spdlog::info("early stopping: no improvement of the validation loss for {} epochs", tc.patience);
      break;
    }
  }
  if (root && csv.is_open()) csv.close();  // synced and checked, as the checkpoints it describes
  // Without a validation split the best model follows the training loss: no validation loss
  // was ever computed, and the report says none (null) rather than the training loss under its name.
  report.best_val_loss = n_val ? state.best_val_loss : NAN;
  report.best_model_by = n_val ? "validation loss" : "training loss (no validation split)";
  report.total_s = seconds_since(t_start);
  report.mean_batch_s = batches ? train_seconds / batches : 0;
  report.mean_epoch_s = epochs_run ? epoch_seconds / epochs_run : 0;
  report.samples_per_s = train_seconds > 0 ? samples / train_seconds : 0;
  report.weights_checksum = weights_checksum(net);
  // Every rank's throughput, in its slot (an allreduce of a mostly-zero vector: a gather).
  std::vector<double> per_rank(comm.size(), 0.0);
  per_rank[comm.rank()] = report.samples_per_s;
  comm.allreduce_sum(per_rank.data(), per_rank.size(), "throughput report");
  report.total_samples_per_s = std::accumulate(per_rank.begin(), per_rank.end(), 0.0);
  double all_samples = double(samples);
  comm.allreduce_sum(&all_samples, 1, "sample count");
  report.run_samples_per_s = report.total_s > 0 ? all_samples / report.total_s : 0;
  double nodes = comm.local_rank() == 0 ? 1 : 0;  // one local rank 0 per node
  comm.allreduce_sum(&nodes, 1, "node count");
  const auto backends = comm.gather(be->name(), 0);
  if (distributed) spdlog::info("final weights checksum {:016x}", report.weights_checksum);
  if (root) {
    spdlog::info("mean batch time {:.4f} s, mean epoch time {:.2f} s, total time {:.1f} s, final loss {:.4f}, "
                 "{:.1f} samples/s in the training steps, {:.1f} over the whole run (validation, checkpoints and "
                 "start-up included)", report.mean_batch_s, report.mean_epoch_s, report.total_s,
                 report.final_train_loss, report.total_samples_per_s, report.run_samples_per_s);
    if (distributed) {
      std::string list;
      for (size_t r = 0; r < per_rank.size(); ++r) list += fmt::format("{}{:.1f}", r ? ", " : "", per_rank[r]);
      spdlog::info("throughput: {:.1f} samples/s in total over {} ranks; per rank: {}", report.total_samples_per_s,
                   comm.size(), list);
    }
    if (tc.reference_samples_per_second > 0)
      spdlog::info("scaling efficiency {:.0f}% against {:g} samples/s on one rank ({:.2f}x speed-up on {} ranks)",
                   100.0 * report.total_samples_per_s / (tc.reference_samples_per_second * comm.size()),
                   tc.reference_samples_per_second, report.total_samples_per_s / tc.reference_samples_per_second,
                   comm.size());
    write_report(out_dir + "/train_report.json", report, per_rank, backends, int(nodes),
                 threads.threads,
                 tc.batch_size, tc.reference_samples_per_second);
  }
  // After the report: a timeline that cannot be written (its file is checked at the start) costs
  // the trace alone, not the run's report.
  if (timeline.enabled()) {
    timeline.write(comm);
    if (root) spdlog::info("wrote the timeline {}", timeline_path);
  }
  return report;
}

}  // namespace ds
