// The network over the days to predict: standardized samples in, the model's output per day
// out, a batch at a time; the block of days predict holds at once; and the device check of the
// forward before anything is predicted (train/device_check.h).
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "io/config.h"
#include "io/log.h"
#include "io/training_store.h"
#include "model/backend.h"
#include "model/net.h"

namespace ds {

// Standardized samples [first, first + n) into x (n x C x H x W): from a split of the store or
// from new predictor files.
using ReadSamples = std::function<void(size_t first, size_t n, float* x)>;

// The network's output for samples [first, first + n) of `total`: (n, channels, H' x W'), NaN
// where the mask is 0. A stop request is honoured between batches, naming "<unit> <day> of
// <total>". `keep` >= 0 keeps that output channel only, (n, 1, H' x W'): the training pass of
// occurrence: frequency needs p alone, a third of the memory (North America: 0.9 of 2.6 GB).
std::vector<float> run_network(model::Net& net, model::Backend& be, const StoreMeta& meta, size_t first, size_t n,
                               size_t total, int channels, const ReadSamples& read, int batch_size, Progress& progress,
                               int keep = -1, const std::string& unit = "predicting day");

// Days predicted, checked, scored and written a block at a time, so that memory stays bounded
// by a block whatever the length of the run (30 years of North America are about 1 GB a field,
// and a precipitation file has five fields and its members): predict.block_days, else about
// 32 MiB of network output a channel, divided among stochastic members (each a field of its
// own). A whole number of batches, so that every batch is the one a single block would give and
// the output does not depend on the block size.
size_t days_per_block(const Config& cfg, size_t hw);

// train.device_check (train/device_check.h): the forward of the first batch, and of the last
// where it is smaller (plans are per shape), on this backend against the CPU's, before anything
// is predicted; auto: on a GPU.
void check_device_forward(model::Net& net, model::Backend& be, const Config& cfg, const StoreMeta& meta, size_t n,
                          const ReadSamples& read);

}  // namespace ds
