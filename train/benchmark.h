// `downscale benchmark`: Horovod's synthetic benchmark (pytorch_synthetic_benchmark.py) on
// the trainer's pieces. Every rank trains the chosen image net on its own fixed random batch
// with SGD (momentum 0.9, lr 0.01) and softmax cross-entropy (dynamic loss scaling under fp16,
// as train); gradients go through the same
// GradientBuckets and Communicator as `downscale train` (MPI, or NCCL on GPUs). After warmup
// batches, num_iters iterations of num_batches_per_iter batches are timed; rank 0 prints the
// reference's lines (Iter #i, Img/sec per GPU, Total img/sec) and appends one JSON line.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "train/distributed.h"

namespace ds {

struct BenchmarkOptions {
  std::string model = "resnet50";  // resnet50 | resnet101 | inception_v3
  int batch_size = 32;             // per rank
  int warmup_batches = 10;
  int batches_per_iter = 10;
  int iters = 10;
  bool fp16_allreduce = false;     // train.allreduce_dtype fp16: 16-bit gradients on the wire
  std::string device = "auto";     // auto | cpu | cuda (--no-cuda: cpu)
  std::string precision = "tf32";  // tf32 | fp32 | bf16 | fp16 (train.precision)
  int image_size = 0;              // 0: the model's (224, 299)
  int classes = 1000;
  std::string json;                // append one JSON line per run here (rank 0)
  uint64_t seed = 42;
  int threads = 0;                 // CPU threads per rank; 0: this rank's share of its cores
  double bucket_mb = 25;           // gradient bucket size (train.allreduce_bucket_mb)
  std::string communicator = "auto";  // run.communicator: auto | mpi | nccl
  // Instead of the timed iterations: the layer profile (train/layer_profile.h) of iters steps
  // after warmup_batches, written here as JSON and summarized (the slowest layers); one rank.
  std::string profile_layers;
};

// What one run measured (on every rank; the same values everywhere).
struct BenchmarkResult {
  std::vector<double> iter_img_per_s;  // per rank, mean over ranks, one per iteration
  double mean = 0, ci95 = 0;           // img/s per rank: mean and 1.96 x std over iterations
  double total = 0, total_ci95 = 0;    // x ranks
  int ranks = 1, nodes = 1;
  std::string device;                  // "cpu: <model name>" | "cuda: <GPU name>"
  std::string backend;                 // the backend's own description
  int image_size = 0;
  int threads = 0;                     // CPU threads per rank; 0 on a GPU
  int64_t parameters = 0, activation_bytes = -1;
};

// Runs the benchmark on `host`'s ranks (collective); prints on rank 0 to `out`; rank 0 appends
// the JSON line when opts.json is set.
BenchmarkResult run_benchmark(const BenchmarkOptions& opts, Communicator& host, std::ostream& out);

// The JSON line of a run (no newline). efficiency: null when no 1-rank line matches.
std::string benchmark_json_line(const BenchmarkOptions& opts, const BenchmarkResult& r, double efficiency,
                                const std::string& allreduce_dtype);
// The img/s per rank of the last 1-rank line in `path` for the same model, batch, image size,
// device, precision and, on a CPU, threads per rank; 0 when there is none (or no file). A CPU's
// 1-rank line with other threads would mix thread scaling into the rank scaling (1 rank of 2
// threads against 2 ranks of 1): it is no reference, and `other_threads`, when given, is set to
// its threads so the message can say which run to add. Lines without threads (written before
// they were recorded) still match.
double one_rank_reference(const std::string& path, const BenchmarkOptions& opts, const BenchmarkResult& r,
                          int* other_threads = nullptr);

// Mean and 1.96 x (population) standard deviation, as the reference script (numpy.std).
void mean_ci95(const std::vector<double>& v, double* mean, double* ci95);

}  // namespace ds
