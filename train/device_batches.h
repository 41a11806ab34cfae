// The train and validation splits held in backend memory (GPU memory on a GPU): read from the
// store once, in chunks, with read_batch's checks, then each step's batch is gathered there by
// row numbers (Backend::gather_rows): no store read, no pageable upload and no wait per step.
// The batches are the very ones read_batch makes (same rows, same order), so training gives the
// same weights either way.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/training_store.h"
#include "model/backend.h"
#include "model/tensor.h"
#include "train/batches.h"

namespace ds {

class DeviceSplit {
 public:
  // Reads `split` whole; a progress line every ~10 % when `log`.
  DeviceSplit(const StoreReader& store, const std::string& split, model::Backend& be, bool log);
  size_t rows() const { return valid_.size(); }
  // batch = rows[0..n) of this split; `index` holds the same row numbers as floats in backend
  // memory (one upload per epoch: see EpochIndex).
  void gather(const std::vector<size_t>& rows, const float* index, Batch& batch) const;
  // batch = the consecutive rows [row0, row0 + n) (validation walks the split in order).
  void slice(size_t row0, size_t n, Batch& batch) const;

 private:
  model::Backend& be_;
  int C_, H_, W_, Hy_, Wy_;
  model::Tensor x_, y_;
  std::vector<int64_t> valid_;  // valid loss points per row (model::count_valid_points)
};

// Bytes the splits take in backend memory.
int64_t split_bytes(const StoreMeta& meta, size_t rows);

// train.data_on_device: "true", "false", or "auto" (true when `bytes` fit in half of the
// backend's free memory, shared by `sharing` ranks on the CPU). Logs one line saying which and why
// when `log`.
bool choose_data_on_device(const std::string& setting, int64_t bytes, model::Backend& be, int sharing, bool log);

}  // namespace ds
