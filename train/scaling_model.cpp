#include "train/scaling_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "io/error.h"

namespace ds {

namespace {
constexpr double GB = 1e9;
constexpr double us = 1e-6;
const char* kNcclPerf = "nccl-tests doc/PERFORMANCE.md (https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md)";
}  // namespace

// Published figures are a link's effective allreduce busbw, not its signalling rate; latencies
// are small-message allreduce times of that order (assumptions: see docs/scaling.md).
const std::vector<Link>& link_table() {
  static const std::vector<Link> links = {
      {"nvlink4", "NVLink4 (H100 SXM, NVSwitch)", 15 * us, 360 * GB,
       "450 GB/s per direction per GPU (NVIDIA H100 datasheet, https://www.nvidia.com/en-us/data-center/h100/); "
       "allreduce busbw 360-480 GB/s measured by nccl-tests on 8xH100, low end taken (ring, no NVLS); " +
           std::string(kNcclPerf),
       false},
      {"nvlink3", "NVLink3 (A100 SXM, NVSwitch)", 15 * us, 230 * GB,
       "300 GB/s per direction per GPU (NVIDIA A100 datasheet, https://www.nvidia.com/en-us/data-center/a100/); "
       "allreduce busbw ~230 GB/s on 8xA100 (nccl-tests)",
       false},
      {"pcie4", "PCIe Gen4 x16", 20 * us, 20 * GB,
       "32 GB/s per direction raw (PCI-SIG, https://pcisig.com/specifications); ~20 GB/s effective allreduce busbw",
       false},
      {"pcie5", "PCIe Gen5 x16", 20 * us, 40 * GB,
       "64 GB/s per direction raw (PCI-SIG); ~40 GB/s effective allreduce busbw", false},
      {"ib-hdr", "InfiniBand HDR 200 Gb/s, per NIC", 30 * us, 23 * GB,
       "200 Gb/s = 25 GB/s per NIC (NVIDIA ConnectX-6, https://www.nvidia.com/en-us/networking/infiniband-adapters/); "
       "~23 GB/s busbw per NIC in multi-node nccl-tests",
       false, true},
      {"ib-ndr", "InfiniBand NDR 400 Gb/s, per NIC", 30 * us, 46 * GB,
       "400 Gb/s = 50 GB/s per NIC (NVIDIA ConnectX-7, https://www.nvidia.com/en-us/networking/infiniband-adapters/); "
       "~46 GB/s busbw per NIC in multi-node nccl-tests",
       false, true},
      // bench/scaling_check.sh measures it again on each run and passes its own figure.
      {"shm-mpi", "MPI over shared memory, 2 ranks on the 2-core dev machine", 30 * us, 2.0 * GB,
       "measured by bench/allreduce_bw (bench/scaling_check.sh) on the project's Debian 12 dev machine, 2026-11-22",
       true},
  };
  return links;
}

const Link& find_link(const std::string& key, const std::string& what, bool between_nodes) {
  std::string keys;
  const Link* other = nullptr;  // the key names a link of the other kind
  for (const auto& l : link_table()) {
    if (l.between_nodes != between_nodes) {
      if (l.key == key) other = &l;
      continue;
    }
    if (l.key == key) return l;
    keys += (keys.empty() ? "" : ", ") + l.key;
  }
  if (other)
    throw UsageError(what + ": '" + key + "' is a link " + (between_nodes ? "inside a node" : "between nodes") +
                     " (" + other->name + "); " + what + " takes one of " + keys);
  throw UsageError(what + ": unknown link '" + key + "' (one of " + keys + ")");
}

BucketPlan plan_buckets(const LayerProfile& profile, size_t bucket_bytes) {
  BucketPlan plan;
  int64_t current = 0;  // floats in the last bucket
  for (size_t i = 0; i < profile.layers.size(); ++i)
    for (int64_t n : profile.layers[i].param_floats) {
      // As GradientBuckets' constructor, gradient by gradient.
      if (plan.floats.empty() || (bucket_bytes > 0 && size_t(current) * sizeof(float) >= bucket_bytes)) {
        plan.floats.push_back(0);
        plan.ready_after.push_back(i);
        current = 0;
      }
      plan.floats.back() += n;
      plan.ready_after.back() = i;
      current += n;
    }
  return plan;
}

double Topology::busbw() const {
  if (nodes <= 1) return intra.busbw;
  const double network = nics_per_node * inter.busbw;
  return gpus_per_node > 1 ? std::min(intra.busbw, network) : network;
}

double Topology::latency_s() const {
  if (nodes <= 1) return intra.latency_s;
  return inter.latency_s * (1 + std::log2(double(nodes)));
}

double Topology::allreduce_s(double bytes) const {
  const int p = ranks();
  if (p <= 1) return 0;
  return latency_s() + 2.0 * (p - 1) / p * bytes / busbw();
}

StepPrediction predict_step(const LayerProfile& profile, const BucketPlan& plan, const Topology& topo,
                            int grad_bytes) {
  StepPrediction r;
  r.nodes = topo.nodes;
  r.gpus_per_node = topo.gpus_per_node;
  r.ranks = topo.ranks();
  r.compute_s = profile.compute_s();
  double backward_end = profile.backward_s;
  if (r.ranks > 1) {
    // When each layer's backward ends, in the unsynchronized backward's time.
    const double sum = profile.layers_backward_s();
    const double scale = sum > 0 ? profile.backward_s / sum : 0;
    std::vector<double> layer_end(profile.layers.size());
    double t = 0;
    for (size_t i = 0; i < profile.layers.size(); ++i) layer_end[i] = t += profile.layers[i].backward_s * scale;
    double prev_end = 0;
    for (size_t b = 0; b < plan.floats.size(); ++b) {
      const double start = std::max(layer_end[plan.ready_after[b]], prev_end);
      const double len = topo.allreduce_s(double(plan.floats[b]) * grad_bytes);
      r.bucket_start.push_back(start);
      r.bucket_end.push_back(prev_end = start + len);
      r.comm_s += len;
    }
    backward_end = std::max(backward_end, prev_end);
  }
  r.step_s = profile.forward_s + profile.loss_s + backward_end + profile.optimizer_s;
  r.exposed_s = r.step_s - r.compute_s;
  r.efficiency = r.step_s > 0 ? r.compute_s / r.step_s : 1;
  r.images_per_s = r.step_s > 0 ? r.ranks * profile.batch / r.step_s : 0;
  return r;
}

int gradient_bytes(const std::string& dtype) {
  if (dtype == "fp32") return 4;
  if (dtype == "bf16" || dtype == "fp16") return 2;
  throw UsageError("allreduce dtype '" + dtype + "': expected fp32, bf16 or fp16");
}

std::vector<StepPrediction> predict_scaling(const LayerProfile& profile, const ScalingOptions& opt) {
  const BucketPlan plan = plan_buckets(profile, opt.bucket_bytes);
  const int bytes = gradient_bytes(opt.allreduce_dtype);
  std::vector<StepPrediction> rows;
  auto topo = [&](int nodes, int gpus) {
    Topology t;
    t.nodes = nodes;
    t.gpus_per_node = gpus;
    t.intra = opt.intra;
    t.inter = opt.inter;
    t.nics_per_node = opt.nic_per_gpu ? gpus : 1;
    return t;
  };
  for (int g : opt.single_node_gpus) rows.push_back(predict_step(profile, plan, topo(1, g), bytes));
  for (int n : opt.node_counts) rows.push_back(predict_step(profile, plan, topo(n, opt.gpus_per_node), bytes));
  return rows;
}

namespace {
std::string link_line(const char* role, const Link& l) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s: %s [%s]: busbw %.3g GB/s, latency %.0f us (%s)\n", role, l.key.c_str(),
                l.name.c_str(), l.busbw / GB, l.latency_s / us, l.measured ? "measured" : "published");
  return buf + std::string("  source: ") + l.source + "\n";
}
}  // namespace

std::string scaling_report(const LayerProfile& p, const ScalingOptions& opt, const std::vector<StepPrediction>& rows,
                           const std::string& profile_source) {
  const BucketPlan plan = plan_buckets(p, opt.bucket_bytes);
  std::string s;
  char buf[512];
  s += "Scaling model (docs/scaling.md): inputs\n";
  std::snprintf(buf, sizeof buf,
                "profile: %s (measured): %s, model %s, precision %s, batch %d per rank, %d steps\n"
                "  forward %.4f s, loss %.4f s, backward %.4f s (per-layer sum %.4f s, synchronized), optimizer "
                "%.4f s: compute %.4f s\n",
                profile_source.c_str(), p.device.c_str(), p.model.c_str(), p.precision.c_str(), p.batch, p.steps,
                p.forward_s, p.loss_s, p.backward_s, p.layers_backward_s(), p.optimizer_s, p.compute_s());
  s += buf;
  std::string sizes;
  for (size_t b = 0; b < plan.floats.size(); ++b) {
    std::snprintf(buf, sizeof buf, "%s%.2f MB after %s", b ? ", " : "", plan.floats[b] * 4.0 / (1 << 20),
                  p.layers[plan.ready_after[b]].name.c_str());
    sizes += buf;
  }
  std::snprintf(buf, sizeof buf, "gradients: %lld floats, allreduce dtype %s (%d bytes each); %zu bucket(s) of %g MB "
                "(train.allreduce_bucket_mb): %s\n",
                static_cast<long long>(p.parameter_floats()), opt.allreduce_dtype.c_str(),
                gradient_bytes(opt.allreduce_dtype), plan.floats.size(), opt.bucket_bytes / double(1 << 20),
                sizes.c_str());
  s += buf;
  s += link_line("inside a node", opt.intra);
  s += link_line("between nodes", opt.inter);
  std::snprintf(buf, sizeof buf, "NICs: %s; %d GPUs per node in the multi-node rows\n",
                opt.nic_per_gpu ? "one per GPU" : "one per node", opt.gpus_per_node);
  s += buf;
  s += "allreduce per bucket: latency + 2(P-1)/P x bytes / busbw; between nodes busbw = min(intra, NICs x NIC), "
       "latency x (1 + log2 nodes)\n\n";
  std::snprintf(buf, sizeof buf, "%6s %5s %6s %10s %10s %10s %10s %7s %11s\n", "nodes", "gpus", "ranks", "step_s",
                "compute_s", "allred_s", "exposed_s", "eff", "images/s");
  s += buf;
  for (const auto& r : rows) {
    std::snprintf(buf, sizeof buf, "%6d %5d %6d %10.4f %10.4f %10.4f %10.4f %6.1f%% %11.1f\n", r.nodes,
                  r.gpus_per_node, r.ranks, r.step_s, r.compute_s, r.comm_s, r.exposed_s, 100 * r.efficiency,
                  r.images_per_s);
    s += buf;
  }
  return s;
}

std::string scaling_json(const LayerProfile& p, const ScalingOptions& opt, const std::vector<StepPrediction>& rows) {
  nlohmann::json j;
  j["profile"] = nlohmann::json::parse(p.to_json());
  const BucketPlan plan = plan_buckets(p, opt.bucket_bytes);
  j["bucket_floats"] = plan.floats;
  j["bucket_bytes"] = opt.bucket_bytes;
  j["allreduce_dtype"] = opt.allreduce_dtype;
  for (const auto* l : {&opt.intra, &opt.inter})
    j[l == &opt.intra ? "intra_node_link" : "inter_node_link"] = {
        {"key", l->key}, {"name", l->name}, {"busbw_bytes_per_s", l->busbw}, {"latency_s", l->latency_s},
        {"source", l->source}, {"measured", l->measured}};
  j["nic_per_gpu"] = opt.nic_per_gpu;
  auto& out = j["rows"] = nlohmann::json::array();
  for (const auto& r : rows)
    out.push_back({{"nodes", r.nodes}, {"gpus_per_node", r.gpus_per_node}, {"ranks", r.ranks}, {"step_s", r.step_s},
                   {"compute_s", r.compute_s}, {"allreduce_s", r.comm_s}, {"exposed_s", r.exposed_s},
                   {"efficiency", r.efficiency}, {"images_per_s", r.images_per_s}});
  return j.dump(1) + "\n";
}

}  // namespace ds
