#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>

#include <nlohmann/json.hpp>

#include "io/error.h"
#include "io/hdf5_file.h"
#include "model/backend.h"
#include "model/net.h"
#include "preprocess/output_grid.h"
#include "io/training_store.h"
#include "event_file_reader.h"
#include "support/log_capture.h"
#include "support/test_support.h"
#include "train/check.h"
#include "train/climatology_start.h"
#include "train/checkpoint.h"
#include "train/metrics_csv.h"
#include "train/train_report.h"
#include "train/trainer.h"
#include "support/scoped_env.h"

using namespace ds;

namespace {

// A tiny store: 2 channels on 4 x 5, output 13 x 17, where rain falls where channel 0 is
// positive (upsampled), so a small CNN can learn it. 96 train, 32 validation samples. Another
// `predictand` than pr labels the same values as a continuous variable (in degC), for the
// Gaussian and MSE losses, which train accepts for such a predictand only.
std::string write_tiny_store(const test::TempDir& d, const std::string& predictand = "pr") {
  StoreMeta m;
  m.predictand = predictand;
  if (predictand != "pr") m.predictand_units = "degC";
  m.channels = {"z@500", "hus@850"};
  for (int i = 0; i < 5; ++i) m.predictor_lon.push_back(-110 + 2 * i);
  for (int j = 0; j < 4; ++j) m.predictor_lat.push_back(30 + 2 * j);
  for (int i = 0; i < 17; ++i) m.predictand_lon.push_back(-109.75 + 0.5 * i);
  for (int j = 0; j < 13; ++j) m.predictand_lat.push_back(29.75 + 0.5 * j);
  m.mask.assign(13 * 17, 1);
  for (int j = 0; j < 13; ++j) m.mask[j * 17] = 0;  // an ocean column
  m.mean.assign(2 * 20, 0);
  m.sd.assign(2 * 20, 1);
  std::mt19937_64 rng(7);
  std::normal_distribution<float> n01;
  auto make = [&](int n, std::vector<float>& x, std::vector<float>& y, std::vector<float>& pr, std::vector<int64_t>& t) {
    for (int s = 0; s < n; ++s) {
      for (int k = 0; k < 40; ++k) x.push_back(n01(rng));
      const float* c0 = &x[x.size() - 40];
      for (int j = 0; j < 13; ++j)
        for (int i = 0; i < 17; ++i) {
          const float v = c0[std::min(3, j / 4) * 5 + std::min(4, i / 4)];
          const float amount = v > 0 ? 3.0f * v + 0.5f : 0.0f;
          y.push_back(amount);
          pr.push_back(amount > 0 ? amount + 0.99f : 0.0f);
        }
      t.push_back(static_cast<int64_t>(t.size()));
    }
  };
  const std::string path = d / (predictand == "pr" ? "store.h5" : "store_" + predictand + ".h5");
  StoreWriter w(path, m);
  std::vector<float> x, y, pr;
  std::vector<int64_t> t;
  make(96, x, y, pr, t);
  w.write_split("train", x, y, pr, t);
  x.clear(), y.clear(), pr.clear(), t.clear();
  make(32, x, y, pr, t);
  w.write_split("validation", x, y, pr, t);
  w.close();
  return path;
}

// The tiny store in d, with an empty folder under d for each of `runs` to train into.
std::string tiny_store_and_runs(const test::TempDir& d, std::initializer_list<const char*> runs) {
  for (const char* run : runs) std::filesystem::create_directories(d / run);
  return write_tiny_store(d);
}

Config tiny_config(const std::string& file, int epochs) {
  Config c;
  c.file = file;
  c.run.threads = 1;  // one thread: the resume test compares bits
  c.model.name = "demo";
  c.model.filters = {8, 8, 8};
  c.train.batch_size = 16;
  c.train.learning_rate = 3e-3;
  c.train.epochs = epochs;
  c.train.seed = 3;
  return c;
}

// In FP32 whatever the machine's default: the loss-scaling tests count overflows of FP32 steps.
Config tiny_fp32_config(const std::string& file, int epochs) {
  Config c = tiny_config(file, epochs);
  c.train.precision = "fp32";
  return c;
}

std::vector<float> weights(const std::string& ckpt, const std::string& name) {
  H5File f = H5File::open(ckpt);
  size_t n = 1;
  for (auto d : f.dims(name)) n *= d;
  std::vector<float> w(n);
  f.read(name, w.data());
  return w;
}

// Every dataset of a checkpoint must be the same bits in both.
void expect_same_checkpoints(const std::string& a, const std::string& b) {
  const auto names = H5File::open(a).datasets("/");
  ASSERT_GT(names.size(), 10u);
  EXPECT_EQ(names, H5File::open(b).datasets("/"));
  for (const auto& name : names) EXPECT_EQ(weights(a, name), weights(b, name)) << name;
}

std::vector<std::string> csv_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// The epoch, train and validation loss of each line of a metrics.csv: what two runs training the
// same bits share (the seconds and rates differ).
std::vector<std::string> csv_losses(const std::string& path) {
  std::vector<std::string> out;
  for (const auto& l : csv_lines(path)) {
    size_t cut = l.find(',');
    cut = l.find(',', cut + 1);
    out.push_back(l.substr(0, l.find(',', cut + 1)));
  }
  return out;
}

}  // namespace

TEST(Trainer, LearnsAndWritesCheckpointsAndMetrics) {
  test::TempDir d;
  const auto store = tiny_store_and_runs(d, {"a"});
  Config cfg = tiny_config(d / "c.yaml", 8);
  cfg.text = "train: {epochs: 8}\n";  // as load_config would have read it from c.yaml
  cfg.overrides["train.seed"] = "train.seed=3";
  const auto r = train_model(cfg, store, d / "a", false);
  EXPECT_EQ(r.epochs, 8);
  const auto lines = csv_lines(d / "a/metrics.csv");
  ASSERT_EQ(lines.size(), 9u);
  const double first = std::stod(lines[1].substr(lines[1].find(',') + 1));
  EXPECT_LT(r.final_train_loss, 0.8 * first) << "training did not reduce the loss";
  EXPECT_TRUE(std::filesystem::exists(d / "a/checkpoint_best.h5"));
  EXPECT_TRUE(std::filesystem::exists(d / "a/checkpoint_last.h5"));
  EXPECT_TRUE(std::filesystem::exists(d / "a/model_summary.txt"));
  // The checkpoint says how it was trained: the config file's text, the ranks, backend, precision
  // and seed (the arithmetic depends on them).
  const TrainState state = read_checkpoint_state(d / "a/checkpoint_last.h5");
  EXPECT_EQ(state.setup.rfind("1 rank(s), backend cpu (oneDNN, ", 0), 0u) << state.setup;
  EXPECT_NE(state.setup.find(", train.precision tf32, train.seed 3"), std::string::npos) << state.setup;
  EXPECT_EQ(state.config_text, "train: {epochs: 8}\n# --set overrides given to downscale train (they win over the file "
                                "above):\n#   --set train.seed=3\n");
  // TensorBoard: runs train/ and validation/, one event file each, whose `loss` curves are
  // metrics.csv's, epoch by epoch.
  int seen = 0;
  for (const std::string run : {"train", "validation"}) {
    const auto files = test::event_files(d / ("a/tensorboard/" + run));
    ASSERT_EQ(files.size(), 1u) << run;
    std::string version;
    const auto points = test::scalars(test::read_records(files[0]), &version);
    EXPECT_EQ(version, "brain.Event:2");
    for (const auto& p : points) {
      if (p.tag != "loss") continue;
      const std::string& line = lines[size_t(p.step)];
      const size_t c1 = line.find(','), c2 = line.find(',', c1 + 1), c3 = line.find(',', c2 + 1);
      const double want = run == "train" ? std::stod(line.substr(c1 + 1, c2 - c1 - 1))
                                         : std::stod(line.substr(c2 + 1, c3 - c2 - 1));
      // The csv prints 6 significant digits and the event holds a float: 1e-5 relative covers both.
      EXPECT_NEAR(p.value, want, 1e-5 * std::abs(want)) << run << " epoch " << p.step;
      ++seen;
    }
  }
  EXPECT_EQ(seen, 16);  // 8 epochs x 2 curves
}

// Training 4 epochs, stopping, and resuming to 8 ends with the same bits as 8 epochs at once:
// the checkpoint holds weights, Adam's moments and step, the epoch and the shuffling RNG.
TEST(Trainer, ResumeIsBitIdentical) {
  test::TempDir d;
  const auto store = tiny_store_and_runs(d, {"full", "split"});
  train_model(tiny_config(d / "c.yaml", 6), store, d / "full", false);
  train_model(tiny_config(d / "c.yaml", 3), store, d / "split", false);
  train_model(tiny_config(d / "c.yaml", 6), store, d / "split", true);
  const auto names = H5File::open(d / "full/checkpoint_last.h5").datasets("/");
  ASSERT_GT(names.size(), 10u);  // weights, biases and both Adam moments of every layer
  for (const auto& name : names)
    EXPECT_EQ(weights(d / "full/checkpoint_last.h5", name), weights(d / "split/checkpoint_last.h5", name)) << name;
  EXPECT_EQ(csv_lines(d / "split/metrics.csv").size(), 7u);  // header + 6 epochs, none twice
  // Resumed on the same setup: one setup recorded. On another (2 threads from epoch 7): both, in order.
  const std::string one = read_checkpoint_state(d / "split/checkpoint_last.h5").setup;
  EXPECT_EQ(one.find("; from epoch"), std::string::npos) << one;
  Config two_threads = tiny_config(d / "c.yaml", 7);
  two_threads.run.threads = 2;
  train_model(two_threads, store, d / "split", true);
  EXPECT_EQ(read_checkpoint_state(d / "split/checkpoint_last.h5").setup,
            one +
                "; from epoch 7: 1 rank(s), backend cpu (oneDNN, 2 threads), train.precision tf32, train.seed 3, "
                "learning rate 0.003");
}

// A run stopped after an epoch's checkpoint and before its line of metrics.csv (a full disk failed
// the line, a node was lost) resumes with the line restored from the checkpoint, in metrics.csv
// and the event files, once; a line cut off by the failed write is dropped. Before, the resume
// started after that epoch and its line was missing for good (an audit: epochs 1, 3, 4).
TEST(Trainer, AnEpochMissingFromMetricsIsRestoredFromTheCheckpoint) {
  test::TempDir d;
  const auto store = tiny_store_and_runs(d, {"full", "cut"});
  train_model(tiny_config(d / "c.yaml", 3), store, d / "full", false);
  train_model(tiny_config(d / "c.yaml", 2), store, d / "cut", false);
  const auto full = csv_lines(d / "full/metrics.csv");
  ASSERT_EQ(full.size(), 4u);
  // metrics.csv as the failed write of epoch 2 left it: epoch 1, and half of epoch 2's line.
  {
    std::ofstream out(d / "cut/metrics.csv", std::ios::trunc);
    out << full[0] << "\n" << full[1] << "\n" << full[2].substr(0, 5);
  }
  for (const auto& f : test::event_files(d / "cut/tensorboard/train")) std::filesystem::remove(f);
  test::LogCapture log;
  train_model(tiny_config(d / "c.yaml", 3), store, d / "cut", true);
  EXPECT_NE(log.str().find("lacked epoch 2, which " + std::string(d / "cut/checkpoint_last.h5") + " holds"),
            std::string::npos) << log.str();
  EXPECT_EQ(csv_losses(d / "cut/metrics.csv"), csv_losses(d / "full/metrics.csv"));  // the same bits trained
  // The restored epoch's event: its loss and learning rate, in the resumed run's event file.
  std::map<std::pair<std::string, int64_t>, double> points;
  std::string version;
  for (const auto& f : test::event_files(d / "cut/tensorboard/train"))
    for (const auto& p : test::scalars(test::read_records(f), &version)) points[{p.tag, p.step}] = p.value;
  EXPECT_EQ(points.count({"loss", 2}), 1u);
  EXPECT_NEAR((points[{"learning_rate", 2}]), 3e-3, 1e-9);
  EXPECT_EQ(points.count({"loss", 3}), 1u);
  // A resume that finds metrics.csv whole changes nothing in it.
  train_model(tiny_config(d / "c.yaml", 4), store, d / "cut", true);
  auto lines = csv_lines(d / "cut/metrics.csv");
  ASSERT_EQ(lines.size(), 5u);
  // The run's last epoch lost the same way: a resume finds nothing to train, and puts it back.
  {
    std::ofstream out(d / "cut/metrics.csv", std::ios::trunc);
    for (size_t i = 0; i < 4; ++i) out << lines[i] << "\n";
  }
  EXPECT_TRUE(train_model(tiny_config(d / "c.yaml", 4), store, d / "cut", true).already_done);
  EXPECT_EQ(csv_lines(d / "cut/metrics.csv"), lines);
}

// An older checkpoint_last.h5 put back (epoch 2 of a run trained on to 4): the resume trains
// epochs 3 and 4 again, and TensorBoard shows each epoch once (before, the Python loader showed
// the abandoned points too: 1, 2, 3, 4, 3, 4).
TEST(Trainer, AResumeFromAnOlderCheckpointDropsTheAbandonedEpochsFromTensorBoard) {
  test::TempDir d;
  const auto store = tiny_store_and_runs(d, {"run"});
  train_model(tiny_config(d / "c.yaml", 2), store, d / "run", false);
  std::filesystem::copy_file(d / "run/checkpoint_last.h5", d / "epoch2.h5");
  train_model(tiny_config(d / "c.yaml", 4), store, d / "run", true);
  std::filesystem::copy_file(d / "epoch2.h5", d / "run/checkpoint_last.h5",
                             std::filesystem::copy_options::overwrite_existing);
  train_model(tiny_config(d / "c.yaml", 4), store, d / "run", true);
  EXPECT_EQ(csv_lines(d / "run/metrics.csv").size(), 5u);  // header + 4 epochs, as settled
  for (const std::string run : {"train", "validation"}) {
    EXPECT_EQ(test::event_files(d / ("run/tensorboard/" + run)).size(), 3u) << run;
    std::vector<int64_t> steps;
    const auto curves = test::shown(d / ("run/tensorboard/" + run));
    for (const auto& p : curves.at("loss")) steps.push_back(p.first);
    EXPECT_EQ(steps, (std::vector<int64_t>{1, 2, 3, 4})) << run;
  }
}

// A resume with another learning rate after warmup (train.learning_rate edited, or other ranks at
// the same global batch) is said and recorded in the checkpoint's training setup.
TEST(Trainer, AnotherLearningRateOnResumeIsSaidAndRecorded) {
  test::TempDir d;
  const auto store = tiny_store_and_runs(d, {"a"});
  train_model(tiny_config(d / "c.yaml", 1), store, d / "a", false);
  Config faster = tiny_config(d / "c.yaml", 2);
  faster.train.learning_rate = 5e-3;
  test::LogCapture log;
  train_model(faster, store, d / "a", true);
  EXPECT_NE(log.str().find("trained at a learning rate of 0.003 (after warmup); this run goes on at 0.005 "
                           "(train.learning_rate 0.005 x 1 rank(s)): Adam's steps change size from epoch 2"),
            std::string::npos) << log.str();
  EXPECT_EQ(log.str().find("sums run in another order"), std::string::npos) << log.str();  // the rate alone
  const std::string setup = read_checkpoint_state(d / "a/checkpoint_last.h5").setup;
  EXPECT_NE(setup.find("learning rate 0.003; from epoch 2: "), std::string::npos) << setup;
  EXPECT_NE(setup.find("learning rate 0.005"), std::string::npos) << setup;
}

// A resume on another thread count (a requeue onto a node with other cores under run.threads 0)
// sums in another order: no longer bit for bit the uninterrupted run, which is said.
TEST(Trainer, AnotherThreadCountOnResumeIsSaid) {
  test::TempDir d;
  const auto store = tiny_store_and_runs(d, {"a"});
  train_model(tiny_config(d / "c.yaml", 1), store, d / "a", false);
  Config wider = tiny_config(d / "c.yaml", 2);
  wider.run.threads = 2;
  test::LogCapture log;
  train_model(wider, store, d / "a", true);
  EXPECT_NE(log.str().find("was trained with 1 rank(s), backend cpu (oneDNN, 1 thread), train.precision tf32; this "
                           "run goes on with 1 rank(s), backend cpu (oneDNN, 2 threads), train.precision tf32: its sums"),
            std::string::npos) << log.str();
  EXPECT_NE(log.str().find("its sums run in another order, so from epoch 2 on it is not bit for bit"), std::string::npos)
      << log.str();
  // Another train.seed alone changes no sum: not said.
  Config reseeded = tiny_config(d / "c.yaml", 3);
  reseeded.run.threads = 2;
  reseeded.train.seed = 11;
  test::LogCapture quiet;
  train_model(reseeded, store, d / "a", true);
  EXPECT_EQ(quiet.str().find("sums run in another order"), std::string::npos) << quiet.str();
}

// Resuming a run that already holds every epoch (a requeued job that had finished) trains
// nothing and keeps its report, metrics and checkpoints as they were; a loss that does not fit
// the predictand is refused before anything is written.
TEST(Trainer, ResumingAFinishedRunKeepsItsReportAndAWrongLossIsRefused) {
  test::TempDir d;
  const auto store = tiny_store_and_runs(d, {"run"});
  const TrainReport first = train_model(tiny_config(d / "c.yaml", 2), store, d / "run", false);
  EXPECT_FALSE(first.already_done);
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string report = read(d / "run/train_report.json"), metrics = read(d / "run/metrics.csv");
  std::filesystem::copy_file(d / "run/checkpoint_last.h5", d / "kept.h5");
  const TrainReport again = train_model(tiny_config(d / "c.yaml", 2), store, d / "run", true);
  EXPECT_TRUE(again.already_done);
  EXPECT_EQ(read(d / "run/train_report.json"), report);
  EXPECT_EQ(read(d / "run/metrics.csv"), metrics);
  expect_same_checkpoints(d / "kept.h5", d / "run/checkpoint_last.h5");
  // One epoch more trains that epoch.
  EXPECT_FALSE(train_model(tiny_config(d / "c.yaml", 3), store, d / "run", true).already_done);
  EXPECT_EQ(csv_lines(d / "run/metrics.csv").size(), 4u);

  // A run early stopping ended is finished too: resumed with the same patience, nothing is trained.
  Config patient = tiny_config(d / "c.yaml", 40);
  patient.train.patience = 1;
  std::filesystem::create_directories(d / "early");
  train_model(patient, store, d / "early", false);
  const size_t epochs_run = csv_lines(d / "early/metrics.csv").size() - 1;
  ASSERT_LT(epochs_run, 40u) << "no early stop: the test needs one";
  EXPECT_TRUE(train_model(patient, store, d / "early", true).already_done);
  EXPECT_EQ(csv_lines(d / "early/metrics.csv").size() - 1, epochs_run);

  Config gaussian = tiny_config(d / "c.yaml", 1);
  gaussian.train.loss = "gaussian";
  std::filesystem::create_directories(d / "wrong");
  EXPECT_THROW(train_model(gaussian, store, d / "wrong", false), UsageError);
  EXPECT_FALSE(std::filesystem::exists(d / "wrong/checkpoint_last.h5"));
}

// train.data_on_device: the splits held in backend memory and batches gathered there give the
// very batches read from the store each step: same weights, same losses, bit for bit.
TEST(Trainer, DataOnDeviceIsBitIdenticalToPerStepReads) {
  test::TempDir d;
  const auto store = write_tiny_store(d);
  for (const char* how : {"true", "false"}) {
    std::filesystem::create_directories(d / how);
    auto c = tiny_config(d / "c.yaml", 3);
    c.train.data_on_device = how;
    train_model(c, store, d / how, false);
  }
  expect_same_checkpoints(d / "true/checkpoint_last.h5", d / "false/checkpoint_last.h5");
  EXPECT_EQ(csv_losses(d / "true/metrics.csv"), csv_losses(d / "false/metrics.csv"));
  EXPECT_EQ(csv_losses(d / "true/metrics.csv").size(), 4u);
}

// The same with SGD and momentum: the checkpoint holds the velocities instead of Adam's moments.
TEST(Trainer, ResumeIsBitIdenticalWithSgd) {
  test::TempDir d;
  const auto store = tiny_store_and_runs(d, {"full", "split"});
  auto cfg = [&](int epochs) {
    Config c = tiny_config(d / "c.yaml", epochs);
    c.train.optimizer = "sgd";
    c.train.momentum = 0.9;
    c.train.learning_rate = 2e-2;
    return c;
  };
  const auto r = train_model(cfg(4), store, d / "full", false);
  train_model(cfg(2), store, d / "split", false);
  train_model(cfg(4), store, d / "split", true);
  expect_same_checkpoints(d / "full/checkpoint_last.h5", d / "split/checkpoint_last.h5");
  EXPECT_TRUE(H5File::open(d / "full/checkpoint_last.h5").exists("/sgd/velocity/conv1/W"));
  EXPECT_FALSE(H5File::open(d / "full/checkpoint_last.h5").exists("/adam/m/conv1/W"));
  EXPECT_TRUE(std::isfinite(r.final_train_loss));
  // Resuming an SGD run with Adam is refused, naming the optimizers: the configuration's mismatch (exit 2).
  Config adam = cfg(5);
  adam.train.optimizer = "adam";
  try {
    train_model(adam, store, d / "split", true);
    ADD_FAILURE() << "resumed with another optimizer";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'sgd'"), std::string::npos) << e.what();
  }
}

// The schedule hook is asked for every step, with the epoch and the global step, and its rate is
// the one used: a schedule of 0 from epoch 2 on leaves the weights of epoch 1 unchanged.
TEST(Trainer, LearningRateScheduleHookIsUsedEveryStep) {
  test::TempDir d;
  const auto store = tiny_store_and_runs(d, {"a", "b"});
  std::vector<std::pair<int, int64_t>> calls;
  auto schedule = [&](int epoch, int64_t step) {
    calls.emplace_back(epoch, step);
    return epoch == 1 ? 3e-3 : 0.0;
  };
  train_model(tiny_config(d / "c.yaml", 1), store, d / "a", false);
  train_model(tiny_config(d / "c.yaml", 3), store, d / "b", false, schedule);
  // 96 samples in batches of 16: 6 steps an epoch; steps counted 0..17 across epochs.
  ASSERT_EQ(calls.size(), 18u);
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i].first, int(i / 6) + 1);
    EXPECT_EQ(calls[i].second, int64_t(i));
  }
  // Epoch 1 at 3e-3 is what the constant-rate run did; epochs 2 and 3 at 0 changed nothing.
  EXPECT_EQ(weights(d / "a/checkpoint_last.h5", "/weights/conv1/W"),
            weights(d / "b/checkpoint_last.h5", "/weights/conv1/W"));
}

// DeepESD and the Gaussian/MSE heads through the whole trainer: the loss falls, checkpoints
// rebuild the net (land mask in the spec), and the loss curves reach TensorBoard's file.
TEST(Trainer, TrainsDeepEsdAndOtherLosses) {
  test::TempDir d;
  const auto pr_store = write_tiny_store(d), tas_store = write_tiny_store(d, "tas");
  for (const std::string loss : {"bernoulli_gamma", "gaussian", "mse"}) {
    const std::string& store = loss == "bernoulli_gamma" ? pr_store : tas_store;
    const std::string out = d / ("deepesd_" + loss);
    std::filesystem::create_directories(out);
    Config c = tiny_config(d / "c.yaml", 4);
    c.model.name = "deepesd";
    c.train.loss = loss;
    c.train.learning_rate = 1e-3;
    train_model(c, store, out, false);
    const auto lines = csv_lines(out + "/metrics.csv");
    ASSERT_EQ(lines.size(), 5u) << loss;
    const double first = std::stod(lines[1].substr(lines[1].find(',') + 1));
    const double last = std::stod(lines[4].substr(lines[4].find(',') + 1));
    EXPECT_LT(last, first) << loss << ": training did not reduce the loss";
    const auto spec = model::ModelSpec::from_json(H5File::open(out + "/checkpoint_best.h5").attr_string("/", "model_spec"));
    EXPECT_EQ(spec.loss, loss);
    EXPECT_EQ(spec.out_h, 13);
    EXPECT_EQ(spec.land_mask.size(), 13u * 17u);
  }
}

namespace {

// A temperature store as preprocess writes it for an observation grid smaller than the model's
// output: 4 x 5 predictors, output 13 x 17, the observations in rows 1..11 (rows 0 and 12 are
// padding: mask 0, y NaN), one box missing on every 7th day (y NaN, still modelled), values in
// degC following channel 0 (or the same in K: `offset` 273.15, `units` "K").
std::string write_tas_store(const test::TempDir& d, double offset = 0, const std::string& units = "Celsius") {
  StoreMeta m;
  m.channels = {"psl", "ta@850"};
  for (int i = 0; i < 5; ++i) m.predictor_lon.push_back(-10 + 2 * i);
  for (int j = 0; j < 4; ++j) m.predictor_lat.push_back(36 + 2 * j);
  for (int i = 0; i < 17; ++i) m.predictand_lon.push_back(-9.75 + 0.5 * i);
  for (int j = 0; j < 13; ++j) m.predictand_lat.push_back(35.25 + 0.5 * j);
  m.predictand = "tas", m.predictand_units = units, m.calendar = "noleap";
  m.obs_row0 = 1, m.obs_col0 = 0, m.obs_rows = 11, m.obs_cols = 17;
  m.obs_lat.assign(m.predictand_lat.begin() + 1, m.predictand_lat.end() - 1);
  m.obs_lon = m.predictand_lon;
  m.mask.assign(13 * 17, 1);
  for (int i = 0; i < 17; ++i) m.mask[i] = m.mask[12 * 17 + i] = 0;
  m.mean.assign(2 * 20, 0);
  m.sd.assign(2 * 20, 1);
  std::mt19937_64 rng(11);
  std::normal_distribution<float> n01;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto make = [&](int n, std::vector<float>& x, std::vector<float>& y, std::vector<int64_t>& t) {
    for (int s = 0; s < n; ++s) {
      for (int k = 0; k < 40; ++k) x.push_back(n01(rng));
      const float* c0 = &x[x.size() - 40];
      for (int j = 0; j < 13; ++j)
        for (int i = 0; i < 17; ++i) {
          const bool missing = !m.mask[size_t(j * 17 + i)] || (j == 5 && i == 5 && s % 7 == 0);
          y.push_back(missing ? nan : float(offset + 8.0 + 2.0 * c0[std::min(3, j / 4) * 5 + std::min(4, i / 4)]));
        }
      t.push_back(static_cast<int64_t>(t.size()));
    }
  };
  const std::string path = d / ("tas_store_" + units + ".h5");
  StoreWriter w(path, m);
  std::vector<float> x, y;
  std::vector<int64_t> t;
  make(96, x, y, t);
  w.write_split("train", x, y, y, t);
  x.clear(), y.clear(), t.clear();
  make(32, x, y, t);
  w.write_split("validation", x, y, y, t);
  w.close();
  return path;
}

}  // namespace

// train.loss gaussian on a temperature store with padding and missing days: the NaN targets are
// skipped, so the losses stay finite and fall, with the demo CNN and with DeepESD.
TEST(Trainer, TrainsGaussianOnATemperatureStoreWithPaddingAndMissingDays) {
  test::TempDir d;
  const auto store = write_tas_store(d);
  for (const std::string model : {"demo", "deepesd"}) {
    const std::string out = d / ("tas_" + model);
    std::filesystem::create_directories(out);
    Config c = tiny_config(d / "c.yaml", 4);
    c.model.name = model;
    c.train.loss = "gaussian";
    const auto r = train_model(c, store, out, false);
    EXPECT_TRUE(std::isfinite(r.final_train_loss)) << model;
    const auto lines = csv_lines(out + "/metrics.csv");
    ASSERT_EQ(lines.size(), 5u) << model;
    for (size_t i = 1; i < lines.size(); ++i) EXPECT_EQ(lines[i].find("nan"), std::string::npos) << model << ": " << lines[i];
    const double first = std::stod(lines[1].substr(lines[1].find(',') + 1));
    const double last = std::stod(lines[4].substr(lines[4].find(',') + 1));
    EXPECT_LT(last, first) << model << ": training did not reduce the loss";
  }
}

// The same temperatures in K and in degC train the same network: the output biases start at the
// training climatology (train/climatology_start.h). Started at Keras's zero biases, the K run's
// losses are about 273^2 per point (MSE) and do not come down in 4 epochs. Tolerance 2 % of the
// loss: the two runs differ only by the rounding of 273.15 + 8 in float (about 3e-5 K, where the
// departures are about 2 K), but Adam divides each gradient by its own size, so where a gradient
// is near zero that rounding sets the step's direction; measured: at most 0.5 % after 24 steps
// (deepesd, MSE), against a factor of 10^4 without the climatology start.
TEST(Trainer, AConstantOffsetOfAContinuousPredictandChangesNothing) {
  test::TempDir d;
  const auto celsius = write_tas_store(d), kelvin = write_tas_store(d, 273.15, "K");
  for (const std::string model : {"demo", "deepesd"})
    for (const std::string loss : {"gaussian", "mse"}) {
      std::vector<std::vector<std::string>> metrics;
      for (const auto& store : {celsius, kelvin}) {
        const std::string out = d / (model + "_" + loss + (store == kelvin ? "_K" : "_C"));
        std::filesystem::create_directories(out);
        Config c = tiny_config(d / "c.yaml", 4);
        c.model.name = model;
        c.train.loss = loss;
        train_model(c, store, out, false);
        metrics.push_back(csv_lines(out + "/metrics.csv"));
      }
      ASSERT_EQ(metrics[0].size(), 5u);
      ASSERT_EQ(metrics[1].size(), 5u);
      for (size_t e = 1; e < 5; ++e) {
        const auto field = [](const std::string& line, int k) {
          size_t at = 0;
          for (int i = 0; i < k; ++i) at = line.find(',', at) + 1;
          return std::stod(line.substr(at));
        };
        for (int k : {1, 2}) {  // train_loss, val_loss
          const double c = field(metrics[0][e], k), kv = field(metrics[1][e], k);
          EXPECT_NEAR(kv, c, 2e-2 * std::max(1.0, std::abs(c))) << model << " " << loss << " epoch " << e << " column " << k;
        }
      }
    }
}

// Resuming with another model, loss or demo filters names what differs, not the first weight
// whose shape does (user test: "/weights/conv1/W has a different shape than the model's").
TEST(Trainer, ResumingWithAnotherModelNamesIt) {
  test::TempDir d;
  const auto store = write_tas_store(d);
  const std::string out = d / "run";
  std::filesystem::create_directories(out);
  Config c = tiny_config(d / "c.yaml", 1);
  c.train.loss = "gaussian";
  train_model(c, store, out, false);
  const auto message = [&](Config other) {
    other.train.epochs = 2;
    try {
      train_model(other, store, out, true);
    } catch (const UsageError& e) {  // a configuration that does not fit the checkpoint: exit 2
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Config deepesd = c, mse = c, filters = c;
  deepesd.model.name = "deepesd";
  mse.train.loss = "mse";
  filters.model.filters = {8, 8, 16};
  EXPECT_NE(message(deepesd).find("checkpoint_last.h5: the checkpoint holds model 'demo', the configuration asks for "
                                  "'deepesd' (model.name)"), std::string::npos) << message(deepesd);
  EXPECT_NE(message(mse).find("loss gaussian, the configuration asks for mse (train.loss)"), std::string::npos)
      << message(mse);
  EXPECT_NE(message(filters).find("filters [8, 8, 8], the configuration asks for [8, 8, 16] (model.filters)"),
            std::string::npos) << message(filters);
  // The way out, ready to copy: the checkpoint's value as a --set.
  EXPECT_NE(message(filters).find("use the checkpoint's (--set 'model.filters=[8, 8, 8]')"), std::string::npos)
      << message(filters);
  EXPECT_NE(message(mse).find("(--set 'train.loss=gaussian')"), std::string::npos) << message(mse);
  // train --check --resume refuses it before the ranks are launched, and passes the config it fits.
  try {
    check_training(deepesd, store, out, true, false, 1);
    ADD_FAILURE() << "train --check --resume passed another model's checkpoint";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("asks for 'deepesd' (model.name)"), std::string::npos) << e.what();
  }
  EXPECT_NE(check_training(c, store, out, true, false, 1).find("model demo, loss gaussian, optimizer adam, as configured"),
            std::string::npos);
  // Another optimizer is the configuration's mismatch too (it was exit 3), and train --check
  // --resume refuses it (it passed).
  Config sgd = c;
  sgd.train.optimizer = "sgd";
  EXPECT_NE(message(sgd).find("the checkpoint holds the state of optimizer 'adam', the configuration asks for 'sgd' "
                              "(train.optimizer)"), std::string::npos) << message(sgd);
  EXPECT_THROW(check_training(sgd, store, out, true, false, 1), UsageError);
  // The store rebuilt with the same predictors and statistics but other targets (as another
  // preprocess.wet_threshold makes): resume and its check refuse the checkpoint (both exited 0).
  ASSERT_EQ(write_tas_store(d, 0.5), store);
  const auto refusal = [&](const std::function<void()>& f) {
    try {
      f();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Config more = c;
  more.train.epochs = 2;
  for (const std::string& m : {refusal([&] { train_model(more, store, out, true); }),
                               refusal([&] { check_training(c, store, out, true, false, 1); })})
    EXPECT_NE(m.find("checkpoint_last.h5: trained on other training days than the train split of " + store), std::string::npos)
        << m;
}

// train --check says when one epoch will be one optimizer step, as train warns at its start:
// against the batch per rank, and with --ranks against the global batch.
TEST(Trainer, CheckNotesATrainSplitSmallerThanOneBatch) {
  test::TempDir d;
  const auto store = write_tas_store(d);
  const std::string out = d / "run";
  std::filesystem::create_directories(out);
  const int n_train = int(StoreReader(store).count("train"));
  ASSERT_GE(n_train, 2);
  Config c = tiny_config(d / "c.yaml", 1);
  c.train.loss = "gaussian";  // a temperature store
  c.train.batch_size = n_train / 2 + 1;  // one rank: more than one step; two ranks: fewer than one global batch
  EXPECT_EQ(check_training(c, store, out, false, false, 0).find("fewer than one"), std::string::npos);
  EXPECT_EQ(check_training(c, store, out, false, false, 1).find("fewer than one"), std::string::npos);
  const std::string two = check_training(c, store, out, false, false, 2);
  EXPECT_NE(two.find("note: the train split holds " + std::to_string(n_train) + " days, fewer than one global batch (" +
                     std::to_string(2 * c.train.batch_size) + " = train.batch_size " + std::to_string(c.train.batch_size) +
                     " x 2 rank(s)): each epoch is a single optimizer step"),
            std::string::npos) << two;
  c.train.batch_size = n_train + 1;
  const std::string unknown = check_training(c, store, out, false, false, 0);
  EXPECT_NE(unknown.find("note: the train split holds " + std::to_string(n_train) + " days, fewer than one batch per rank (" +
                         std::to_string(n_train + 1) + "): each epoch is a single optimizer step"),
            std::string::npos) << unknown;
}

// The climatology the biases start from: per modelled box and over the domain, missing days
// skipped, against sums written out here (tolerance 1e-9: both in double from the same floats).
TEST(Trainer, TrainingClimatologyIsThePerBoxMeanAndVariance) {
  test::TempDir d;
  const auto path = write_tas_store(d, 273.15, "K");
  StoreReader store(path);
  const auto& m = store.meta();
  const size_t n = store.count("train"), ys = size_t(m.Hy()) * m.Wy();
  std::vector<float> y(n * ys);
  store.read_y("train", 0, n, y.data());
  const TargetClimatology c = training_climatology(store);
  size_t b = 0;
  double all = 0, cnt = 0;
  for (size_t k = 0; k < ys; ++k) {
    if (!m.mask[k]) continue;
    double s = 0, ss = 0, nk = 0;
    for (size_t t = 0; t < n; ++t)
      if (std::isfinite(y[t * ys + k])) s += y[t * ys + k], ss += double(y[t * ys + k]) * y[t * ys + k], ++nk;
    ASSERT_LT(b, c.mean.size());
    EXPECT_NEAR(c.mean[b], s / nk, 1e-9 * 300);
    EXPECT_NEAR(c.var[b], ss / nk - (s / nk) * (s / nk), 1e-6);  // the sum of squares itself loses ~1e-7
    all += s, cnt += nk, ++b;
  }
  EXPECT_EQ(b, c.mean.size());
  EXPECT_NEAR(c.domain_mean, all / cnt, 1e-9 * 300);
  EXPECT_GT(c.domain_var, 0.5);  // channel 0's N(0,1) times 2: about 4, the box means vary too
  EXPECT_LT(c.domain_var, 10.0);
}

// The output rule preprocess pads to (preprocess/output_grid.h) is the convolutional models' own.
TEST(Trainer, ConvModelsOutputTheGridPreprocessPadsTo) {
  auto be = model::make_cpu_backend(1);
  for (const std::string name : {"demo", "mnn"})
    for (auto [h, w] : {std::pair{4, 5}, std::pair{6, 8}}) {
      model::ModelSpec spec;
      spec.name = name;
      spec.in_channels = 2, spec.in_h = h, spec.in_w = w;
      spec.filters = {4, 4, 4};
      model::Net net(spec, *be);
      const auto s = net.output_shape(1);
      EXPECT_EQ(s.h, conv_output_size(h)) << name;
      EXPECT_EQ(s.w, conv_output_size(w)) << name;
    }
}

// Loss scaling (train/loss_scaler.h), testable on the CPU under fp32 with train.loss_scale
// dynamic: DOWNSCALE_TEST_OVERFLOW_STEPS writes an Inf into a gradient at those iterations.
namespace {
struct OverflowSteps {  // sets the hook for one scope
  explicit OverflowSteps(const char* steps) : env("DOWNSCALE_TEST_OVERFLOW_STEPS", steps) {}
  ds::test::ScopedEnv env;
};
int64_t optimizer_steps(const std::string& ckpt) { return H5File::open(ckpt).attr_int("/", "optimizer_steps"); }
}  // namespace

// Without overflows, scaling by 65536 and unscaling (powers of two: exact) changes no bit.
TEST(Trainer, DynamicLossScalingWithoutOverflowChangesNothing) {
  test::TempDir d;
  const auto store = tiny_store_and_runs(d, {"a", "b"});
  auto c = tiny_fp32_config(d / "c.yaml", 2);
  train_model(c, store, d / "a", false);
  c.train.loss_scale = "dynamic";
  const auto r = train_model(c, store, d / "b", false);
  EXPECT_EQ(r.skipped_steps, 0);
  EXPECT_EQ(r.loss_scale, 65536.0);
  expect_same_checkpoints(d / "a/checkpoint_last.h5", d / "b/checkpoint_last.h5");
}

// Steps 3 and 7 of 12 overflow: both skipped (Adam's count 10, not 12), the scale halved twice,
// and training goes on; train_report.json counts them.
TEST(Trainer, DynamicLossScalingSkipsOverflowingStepsAndHalvesTheScale) {
  test::TempDir d;
  const auto store = tiny_store_and_runs(d, {"a"});
  auto c = tiny_fp32_config(d / "c.yaml", 2);
  c.train.loss_scale = "dynamic";
  OverflowSteps hook("3,7");
  const auto r = train_model(c, store, d / "a", false);
  EXPECT_EQ(r.skipped_steps, 2);
  EXPECT_EQ(r.loss_scale, 16384.0);
  EXPECT_EQ(optimizer_steps(d / "a/checkpoint_last.h5"), 10);
  EXPECT_TRUE(std::isfinite(r.final_train_loss));
  std::ifstream in(d / "a/train_report.json");
  const std::string report((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(report.find("\"skipped_steps\": 2"), std::string::npos) << report;
  // The whole run's rate (validation, checkpoints, start-up included) is below the steps' own.
  EXPECT_GT(r.run_samples_per_s, 0);
  EXPECT_LT(r.run_samples_per_s, r.total_samples_per_s);
  EXPECT_NE(report.find("\"samples_per_second_whole_run\": "), std::string::npos) << report;
}

// Every step of an epoch overflows: the weights are the initial ones (those of a run at learning
// rate 0) and Adam never counted a step.
TEST(Trainer, SkippedStepsLeaveTheWeightsUnchanged) {
  test::TempDir d;
  const auto store = tiny_store_and_runs(d, {"a", "b"});
  auto c = tiny_fp32_config(d / "c.yaml", 1);
  train_model(c, store, d / "a", false, [](int, int64_t) { return 0.0; });
  c.train.loss_scale = "dynamic";
  OverflowSteps hook("0,1,2,3,4,5");
  const auto r = train_model(c, store, d / "b", false);
  EXPECT_EQ(r.skipped_steps, 6);
  EXPECT_EQ(r.loss_scale, 1024.0);
  EXPECT_EQ(optimizer_steps(d / "b/checkpoint_last.h5"), 0);
  for (const char* w : {"/weights/conv1/W", "/weights/conv1/b"})
    EXPECT_EQ(weights(d / "a/checkpoint_last.h5", w), weights(d / "b/checkpoint_last.h5", w)) << w;
}

// A resumed run keeps the dynamic loss scale where the checkpoint left it (halved once by the
// overflow at step 3), instead of restarting at 65536; the checkpoint records it.
TEST(Trainer, ResumeKeepsTheDynamicLossScale) {
  test::TempDir d;
  const auto store = tiny_store_and_runs(d, {"a"});
  auto c = tiny_fp32_config(d / "c.yaml", 1);
  c.train.loss_scale = "dynamic";
  {
    OverflowSteps hook("3");
    EXPECT_EQ(train_model(c, store, d / "a", false).loss_scale, 32768.0);
  }
  EXPECT_EQ(H5File::open(d / "a/checkpoint_last.h5").attr_double("/", "loss_scale"), 32768.0);
  c.train.epochs = 2;
  const auto r = train_model(c, store, d / "a", true);
  EXPECT_EQ(r.skipped_steps, 0);
  EXPECT_EQ(r.loss_scale, 32768.0);
}

// metrics.csv's lines, and restore_metrics on its own: the checkpoint's line appended only when
// the file stops at the epoch before it; a cut-off last line dropped; the header is no epoch.
TEST(MetricsCsv, LinesAndRestore) {
  EXPECT_EQ(metrics_line({3, 0.5, NAN, 2.25, NAN}), "3,0.5,,2.25,");
  const EpochMetrics m = parse_metrics_line("3,0.5,,2.25,");
  EXPECT_EQ(m.epoch, 3);
  EXPECT_EQ(m.train_loss, 0.5);
  EXPECT_TRUE(std::isnan(m.val_loss) && std::isnan(m.samples_per_second));
  EXPECT_EQ(m.seconds, 2.25);
  EXPECT_EQ(parse_metrics_line("epoch,train_loss,val_loss,epoch_seconds,samples_per_second").epoch, 0);
  test::TempDir d;
  const std::string path = d / "metrics.csv", header = "epoch,train_loss,val_loss,epoch_seconds,samples_per_second\n";
  const auto text = [&] {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  std::ofstream(path) << header << "1,2,3,4,5\n";
  EXPECT_EQ(restore_metrics(path, 2, "2,1,1,1,1"), "2,1,1,1,1");
  EXPECT_EQ(text(), header + "1,2,3,4,5\n2,1,1,1,1\n");
  EXPECT_EQ(restore_metrics(path, 2, "2,1,1,1,1"), "");  // whole now: unchanged
  EXPECT_EQ(text(), header + "1,2,3,4,5\n2,1,1,1,1\n");
  std::ofstream(path) << header << "1,2,3,4,5\n2,0.";  // epoch 2's line cut off
  EXPECT_EQ(restore_metrics(path, 2, "2,1,1,1,1"), "2,1,1,1,1");
  EXPECT_EQ(text(), header + "1,2,3,4,5\n2,1,1,1,1\n");
  std::ofstream(path) << "epoch,train_lo";  // even the header cut off (unsynced when a node was lost)
  EXPECT_EQ(restore_metrics(path, 1, "1,2,3,4,5"), "1,2,3,4,5");
  EXPECT_EQ(text(), header + "1,2,3,4,5\n");
  std::ofstream(path) << header;  // the first epoch's line lost
  EXPECT_EQ(restore_metrics(path, 1, "1,2,3,4,5"), "1,2,3,4,5");
  std::ofstream(path) << header << "1,2,3,4,5\n";  // an older checkpoint without its line
  EXPECT_EQ(restore_metrics(path, 2, ""), "");
  EXPECT_EQ(text(), header + "1,2,3,4,5\n");
  EXPECT_EQ(restore_metrics(d / "none.csv", 2, "2,1,1,1,1"), "");
  EXPECT_FALSE(std::filesystem::exists(d / "none.csv"));
  // One that exists but cannot be read stops the resume naming it (it was read as empty: a
  // history of the checkpoint's line alone).
  std::filesystem::create_directories(d / "folder.csv");
  EXPECT_EQ(test::message_of<Error>([&] { restore_metrics(d / "folder.csv", 1, "1,2,3,4,5"); }),
            (d / "folder.csv") + ": cannot be read: Is a directory");
}

// Without a validation split the best model follows the training loss: the report gives no
// validation loss (null) and says what chose the model, where it gave the training loss under
// the validation loss's name.
TEST(TrainReport, NoValidationLossIsNull) {
  test::TempDir d;
  TrainReport r;
  r.final_train_loss = 1.25;
  r.best_val_loss = NAN;
  r.best_model_by = "training loss (no validation split)";
  write_report(d / "report.json", r, {10.0}, {"cpu"}, 1, 1, 32, 0);
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(d / "report.json"));
  EXPECT_TRUE(j["best_validation_loss"].is_null());
  EXPECT_EQ(j["best_model_by"], "training loss (no validation split)");
  EXPECT_EQ(j["final_train_loss"], 1.25);
}
