#include "bench/bench_data.h"

#include <cmath>
#include <cstdint>
#include <fstream>
#include <random>
#include <vector>

#include "io/error.h"

namespace ds::bench {

namespace {

// Uniform doubles from the top 53 bits, so a seed gives the same batch with any standard library.
double uniform(std::mt19937_64& rng) { return double(rng() >> 11) * 0x1.0p-53; }

model::Tensor tensor_from(model::Backend& be, model::Shape s, const std::vector<float>& v) {
  model::Tensor t(be, s);
  t.upload(v.data());
  return t;
}

void write_array(std::ofstream& f, const std::string& name, const model::Tensor& t) {
  const int32_t len = int32_t(name.size());
  const model::Shape s = t.shape();
  const int32_t dims[4] = {s.n, s.c, s.h, s.w};
  const std::vector<float> v = t.to_host();
  f.write(reinterpret_cast<const char*>(&len), 4);
  f.write(name.data(), len);
  f.write(reinterpret_cast<const char*>(dims), sizeof dims);
  f.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(float)));
}

}  // namespace

BenchBatch make_batch(model::Backend& be, const model::Net& net, int batch, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const model::ModelSpec& spec = net.spec();
  const model::Shape xs{batch, spec.in_channels, spec.in_h, spec.in_w};
  const model::Shape os = net.output_shape(batch);
  const model::Shape ys{batch, 1, os.h, os.w}, ms{1, 1, os.h, os.w};
  std::vector<float> x(size_t(xs.size())), y(size_t(ys.size())), mask(size_t(ms.size()));
  for (float& v : x) v = float(2 * uniform(rng) - 1);
  for (float& v : y) v = uniform(rng) < 0.5 ? 0.0f : float(-5.0 * std::log(1.0 - uniform(rng)));
  for (float& v : mask) v = uniform(rng) < 0.7 ? 1.0f : 0.0f;
  return {tensor_from(be, xs, x), tensor_from(be, ys, y), tensor_from(be, ms, mask)};
}

void dump(const std::string& path, model::Net& net, const BenchBatch& b) {
  std::ofstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot write the benchmark dump");
  const std::vector<model::Param> params = net.params();
  const int32_t count = int32_t(params.size() + 3);
  f.write("DSB1", 4);
  f.write(reinterpret_cast<const char*>(&count), 4);
  for (const model::Param& p : params) write_array(f, p.name, *p.value);
  write_array(f, "x", b.x);
  write_array(f, "y", b.y);
  write_array(f, "mask", b.mask);
  if (!f) throw Error(path + ": write failed");
}

}  // namespace ds::bench
