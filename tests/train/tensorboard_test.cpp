// TensorBoard event files: CRC-32C against published values, and the writer's files read back
// with the independent reader of event_file_reader.h.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "event_file_reader.h"
#include "io/error.h"
#include "support/test_support.h"
#include "train/crc32c.h"
#include "train/tensorboard.h"

using namespace ds;
using namespace ds::test;

// RFC 3720 B.4 check values, and the bitwise definition on random bytes.
TEST(TensorBoard, Crc32cMatchesPublishedValues) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  const std::string zeros(32, '\0'), ones(32, '\xFF');
  EXPECT_EQ(crc32c(zeros.data(), 32), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones.data(), 32), 0x62A8AB43u);
  std::string inc(32, 0);
  for (int i = 0; i < 32; ++i) inc[i] = char(i);
  EXPECT_EQ(crc32c(inc.data(), 32), 0x46DD794Eu);
  std::mt19937 rng(1);
  std::string r(1000, 0);
  for (char& c : r) c = char(rng());
  EXPECT_EQ(crc32c(r.data(), r.size()), crc32c_bitwise(r));
  EXPECT_EQ(masked_crc32c(r.data(), r.size()), masked(crc32c_bitwise(r)));
}

TEST(TensorBoard, WriterRoundTrip) {
  test::TempDir d;
  EventWriter w(d.path());
  w.add_scalar("loss/train", 1.25, 1);
  w.add_scalar("loss/validation", -0.5, 1);
  w.add_scalar("loss/train", 0.75, 2);
  const std::string name = std::filesystem::path(w.path()).filename().string();
  EXPECT_EQ(name.rfind("events.out.tfevents.", 0), 0u) << name;  // TensorBoard's file pattern
  EventWriter second(d.path());  // same second: a new file, not an overwrite
  EXPECT_NE(second.path(), w.path());

  std::string version;
  const auto records = read_records(w.path());
  ASSERT_EQ(records.size(), 4u);
  const auto s = scalars(records, &version);
  EXPECT_EQ(version, "brain.Event:2");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].tag, "loss/train");
  EXPECT_EQ(s[0].value, 1.25f);
  EXPECT_EQ(s[0].step, 1);
  EXPECT_EQ(s[1].tag, "loss/validation");
  EXPECT_EQ(s[1].value, -0.5f);
  EXPECT_EQ(s[2].step, 2);
  EXPECT_GT(s[2].wall_time, 1.6e9);  // seconds since 1970, not milliseconds or zero
  EXPECT_LT(s[2].wall_time, 1e11);
}

TEST(TensorBoard, UnwritableFolderIsAnErrorNamingTheFile) {
  try {
    EventWriter w("/nonexistent-folder/train");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-folder/train/events.out.tfevents."), std::string::npos)
        << e.what();
  }
}


// Keras' layout: runs train/ and validation/ with one tag `loss`, so TensorBoard overlays them;
// a fresh training replaces an earlier one's files, a resumed one adds a file beside them.
TEST(TensorBoard, TrainingEventsAreTwoRunsWithOneLossTag) {
  test::TempDir d;
  {
    TrainingEvents e(d.path(), 1);
    e.epoch(1, 1.5, 1.75, 1e-3, 2.0, 100.0);
    e.epoch(2, 1.25, 1.5, 1e-3, 2.0, 110.0);
  }
  const std::string train = d.path() + "/tensorboard/train", validation = d.path() + "/tensorboard/validation";
  std::string version;
  ASSERT_EQ(event_files(train).size(), 1u);
  ASSERT_EQ(event_files(validation).size(), 1u);
  const auto t = scalars(read_records(event_files(train)[0]), &version);
  const auto v = scalars(read_records(event_files(validation)[0]), &version);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].tag, "loss");
  EXPECT_EQ(v[1].value, 1.5f);
  EXPECT_EQ(v[1].step, 2);
  int losses = 0, throughput = 0;
  for (const auto& s : t) {
    losses += s.tag == "loss";
    if (s.tag == "samples_per_second") {
      ++throughput;
      EXPECT_GT(s.value, 99.0f);
    }
  }
  EXPECT_EQ(losses, 2);
  EXPECT_EQ(throughput, 2);

  {  // no validation split (NaN): the training run gets its point, the validation run none
    TrainingEvents resumed(d.path(), 3);
    resumed.epoch(3, 1.0, std::nan(""), 1e-3, 2.0, 120.0);
  }
  for (const auto& f : event_files(validation))
    for (const auto& s : scalars(read_records(f), &version)) EXPECT_LT(s.step, 3) << f;

  EXPECT_EQ(event_files(train).size(), 2u);  // --resume: a second file beside the first
  remove_training_events(d.path());  // a new training (begin_history): only its own file remains
  { TrainingEvents fresh(d.path(), 1); }
  EXPECT_EQ(event_files(train).size(), 1u);
  EXPECT_EQ(event_files(validation).size(), 1u);
}

// A resume from an older checkpoint (epoch 1 of a run trained on to 3) trains epochs 2 and 3
// again: its file begins with a SessionLog START at epoch 2, and TensorBoard shows each epoch
// once, the later training's. Without the START the Python loader kept all five points.
TEST(TensorBoard, AResumedFileDropsTheAbandonedEpochsPoints) {
  test::TempDir d;
  {
    TrainingEvents first(d.path(), 1);
    for (int e = 1; e <= 3; ++e) first.epoch(e, 10.0 + e, 20.0 + e, 1e-3, 1.0, 1.0);
  }
  {
    TrainingEvents resumed(d.path(), 2);
    for (int e = 2; e <= 3; ++e) resumed.epoch(e, 30.0 + e, 40.0 + e, 1e-3, 1.0, 1.0);
  }
  using Curve = std::vector<std::pair<int64_t, float>>;
  const auto train = shown(d.path() + "/tensorboard/train"), validation = shown(d.path() + "/tensorboard/validation");
  EXPECT_EQ(train.at("loss"), (Curve{{1, 11.0f}, {2, 32.0f}, {3, 33.0f}}));
  EXPECT_EQ(validation.at("loss"), (Curve{{1, 21.0f}, {2, 42.0f}, {3, 43.0f}}));
  EXPECT_EQ(train.at("epoch_seconds").size(), 3u);
  // The records as written: two STARTs at each file's first epoch.
  std::string version;
  std::vector<int64_t> starts;
  for (const auto& f : event_files(d.path() + "/tensorboard/train"))
    for (const auto& s : scalars(read_records(f), &version, true))
      if (s.tag.empty()) starts.push_back(s.step);
  EXPECT_EQ(starts, (std::vector<int64_t>{1, 1, 2, 2}));
}
