// train.precision applied to a backend (train and predict): TF32 tensor-core math (the default,
// as PyTorch's convolutions), plain FP32, or BF16/FP16 convolutions and matrix products with FP32
// accumulation. tf32/fp32 on a backend without the choice (the CPU computes in FP32) is one info
// line; bf16/fp16 on a backend that cannot is a usage error naming the key, backend and reason.
#pragma once
#include <string>

#include <spdlog/spdlog.h>

#include "io/error.h"
#include "model/backend.h"

namespace ds::model {

inline MathMode parse_math_mode(const std::string& precision) {
  if (precision == "tf32") return MathMode::kTf32;
  if (precision == "fp32") return MathMode::kFp32;
  if (precision == "bf16") return MathMode::kBf16;
  if (precision == "fp16") return MathMode::kFp16;
  throw UsageError("key 'train.precision' is '" + precision + "', expected tf32, fp32, bf16 or fp16");
}

// The train.precision value of a mode.
inline const char* math_mode_name(MathMode m) {
  switch (m) {
    case MathMode::kTf32: return "tf32";
    case MathMode::kFp32: return "fp32";
    case MathMode::kBf16: return "bf16";
    case MathMode::kFp16: return "fp16";
  }
  return "?";
}

inline const char* math_mode_meaning(MathMode m) {
  switch (m) {
    case MathMode::kTf32: return "TF32 on tensor cores";
    case MathMode::kFp32: return "plain FP32";
    case MathMode::kBf16: return "BF16 inputs and weights, FP32 accumulation";
    case MathMode::kFp16: return "FP16 inputs and weights, FP32 accumulation";
  }
  return "?";
}

// Sets the mode; `log` (one rank) says what it means on this backend.
inline void apply_math_mode(Backend& be, const std::string& precision, bool log) {
  const MathMode mode = parse_math_mode(precision);
  const bool honoured = be.set_math(mode);
  if (!honoured && (mode == MathMode::kBf16 || mode == MathMode::kFp16))
    throw UsageError("key 'train.precision' is '" + precision + "' but the " + be.name() +
                     " backend cannot compute in it" +
                     (be.name().rfind("cuda", 0) == 0 ? std::string() : " (the CPU has no " + precision + " support in this build; use tf32 or fp32, or run.device=cuda)"));
  if (!log) return;
  if (honoured)
    spdlog::info("train.precision {}: convolutions and matrix products in {}", precision, math_mode_meaning(mode));
  else if (mode == MathMode::kFp32)  // what a backend without the choice does anyway
    spdlog::info("train.precision fp32: the {} backend computes in plain FP32", be.name());
  else  // tf32, the default, on the CPU: not an error nor a loss of accuracy, so no word like "ignored"
    spdlog::info("train.precision tf32 is a GPU tensor-core mode: the {} backend computes in plain FP32", be.name());
}

}  // namespace ds::model
