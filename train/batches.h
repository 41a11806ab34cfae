// Batches of the training store, read sample by sample from HDF5 so that only one batch is in
// memory whatever the store's size, and uploaded to the backend.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/store_checks.h"
#include "io/training_store.h"
#include "model/tensor.h"

namespace ds {

struct Batch {
  model::Tensor x;  // (n, C, H, W)
  model::Tensor y;  // (n, 1, H', W')
  int64_t valid = 0;  // points the loss counts (model::count_valid_points), known on the host
};

// Reads the samples `rows` of `split` into batch (reshaping its tensors to rows.size()).
void read_batch(const StoreReader& store, const std::string& split, const std::vector<size_t>& rows, Batch& batch);

// The land mask as a (1, 1, H', W') tensor of 0/1 floats.
model::Tensor mask_tensor(const StoreMeta& meta, model::Backend& be);

}  // namespace ds
