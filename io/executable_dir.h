// Where the running program lies, for the files shipped beside it (the CUDA plugin in ../lib,
// a bundle's configs/datasets in ../configs): a bundle runs where the build's paths do not exist.
#pragma once
#include <string>

namespace ds {

// The folder of /proc/self/exe (symlinks resolved by the kernel); "" when it cannot be read.
std::string executable_dir();

}  // namespace ds
