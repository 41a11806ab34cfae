#include "train/trainer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>

#include "io/atomic_file.h"
#include "io/error.h"
#include "io/training_store.h"
#include "model/counter_rng.h"
#include "model/loss.h"
#include "model/net.h"
#include "model/optimizer.h"
#include "train/batches.h"
#include "train/checkpoint.h"
#include "train/tensorboard.h"

namespace ds {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Mean loss over a whole split, in order, in inference mode (batch norm's running statistics,
// no dropout), without touching the gradients' consumers.
double evaluate(model::Net& net, model::Backend& be, model::LossKind loss, const StoreReader& store,
                const std::string& split, const model::Tensor& mask, int batch_size, Batch& batch) {
  const size_t n = store.count(split);
  net.set_mode(model::ForwardMode{false, 0});
  double sum = 0;
  for (size_t start = 0; start < n; start += batch_size) {
    std::vector<size_t> rows(std::min<size_t>(batch_size, n - start));
    std::iota(rows.begin(), rows.end(), start);
    read_batch(store, split, rows, batch);
    const auto& out = net.forward(batch.x);
    sum += model::masked_loss(be, loss, out, batch.y, mask, nullptr) * rows.size();
  }
  return sum / static_cast<double>(n);
}

std::string rng_to_string(const std::mt19937_64& rng) {
  std::ostringstream s;
  s << rng;
  return s.str();
}

}  // namespace

TrainReport train_model(const Config& cfg, const std::string& store_path, const std::string& out_dir, bool resume,
                        const LearningRateSchedule& schedule) {
  const auto t_start = Clock::now();
  StoreReader store(store_path);
  const StoreMeta& meta = store.meta();
  const size_t n_train = store.count("train"), n_val = store.count("validation");
  if (n_train == 0) throw InputError(store_path + ": the train split is empty");
  const auto& tc = cfg.train;

  model::ModelSpec spec;
  spec.name = cfg.model.name;
  spec.in_channels = meta.C();
  spec.in_h = meta.H();
  spec.in_w = meta.W();
  spec.filters = cfg.model.filters;
  spec.loss = tc.loss;
  const model::LossKind loss_kind = model::parse_loss(tc.loss, cfg.file + ": key 'train.loss'");
  if (spec.name == "deepesd") {
    // Its dense heads have one unit per land point, so the grid and mask are part of the model.
    spec.out_h = meta.Hy();
    spec.out_w = meta.Wy();
    spec.land_mask = meta.mask;
  }
  const LearningRateSchedule lr_at = schedule ? schedule : constant_learning_rate(tc.learning_rate);

  auto be = model::make_cpu_backend(cfg.run.threads);
  model::Net net(spec, *be);
  const auto out_shape = net.output_shape(1);
  if (out_shape.h != meta.Hy() || out_shape.w != meta.Wy())
    throw InputError(store_path + ": the store's predictand grid is " + std::to_string(meta.Hy()) + " x " +
                     std::to_string(meta.Wy()) + " but model '" + spec.name + "' outputs " +
                     std::to_string(out_shape.h) + " x " + std::to_string(out_shape.w));
  net.init(tc.seed);
  auto optimizer = model::make_optimizer(model::OptimizerSpec{tc.optimizer, tc.momentum}, net.params(), *be);
  const std::string last_path = out_dir + "/checkpoint_last.h5", best_path = out_dir + "/checkpoint_best.h5";

  std::mt19937_64 rng(tc.seed);
  TrainState state;
  if (resume) {
    if (!path_exists(last_path)) throw InputError(last_path + ": no checkpoint to resume from");
    state = load_checkpoint(last_path, net, optimizer.get());
    std::istringstream(state.rng_state) >> rng;
    spdlog::info("resuming from {} after epoch {}", last_path, state.epoch);
  }
  {
    AtomicFile summary(out_dir + "/model_summary.txt");
    std::ofstream(summary.temp_path()) << net.summary();
    summary.commit();
  }
  spdlog::info("model {}: {} parameters, input {}x{}x{}, output {}x{}, backend {}", spec.name, net.parameter_count(),
               spec.in_channels, spec.in_h, spec.in_w, out_shape.h, out_shape.w, be->name());
  spdlog::info("{} training and {} validation samples, batch {}, {} epochs, loss {}, optimizer {}, learning rate {}",
               n_train, n_val, tc.batch_size, tc.epochs, tc.loss, optimizer->name(),
               schedule ? std::string("from the schedule hook") : fmt::format("{:g}", tc.learning_rate));

  // metrics.csv is appended on resume, so it always holds every epoch once.
  const std::string csv_path = out_dir + "/metrics.csv";
  std::ofstream csv(csv_path, resume ? std::ios::app : std::ios::trunc);
  if (!resume) csv << "epoch,train_loss,val_loss,epoch_seconds,samples_per_second\n";
  // A new event file per run (and per resume): TensorBoard merges every file of the folder.
  EventWriter events(out_dir);

  const model::Tensor mask = mask_tensor(meta, *be);
  Batch batch{model::Tensor(*be, {1, 1, 1, 1}), model::Tensor(*be, {1, 1, 1, 1})};
  model::Tensor d_out(*be, net.output_shape(tc.batch_size));
  std::vector<size_t> order(n_train);

  TrainReport report;
  report.epochs = state.epoch;
  double batch_seconds = 0, epoch_seconds = 0;
  int64_t batches = 0;
  int epochs_run = 0;
  size_t samples = 0;
  for (int epoch = state.epoch + 1; epoch <= tc.epochs; ++epoch) {
    const auto t_epoch = Clock::now();
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    double loss_sum = 0, lr = 0;
    for (size_t start = 0; start < n_train; start += tc.batch_size) {
      const auto t_batch = Clock::now();
      std::vector<size_t> rows(order.begin() + start, order.begin() + std::min(n_train, start + tc.batch_size));
      std::sort(rows.begin(), rows.end());  // the order inside a batch does not matter; sorted reads are faster
      read_batch(store, "train", rows, batch);
      // Dropout masks come from (seed, global step): a resumed run draws the same ones.
      const int64_t step = optimizer->steps();
      net.set_mode(model::ForwardMode{true, model::splitmix64(tc.seed) ^ uint64_t(step)});
      const auto& out = net.forward(batch.x);
      d_out.reshape(out.shape());
      const double loss = model::masked_loss(*be, loss_kind, out, batch.y, mask, &d_out);
      if (!std::isfinite(loss))
        throw Error("training diverged: loss is " + std::to_string(loss) + " at epoch " + std::to_string(epoch));
      net.backward(d_out);
      lr = lr_at(epoch, step);
      optimizer->step(lr);
      loss_sum += loss * rows.size();
      batch_seconds += seconds_since(t_batch);
      ++batches;
      samples += rows.size();
    }
    const double train_loss = loss_sum / static_cast<double>(n_train);
    const double val_loss =
        n_val ? evaluate(net, *be, loss_kind, store, "validation", mask, tc.batch_size, batch) : train_loss;
    const double secs = seconds_since(t_epoch);
    epoch_seconds += secs;
    ++epochs_run;
    report.epochs = epoch;
    report.final_train_loss = train_loss;

    state.epoch = epoch;
    state.rng_state = rng_to_string(rng);
    const bool improved = val_loss < state.best_val_loss;
    if (improved) {
      state.best_val_loss = val_loss;
      state.epochs_without_improvement = 0;
    } else {
      ++state.epochs_without_improvement;
    }
    if (improved) save_checkpoint(best_path, net, optimizer.get(), state);
    save_checkpoint(last_path, net, optimizer.get(), state);
    csv << epoch << "," << train_loss << "," << val_loss << "," << secs << "," << n_train / secs << "\n" << std::flush;
    events.add_scalar("loss/train", train_loss, epoch);
    events.add_scalar("loss/validation", val_loss, epoch);
    events.add_scalar("learning_rate", lr, epoch);  // of the epoch's last step
    events.add_scalar("epoch_seconds", secs, epoch);
    spdlog::info("epoch {}/{}: train loss {:.4f}, validation loss {:.4f}{}, {:.1f} s", epoch, tc.epochs, train_loss,
                 val_loss, improved ? " (best)" : "", secs);
    if (tc.patience > 0 && state.epochs_without_improvement >= tc.patience) {
      spdlog::info("early stopping: no improvement of the validation loss for {} epochs", tc.patience);
      break;
    }
  }
  report.best_val_loss = state.best_val_loss;
  report.total_s = seconds_since(t_start);
  report.mean_batch_s = batches ? batch_seconds / batches : 0;
  report.mean_epoch_s = epochs_run ? epoch_seconds / epochs_run : 0;
  report.samples_per_s = batch_seconds > 0 ? samples / batch_seconds : 0;
  spdlog::info("mean batch time {:.4f} s, mean epoch time {:.2f} s, total time {:.1f} s, final loss {:.4f}, "
               "{:.1f} samples/s", report.mean_batch_s, report.mean_epoch_s, report.total_s, report.final_train_loss,
               report.samples_per_s);
  return report;
}

}  // namespace ds
