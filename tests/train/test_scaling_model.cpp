// The scaling model (train/scaling_model.h): its bucket schedule is the trainer's
// (GradientBuckets), the closed forms of one bucket and of buckets hidden behind backward,
// the ring formula, and the layer profile's JSON round trip.
#include <gtest/gtest.h>

#include <cmath>

#include "io/error.h"
#include "model/net.h"
#include "train/gradient_buckets.h"
#include "train/layer_profile.h"
#include "train/scaling_model.h"

using namespace ds;

namespace {

// A communicator that only counts: GradientBuckets' construction needs one.
class Idle final : public Communicator {
 public:
  std::string name() const override { return "idle"; }
  int rank() const override { return 0; }
  int size() const override { return 2; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 2; }
  void start_allreduce_sum(float*, size_t) override {}
  void start_allreduce_sum(double*, size_t) override {}
  void start_broadcast(float*, size_t, int) override {}
  void start_barrier() override {}
  void progress() override {}
  std::vector<OpSpan> wait_all(const std::string&) override { return {}; }
  std::vector<std::string> gather(const std::string& m, int) override { return {m}; }
  std::vector<std::string> local_allgather(const std::string& m) override { return {m}; }
  [[noreturn]] void abort(const std::string& m, int) override { throw std::runtime_error(m); }
};

// Layers of given backward seconds and gradient floats (one gradient each), in backward order.
LayerProfile synthetic(const std::vector<std::pair<double, int64_t>>& layers, double forward = 1, double opt = 0.5) {
  LayerProfile p;
  p.device = "test";
  p.batch = 8;
  p.forward_s = forward;
  p.optimizer_s = opt;
  for (size_t i = 0; i < layers.size(); ++i) {
    LayerTime l;
    l.name = "l" + std::to_string(i);
    l.backward_s = layers[i].first;
    if (layers[i].second > 0) l.param_floats = {layers[i].second};
    p.layers.push_back(l);
    p.backward_s += l.backward_s;
  }
  return p;
}

Topology two_ranks(double busbw, double latency) {
  Topology t;
  t.gpus_per_node = 2;
  t.intra = Link{"x", "x", latency, busbw, "test", true};
  t.inter = t.intra;
  return t;
}

}  // namespace

TEST(ScalingModel, BucketScheduleIsTheTrainersCut) {
  auto be = model::make_cpu_backend(1);
  for (const char* name : {"demo", "mnn"}) {
    model::ModelSpec spec;
    spec.name = name;
    spec.in_channels = 3;
    spec.in_h = 6;
    spec.in_w = 7;
    if (spec.name == "demo") spec.filters = {8, 16, 8};
    model::Net net(spec, *be);
    net.init(1);
    const model::Shape o = net.output_shape(1);
    model::Tensor x(*be, {1, 3, 6, 7}), y(*be, {1, 1, o.h, o.w}), mask(*be, {1, 1, o.h, o.w});
    const std::vector<float> land(size_t(mask.size()), 1.0f);
    mask.upload(land.data());
    const LayerProfile p =
        measure_layer_profile(net, *be, model::LossKind::kBernoulliGamma, x, y, mask, 0, 1, "fp32");
    ASSERT_EQ(p.parameter_floats(), net.parameter_count()) << name;
    // Every layer is timed forward too (a layer's forward is never instantaneous on a clock that
    // counts the wait for the backend).
    for (const LayerTime& l : p.layers) EXPECT_GT(l.forward_s, 0.0) << name << " " << l.name;
    Idle comm;
    for (size_t bytes : {size_t(0), size_t(1), size_t(1024), size_t(20000), size_t(4) << 20}) {
      GradientBuckets buckets(net.params(), bytes, comm);
      const BucketPlan plan = plan_buckets(p, bytes);
      ASSERT_EQ(plan.floats.size(), buckets.bucket_count()) << name << " " << bytes;
      for (size_t b = 0; b < plan.floats.size(); ++b)
        EXPECT_EQ(size_t(plan.floats[b]), buckets.bucket_floats(b)) << name << " " << bytes << " bucket " << b;
      // The last bucket holds the first layer's gradients: ready when backward ends.
      EXPECT_EQ(plan.ready_after.back(), p.layers.size() - 1) << name;
    }
  }
}

TEST(ScalingModel, RingAllreduceFormula) {
  Topology t = two_ranks(10e9, 1e-5);
  EXPECT_DOUBLE_EQ(t.allreduce_s(1e9), 1e-5 + 2.0 * 1 / 2 * 1e9 / 10e9);
  t.gpus_per_node = 4;
  EXPECT_DOUBLE_EQ(t.allreduce_s(1e9), 1e-5 + 2.0 * 3 / 4 * 1e9 / 10e9);
  t.gpus_per_node = 1;
  EXPECT_EQ(t.allreduce_s(1e9), 0.0);  // one rank: no allreduce
  // Between nodes: the slowest of NVLink and the node's NICs; one NIC per GPU or one per node.
  Topology m;
  m.nodes = 4;
  m.gpus_per_node = 4;
  m.intra = find_link("nvlink4", "test", false);
  m.inter = find_link("ib-ndr", "test", true);
  m.nics_per_node = 4;
  EXPECT_DOUBLE_EQ(m.busbw(), 4 * m.inter.busbw);
  m.nics_per_node = 1;
  EXPECT_DOUBLE_EQ(m.busbw(), m.inter.busbw);
  EXPECT_DOUBLE_EQ(m.latency_s(), m.inter.latency_s * 3);
  EXPECT_THROW(find_link("carrier-pigeon", "--link", false), UsageError);
  // A link of the other kind: NVLink is no network between nodes, InfiniBand no link inside one.
  EXPECT_THROW(find_link("nvlink4", "--network", true), UsageError);
  EXPECT_THROW(find_link("ib-ndr", "--link", false), UsageError);
  EXPECT_NO_THROW(find_link("shm-mpi", "--link", false));
  EXPECT_THROW(gradient_bytes("fp8"), UsageError);
}

TEST(ScalingModel, OneBucketDoesNotOverlap) {
  // step = compute + allreduce of every gradient.
  const LayerProfile p = synthetic({{0.1, 1000}, {0.2, 2000}, {0.3, 3000}});
  const BucketPlan plan = plan_buckets(p, 0);
  ASSERT_EQ(plan.floats.size(), 1u);
  const Topology t = two_ranks(1e6, 0.01);
  const double ar = t.allreduce_s(6000 * 4);
  const StepPrediction r = predict_step(p, plan, t, 4);
  EXPECT_NEAR(r.compute_s, 1 + 0.6 + 0.5, 1e-12);
  EXPECT_NEAR(r.step_s, r.compute_s + ar, 1e-12);
  EXPECT_NEAR(r.exposed_s, ar, 1e-12);
  EXPECT_NEAR(r.efficiency, r.compute_s / r.step_s, 1e-12);
  EXPECT_NEAR(r.images_per_s, 2 * 8 / r.step_s, 1e-9);
  // Half the bytes on the wire with bf16.
  EXPECT_NEAR(predict_step(p, plan, t, 2).step_s, r.compute_s + t.allreduce_s(6000 * 2), 1e-12);
}

TEST(ScalingModel, HiddenBucketsLeaveOnlyTheLast) {
  // Buckets of one layer each (1-byte cut); every allreduce but the last ends before the next
  // layer's backward does: step = compute + the last bucket's allreduce.
  const LayerProfile p = synthetic({{0.0, 0}, {1.0, 1000}, {1.0, 1000}, {1.0, 500}});
  const BucketPlan plan = plan_buckets(p, 1);
  ASSERT_EQ(plan.floats.size(), 3u);
  const Topology t = two_ranks(1e6, 0.001);  // 1000 floats: 0.005 s, far below a layer's 1 s
  const StepPrediction r = predict_step(p, plan, t, 4);
  EXPECT_NEAR(r.step_s, r.compute_s + t.allreduce_s(500 * 4), 1e-12);
  // And a link so slow that the allreduces queue up: they run back to back after the first
  // bucket is ready (end of layer 1, at 1 s).
  const Topology slow = two_ranks(1000, 0);
  const StepPrediction q = predict_step(p, plan, slow, 4);
  const double total = slow.allreduce_s(1000 * 4) * 2 + slow.allreduce_s(500 * 4);
  EXPECT_NEAR(q.step_s, 1 + 1.0 + total + 0.5, 1e-9);
}

TEST(ScalingModel, PerLayerTimesAreScaledToTheUnsynchronizedBackward) {
  // Per-layer times that sum to twice the real backward: bucket readiness uses half of each.
  LayerProfile p = synthetic({{2.0, 1000}, {2.0, 1000}});
  p.backward_s = 2.0;
  const Topology t = two_ranks(1e6, 0);
  const StepPrediction r = predict_step(p, plan_buckets(p, 1), t, 4);
  ASSERT_EQ(r.bucket_start.size(), 2u);
  EXPECT_NEAR(r.bucket_start[0], 1.0, 1e-12);
  EXPECT_NEAR(r.bucket_start[1], 2.0, 1e-12);
}

TEST(ScalingModel, ProfileJsonRoundTrip) {
  LayerProfile p = synthetic({{0.25, 0}, {0.5, 7}});
  p.layers[1].forward_s = 0.125;
  p.layers[1].params = {"c/b", "c/W"};
  p.layers[1].param_floats = {3, 4};
  p.precision = "bf16";
  const LayerProfile q = LayerProfile::from_json(p.to_json(), "test");
  EXPECT_EQ(q.device, "test");
  EXPECT_EQ(q.precision, "bf16");
  ASSERT_EQ(q.layers.size(), 2u);
  EXPECT_EQ(q.layers[1].param_floats, (std::vector<int64_t>{3, 4}));
  EXPECT_DOUBLE_EQ(q.backward_s, p.backward_s);
  EXPECT_DOUBLE_EQ(q.layers[1].forward_s, p.layers[1].forward_s);
  EXPECT_THROW(LayerProfile::from_json("{\"device\": 1}", "bad.json"), InputError);
  EXPECT_THROW(LayerProfile::from_json("not json", "bad.json"), InputError);
}

TEST(ScalingModel, TableRowsAndReportNameTheirSources) {
  const LayerProfile p = synthetic({{0.1, 1 << 20}, {0.1, 1 << 20}});
  ScalingOptions opt;
  opt.intra = find_link("nvlink4", "t", false);
  opt.inter = find_link("ib-ndr", "t", true);
  const auto rows = predict_scaling(p, opt);
  ASSERT_EQ(rows.size(), 10u);  // 1-4 GPUs, then 2..64 nodes of 4
  EXPECT_EQ(rows[0].ranks, 1);
  EXPECT_DOUBLE_EQ(rows[0].efficiency, 1.0);
  EXPECT_EQ(rows.back().ranks, 256);
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_LE(rows[i].efficiency, 1.0);
  const std::string s = scaling_report(p, opt, rows, "test.json");
  EXPECT_NE(s.find("published"), std::string::npos);
  EXPECT_NE(s.find("nccl-tests"), std::string::npos);
  EXPECT_NE(s.find("images/s"), std::string::npos);
}
