#include "io/atomic_file.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "io/error.h"

namespace ds {

namespace fs = std::filesystem;

AtomicFile::AtomicFile(std::string final_path) : final_(std::move(final_path)) {
  // The pid keeps concurrent writers (MPI ranks, parallel fetch chunks) off each other's file.
  temp_ = final_ + ".tmp-" + std::to_string(::getpid());
  const fs::path parent = fs::path(final_).parent_path();
  if (!parent.empty()) make_dirs(parent.string());
  std::remove(temp_.c_str());
}

AtomicFile::~AtomicFile() {
  if (!committed_) std::remove(temp_.c_str());
}

void AtomicFile::commit() {
  std::error_code ec;
  fs::rename(temp_, final_, ec);
  if (ec) throw Error("cannot rename " + temp_ + " to " + final_ + ": " + ec.message());
  committed_ = true;
}

void make_dirs(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot create directory " + dir + ": " + ec.message());
}

bool path_exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

}  // namespace ds
