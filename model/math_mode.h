// run.math applied to a backend: TF32 tensor-core math (the default, as PyTorch's convolutions) or
// plain FP32 on the GPU. The CPU backend has no such choice; one log line says so.
#pragma once
#include <string>

#include <spdlog/spdlog.h>

#include "io/error.h"
#include "model/backend.h"

namespace ds::model {

inline MathMode parse_math_mode(const std::string& math) {
  if (math == "tf32") return MathMode::kTf32;
  if (math == "fp32") return MathMode::kFp32;
  throw UsageError("key 'run.math' is '" + math + "', expected tf32 or fp32");
}

// Sets the mode; `log` (one rank) says what it means on this backend.
inline void apply_math_mode(Backend& be, const std::string& math, bool log) {
  const bool honoured = be.set_math(parse_math_mode(math));
  if (!log) return;
  if (honoured)
    spdlog::info("run.math {}: convolutions and matrix products in {}", math,
                 math == "tf32" ? "TF32 on tensor cores" : "plain FP32");
  else
    spdlog::info("run.math {} ignored: the {} backend computes in FP32", math, be.name());
}

}  // namespace ds::model
