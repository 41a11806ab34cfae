#include "train/divergence.h"

#include <cmath>

namespace ds {

namespace {
size_t count_nonfinite(const model::Tensor& t) {
  size_t bad = 0;
  for (float v : t.to_host()) bad += !std::isfinite(v);
  return bad;
}
}  // namespace

std::string first_nonfinite_parameter(const std::vector<model::Param>& params) {
  for (const auto& p : params) {
    const model::Tensor* parts[2] = {p.value, p.grad};
    const char* what[2] = {"weight", "gradient"};
    for (int i = 0; i < 2; ++i) {
      if (!parts[i]) continue;
      if (const size_t bad = count_nonfinite(*parts[i]))
        return std::string(what[i]) + " " + p.name + ": " + std::to_string(bad) + " of " +
               std::to_string(parts[i]->size()) + " values non-finite";
    }
  }
  return "";
}

}  // namespace ds
