// Where a fresh training of a continuous predictand (temperature and the like) starts.
//
// Such a predictand is the network's target as observed, in its own units (preprocess/target.h):
// about 281 for tas in K, where a freshly initialized network outputs about 0. Adam at a learning
// rate of 1e-4 moves a bias by about 1e-4 a step, so a network started at 0 spends its whole
// training walking towards the mean: tas in K over Iberia, deepesd, 40 epochs ended at a test RMSE
// of 255 K (user test, 2026-11-24), where the same data in degC reached 1.66. So a fresh training
// sets the output biases to the training split's climatology: the mean channel's to the mean, a
// Gaussian's log-variance channel to the log of the variance. deepesd has a bias per land point
// and gets each point's own; the convolutional head has one bias per channel and gets the
// domain's (the variance around the domain's mean). The network then learns departures from
// climatology, and a constant offset of the predictand (K against degC) changes nothing.
// Precipitation keeps Keras's zero biases: the Bernoulli-Gamma parameters are not in the
// observation's units, and the reference experiment starts from Keras's initialization.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "io/training_store.h"
#include "model/loss.h"
#include "model/net.h"

namespace ds {

struct TargetClimatology {
  std::vector<double> mean, var;  // per modelled (mask != 0) box, row-major; var with ddof 0
  double domain_mean = 0, domain_var = 0;  // over every observed (box, day) of those boxes
  size_t days = 0;                         // training days read
};

// The climatology of the train split's target over the modelled boxes, ignoring missing days.
// InputError naming the store if no modelled box is ever observed.
TargetClimatology training_climatology(const StoreReader& store);

// Sets the output biases of `net` ("heads/b" of deepesd, else "head/b") as the top of this file
// says, for the Gaussian and MSE losses; does nothing for Bernoulli-Gamma. Returns a line for
// the log ("" when nothing was set). UsageError if the net has neither bias, or one of another size.
std::string start_from_climatology(model::Net& net, model::LossKind loss, const TargetClimatology& clim,
                                   const std::string& units);

}  // namespace ds
