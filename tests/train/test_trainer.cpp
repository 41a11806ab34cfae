#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "io/hdf5_file.h"
#include "io/training_store.h"
#include "support/test_support.h"
#include "train/trainer.h"

using namespace ds;

namespace {

// A tiny store: 2 channels on 4 x 5, output 13 x 17, where rain falls where channel 0 is
// positive (upsampled), so a small CNN can learn it. 96 train, 32 validation samples.
std::string write_tiny_store(const test::TempDir& d) {
  StoreMeta m;
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
  const std::string path = d / "store.h5";
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

std::vector<float> weights(const std::string& ckpt, const std::string& name) {
  H5File f = H5File::open(ckpt);
  size_t n = 1;
  for (auto d : f.dims(name)) n *= d;
  std::vector<float> w(n);
  f.read(name, w.data());
  return w;
}

std::vector<std::string> csv_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

}  // namespace

TEST(Trainer, LearnsAndWritesCheckpointsAndMetrics) {
  test::TempDir d;
  const auto store = write_tiny_store(d);
  std::filesystem::create_directories(d / "a");
  const auto r = train_model(tiny_config(d / "c.yaml", 8), store, d / "a", false);
  EXPECT_EQ(r.epochs, 8);
  const auto lines = csv_lines(d / "a/metrics.csv");
  ASSERT_EQ(lines.size(), 9u);
  const double first = std::stod(lines[1].substr(lines[1].find(',') + 1));
  EXPECT_LT(r.final_train_loss, 0.8 * first) << "training did not reduce the loss";
  EXPECT_TRUE(std::filesystem::exists(d / "a/checkpoint_best.h5"));
  EXPECT_TRUE(std::filesystem::exists(d / "a/checkpoint_last.h5"));
  EXPECT_TRUE(std::filesystem::exists(d / "a/model_summary.txt"));
}

// Training 4 epochs, stopping, and resuming to 8 ends with the same bits as 8 epochs at once:
// the checkpoint holds weights, Adam's moments and step, the epoch and the shuffling RNG.
TEST(Trainer, ResumeIsBitIdentical) {
  test::TempDir d;
  const auto store = write_tiny_store(d);
  std::filesystem::create_directories(d / "full");
  std::filesystem::create_directories(d / "split");
  train_model(tiny_config(d / "c.yaml", 6), store, d / "full", false);
  train_model(tiny_config(d / "c.yaml", 3), store, d / "split", false);
  train_model(tiny_config(d / "c.yaml", 6), store, d / "split", true);
  const auto names = H5File::open(d / "full/checkpoint_last.h5").datasets("/");
  ASSERT_GT(names.size(), 10u);  // weights, biases and both Adam moments of every layer
  for (const auto& name : names)
    EXPECT_EQ(weights(d / "full/checkpoint_last.h5", name), weights(d / "split/checkpoint_last.h5", name)) << name;
  EXPECT_EQ(csv_lines(d / "split/metrics.csv").size(), 7u);  // header + 6 epochs, none twice
}
