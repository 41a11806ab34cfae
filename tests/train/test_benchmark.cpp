// downscale benchmark's arithmetic (train/benchmark.h): the reference script's mean +-1.96 std,
// and which earlier JSON line the efficiency is taken against.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "train/benchmark.h"

namespace ds {
namespace {

TEST(Benchmark, MeanAndCi95AsNumpy) {
  double mean = 0, ci = 0;
  mean_ci95({10, 12, 14}, &mean, &ci);
  EXPECT_DOUBLE_EQ(mean, 12);
  EXPECT_NEAR(ci, 1.96 * std::sqrt(8.0 / 3.0), 1e-12);  // numpy.std: the population std (ddof 0)
}

TEST(Benchmark, EfficiencyAgainstTheMatchingOneRankLine) {
  BenchmarkOptions o;
  o.model = "resnet50";
  o.batch_size = 4;
  o.precision = "fp32";
  BenchmarkResult r;
  r.image_size = 64;
  r.device = "cpu: X";
  r.ranks = 1;
  const std::string path = ::testing::TempDir() + "/benchmark_test.jsonl";
  std::remove(path.c_str());
  EXPECT_EQ(one_rank_reference(path, o, r), 0);  // no file: no reference
  std::ofstream f(path);
  r.mean = 10;
  f << benchmark_json_line(o, r, 1, "fp32") << "\n";
  f << "not json, a torn line\n";
  BenchmarkOptions other = o;
  other.precision = "tf32";  // another precision: not comparable
  r.mean = 99;
  f << benchmark_json_line(other, r, 1, "fp32") << "\n";
  other = o;
  other.batch_size = 8;  // another batch
  f << benchmark_json_line(other, r, 1, "fp32") << "\n";
  BenchmarkResult two = r;
  two.ranks = 2;  // not a 1-rank line
  f << benchmark_json_line(o, two, 0.5, "fp32") << "\n";
  f.close();
  EXPECT_EQ(one_rank_reference(path, o, r), 10);
  BenchmarkResult big = r;
  big.image_size = 224;
  EXPECT_EQ(one_rank_reference(path, o, big), 0);
  // On a CPU the threads per rank must match too (1 rank of 2 threads is no reference for 2 ranks of
  // 1: found by an audit, whose efficiency mixed thread scaling in); a line without threads (from
  // before they were recorded) still matches, and the other threads are reported.
  BenchmarkResult one_thread = r;
  one_thread.threads = 1;
  int other_threads = -1;
  EXPECT_EQ(one_rank_reference(path, o, one_thread, &other_threads), 10);  // the lines above carry no threads
  EXPECT_EQ(other_threads, 0);
  std::ofstream(path, std::ios::app) << benchmark_json_line(o, [&] { auto t = r; t.threads = 2, t.mean = 20; return t; }(), 1, "fp32")
                                     << "\n";
  EXPECT_EQ(one_rank_reference(path, o, one_thread, &other_threads), 10);  // the 2-thread line is skipped
  EXPECT_EQ(other_threads, 2);
  BenchmarkResult two_threads = one_thread;
  two_threads.threads = 2;
  EXPECT_EQ(one_rank_reference(path, o, two_threads, &other_threads), 20);
  BenchmarkResult gpu = r;  // threads 0: a GPU's lines match whatever threads the host ran
  EXPECT_EQ(one_rank_reference(path, o, gpu), 20);
  EXPECT_TRUE(nlohmann::json::parse(benchmark_json_line(o, gpu, 1, "fp32"))["threads"].is_null());
  EXPECT_EQ(nlohmann::json::parse(benchmark_json_line(o, two_threads, 1, "fp32"))["threads"], 2);
  const auto j = nlohmann::json::parse(benchmark_json_line(o, two, 0, "fp16"));
  EXPECT_TRUE(j["efficiency"].is_null());
  EXPECT_EQ(j["allreduce_dtype"], "fp16");
  EXPECT_EQ(j["ranks"], 2);
}

}  // namespace
}  // namespace ds
