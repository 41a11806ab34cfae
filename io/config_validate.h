// The ranges of every configuration value, checked once when the config is loaded, so that a
// mistake (a negative learning rate, `epochs: 0`, test years inside the training years, a
// thousand-fold thread count) stops every stage at start with exit 2 instead of training to
// nonsense, claiming checkpoints it never wrote, or crashing.
#pragma once
#include <functional>
#include <string>

#include "io/config.h"

namespace ds {

// Where a key's value came from, for messages: the config file, or "--set key=value".
using KeyOrigin = std::function<std::string(const std::string& key)>;

// Throws UsageError "<origin>: key '<key>' ..." for the first value out of range.
void check_config(const Config& c, const KeyOrigin& origin);

// The largest run.threads accepted: far above any node's cores, far below what makes thread
// pools fail (100000 threads crashed oneDNN's OpenMP runtime).
constexpr int kMaxThreads = 1024;

}  // namespace ds
