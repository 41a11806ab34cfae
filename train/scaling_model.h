// A model of data-parallel step time on more GPUs (issue 14), from one rank's layer profile
// (train/layer_profile.h), the trainer's gradient buckets and a table of links. docs/scaling.md
// states the formulas, their assumptions and the figures' sources.
//
// One step on P ranks: forward + loss, then backward, during which each gradient bucket's
// allreduce starts when the layer that completes its last gradient has finished AND the previous
// bucket's allreduce has finished (the trainer starts them in order, one at a time on the wire),
// then the optimizer once the last allreduce is done:
//   step = forward + loss + max(backward, end of the last allreduce) + optimizer
// Ring allreduce of B bytes (NCCL's bus bandwidth, nccl-tests doc/PERFORMANCE.md):
//   t = latency + 2 (P-1)/P * B / busbw
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "train/layer_profile.h"

namespace ds {

// A link's figures for ring allreduce. latency_s: one allreduce's fixed cost (small-message time).
struct Link {
  std::string key;   // --link / --network value
  std::string name;
  double latency_s = 0;
  double busbw = 0;  // bytes/s, nccl-tests' busbw (= algbw * 2(P-1)/P for allreduce)
  std::string source;
  bool measured = false;  // measured on a machine (else a published figure)
  bool between_nodes = false;  // a network between nodes (--network), else a link inside one (--link)
};
// nvlink4, nvlink3, pcie4, pcie5 (inside a node); ib-hdr, ib-ndr (between nodes); shm-mpi
// (MPI through shared memory on this project's 2-core machine, measured by bench/scaling_check.sh).
const std::vector<Link>& link_table();
// UsageError listing the keys of the kind asked for (between_nodes: --network's, else --link's),
// also for a known link of the other kind.
const Link& find_link(const std::string& key, const std::string& what, bool between_nodes);

// The trainer's buckets (train/gradient_buckets.h): gradients in backward order, a new bucket
// when the current one holds >= bucket_bytes of FP32 (bucket_bytes 0: a single bucket).
struct BucketPlan {
  std::vector<int64_t> floats;        // per bucket
  std::vector<size_t> ready_after;    // per bucket: the index (in profile.layers) completing it
};
BucketPlan plan_buckets(const LayerProfile& profile, size_t bucket_bytes);

struct Topology {
  int nodes = 1, gpus_per_node = 1;
  Link intra, inter;
  int nics_per_node = 1;  // each NIC of `inter`'s bandwidth; one per GPU: gpus_per_node
  int ranks() const { return nodes * gpus_per_node; }
  // Ring over every rank, rings spread over the node's NICs: busbw = min(intra, NICs x inter)
  // between nodes (the slowest link a ring crosses), intra alone on one node.
  double busbw() const;
  // Fixed cost per allreduce: intra's on one node; between nodes inter's x (1 + log2 nodes)
  // (NCCL's trees for small messages grow with the log of the nodes).
  double latency_s() const;
  double allreduce_s(double bytes) const;  // 0 on one rank
};

struct StepPrediction {
  int nodes = 1, gpus_per_node = 1, ranks = 1;
  double step_s = 0, compute_s = 0, exposed_s = 0;  // exposed: step - compute (communication not hidden)
  double efficiency = 1;                            // compute / step: the throughput per rank kept
  double images_per_s = 0;                          // ranks x batch / step
  double comm_s = 0;                                // sum of the allreduces
  std::vector<double> bucket_start, bucket_end;     // from the start of backward
};
// grad_bytes: bytes per gradient on the wire (train.allreduce_dtype fp32 4, bf16/fp16 2).
// Per-layer backward times are scaled to sum to profile.backward_s (the per-layer times carry
// a synchronization each).
StepPrediction predict_step(const LayerProfile& profile, const BucketPlan& plan, const Topology& topo,
                            int grad_bytes);

struct ScalingOptions {
  Link intra, inter;
  bool nic_per_gpu = true;  // else one NIC per node
  int gpus_per_node = 4;
  size_t bucket_bytes = 4u << 20;
  std::string allreduce_dtype = "fp32";
  std::vector<int> single_node_gpus = {1, 2, 3, 4};   // rows on one node
  std::vector<int> node_counts = {2, 4, 8, 16, 32, 64};  // rows of gpus_per_node each
};
int gradient_bytes(const std::string& allreduce_dtype);  // UsageError on others
std::vector<StepPrediction> predict_scaling(const LayerProfile& profile, const ScalingOptions& opt);
// The printed report: every input with its source, then one row per rank count.
std::string scaling_report(const LayerProfile& profile, const ScalingOptions& opt,
                           const std::vector<StepPrediction>& rows, const std::string& profile_source);
std::string scaling_json(const LayerProfile& profile, const ScalingOptions& opt,
                         const std::vector<StepPrediction>& rows);

}  // namespace ds
