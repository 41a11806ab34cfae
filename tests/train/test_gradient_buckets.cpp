// GradientBuckets (train/gradient_buckets.h) on the demo network, with a communicator that
// records what is started and plays two identical ranks (the sum doubles every value). With
// `device` it says device_memory() (as NCCL does): the CPU backend's memory is host memory, so
// the same in-place doubling checks the device-memory bucket path (backend copies and scale).
#include <gtest/gtest.h>

#include "model/net.h"
#include "train/gradient_buckets.h"

using namespace ds;

namespace {

class TwoIdenticalRanks final : public Communicator {
 public:
  struct Start {
    float* data;
    size_t n;
    int layers_done;  // how many layers backward had finished when this allreduce started
  };
  std::vector<Start> starts;
  int layers_done = 0;
  bool device = false;
  std::vector<WireType> wires;
  bool device_memory() const override { return device; }
  void start_compressed_allreduce_sum(float* data, size_t n, WireType wire) override {
    wires.push_back(wire);
    start_allreduce_sum(data, n);
  }
  std::string name() const override { return "test"; }
  int rank() const override { return 0; }
  int size() const override { return 2; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 2; }
  void start_allreduce_sum(float* data, size_t n) override { starts.push_back({data, n, layers_done}); }
  void start_allreduce_sum(double*, size_t) override { FAIL(); }
  void start_broadcast(float*, size_t, int) override { FAIL(); }
  void start_barrier() override { FAIL(); }
  void progress() override {}
  std::vector<OpSpan> wait_all(const std::string&) override {
    for (auto& s : starts)
      for (size_t i = 0; i < s.n; ++i) s.data[i] *= 2;
    return std::vector<OpSpan>(starts.size());
  }
  std::vector<std::string> gather(const std::string& mine, int) override { return {mine, mine}; }
  std::vector<std::string> local_allgather(const std::string& mine) override { return {mine, mine}; }
  [[noreturn]] void abort(const std::string& m, int) override { throw std::runtime_error(m); }
};

struct Fixture {
  std::unique_ptr<model::Backend> be = model::make_cpu_backend(1);
  model::Net net;
  model::Tensor x, d;
  static model::ModelSpec spec() {
    model::ModelSpec s;
    s.in_channels = 3;
    s.in_h = 5;
    s.in_w = 6;
    s.filters = {8, 8, 8};
    return s;
  }
  Fixture() : net(spec(), *be), x(*be, {2, 3, 5, 6}), d(*be, net.output_shape(2)) {
    net.init(3);
    std::vector<float> h(size_t(x.size()));
    for (size_t i = 0; i < h.size(); ++i) h[i] = float((i * 37) % 11) / 11.0f - 0.5f;
    x.upload(h.data());
    h.resize(size_t(d.size()));
    for (size_t i = 0; i < h.size(); ++i) h[i] = float((i * 13) % 7) / 7.0f - 0.4f;
    d.upload(h.data());
  }
};

}  // namespace

TEST(GradientBuckets, SumTheWeightedGradientsInBucketOrderDuringBackward) {
  Fixture f;
  f.net.forward(f.x);
  f.net.backward(f.d);
  std::vector<std::vector<float>> want;
  for (auto& p : f.net.params()) want.push_back(p.grad->to_host());

  TwoIdenticalRanks comm;
  // 1 KB buckets: the demo net's conv kernels (3x3x3x8 = 216 floats, 8x3x3x8 = 576, ...)
  // land in several.
  GradientBuckets buckets(f.net.params(), 1024, comm);
  ASSERT_GT(buckets.bucket_count(), 2u);
  buckets.begin(0.25f);
  f.net.forward(f.x);
  f.net.backward(f.d, [&](const std::vector<model::Param>& ps) {
    buckets.ready(ps);
    ++comm.layers_done;
  });
  const int layers = comm.layers_done;
  buckets.finish("test");

  ASSERT_EQ(comm.starts.size(), buckets.bucket_count());
  for (size_t b = 0; b < comm.starts.size(); ++b) EXPECT_EQ(comm.starts[b].n, buckets.bucket_floats(b));
  // The first bucket (the last layers' gradients) started while backward still had layers to do.
  EXPECT_LT(comm.starts.front().layers_done, layers - 1);
  auto ps = f.net.params();
  for (size_t i = 0; i < ps.size(); ++i) {
    const auto got = ps[i].grad->to_host();
    for (size_t k = 0; k < got.size(); ++k)
      ASSERT_FLOAT_EQ(got[k], 2 * 0.25f * want[i][k]) << ps[i].name << " [" << k << "]";
  }
}

TEST(GradientBuckets, ARankWithoutRowsSendsZerosInTheSameOrder) {
  Fixture f;
  f.net.forward(f.x);
  f.net.backward(f.d);  // grads hold values that must not be sent
  TwoIdenticalRanks comm;
  GradientBuckets buckets(f.net.params(), 1024, comm);
  buckets.begin(0.0f);
  buckets.finish("test");
  ASSERT_EQ(comm.starts.size(), buckets.bucket_count());
  for (size_t b = 0; b < comm.starts.size(); ++b) EXPECT_EQ(comm.starts[b].n, buckets.bucket_floats(b));
  for (auto& p : f.net.params())
    for (float v : p.grad->to_host()) ASSERT_EQ(v, 0.0f) << p.name;
}

TEST(GradientBuckets, ZeroBytesMeansOneBucket) {
  Fixture f;
  TwoIdenticalRanks comm;
  GradientBuckets buckets(f.net.params(), 0, comm);
  EXPECT_EQ(buckets.bucket_count(), 1u);
  EXPECT_EQ(int64_t(buckets.bucket_floats(0)), f.net.parameter_count());
}

// The device-memory schedule (NCCL's) gives exactly the host schedule's gradients, with the same
// allreduces in the same order, and hands the wire type to the communicator.
TEST(GradientBuckets, DeviceMemoryBucketsGiveTheHostBucketsGradients) {
  std::vector<std::vector<float>> got[2];
  std::vector<size_t> sizes[2];
  for (int device = 0; device < 2; ++device) {
    Fixture f;
    TwoIdenticalRanks comm;
    comm.device = device == 1;
    GradientBuckets buckets(f.net.params(), 1024, comm, Communicator::WireType::kBf16);
    EXPECT_EQ(buckets.on_device(), comm.device);
    for (float weight : {0.25f, 1.0f}) {  // a weighted step, then one with weight 1 (no scale)
      buckets.begin(weight);
      f.net.forward(f.x);
      f.net.backward(f.d, [&](const std::vector<model::Param>& ps) { buckets.ready(ps); });
      buckets.finish("test");
    }
    for (auto& p : f.net.params()) got[device].push_back(p.grad->to_host());
    for (auto& s : comm.starts) sizes[device].push_back(s.n);
    ASSERT_EQ(comm.wires.size(), 2 * buckets.bucket_count());
    for (auto w : comm.wires) EXPECT_EQ(w, Communicator::WireType::kBf16);
    if (comm.device) {  // the buckets are not the gradients' own memory
      for (auto& s : comm.starts)
        for (auto& p : f.net.params()) EXPECT_NE(s.data, p.grad->data());
    }
  }
  EXPECT_EQ(sizes[0], sizes[1]);
  ASSERT_EQ(got[0].size(), got[1].size());
  for (size_t i = 0; i < got[0].size(); ++i) EXPECT_EQ(got[0][i], got[1][i]) << "parameter " << i;
}
