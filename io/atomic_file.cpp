#include "io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "io/error.h"

namespace ds {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail_errno(const std::string& path, const std::string& what, int err) {
  throw Error(path + ": " + what + ": " + std::strerror(err));
}

// Writes all of [data, data+size) to fd, retrying short writes and EINTR; returns 0 or errno.
int write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data += n;
    size -= size_t(n);
  }
  return 0;
}

// fsync of a file or folder by name; returns 0 or errno.
int fsync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_WRONLY) | O_CLOEXEC);
  if (fd < 0) return errno;
  int err = ::fsync(fd) < 0 ? errno : 0;
  // Some file systems (and /proc-like mounts) cannot fsync a folder: nothing to make durable.
  if (directory && (err == EINVAL || err == ENOTSUP)) err = 0;
  if (::close(fd) < 0 && err == 0) err = errno;
  return err;
}

}  // namespace

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
  // The data first: a rename that reaches the disk before the blocks would leave a file of
  // zeros or garbage under the final name after a crash. A write-back failure shows up here.
  if (const int err = fsync_path(temp_, false)) fail_errno(final_, "cannot write", err);
  std::error_code ec;
  fs::rename(temp_, final_, ec);
  if (ec) throw Error(final_ + ": cannot rename " + temp_ + " to it: " + ec.message());
  committed_ = true;
  // Then the folder, so the new name itself survives a crash.
  const fs::path parent = fs::path(final_).parent_path();
  if (const int err = fsync_path(parent.empty() ? "." : parent.string(), true))
    fail_errno(final_, "cannot sync its folder", err);
}

namespace {
bool same_bytes(const std::string& a, const std::string& b) {
  std::error_code ec1, ec2;
  if (!fs::exists(b, ec2) || fs::file_size(a, ec1) != fs::file_size(b, ec2) || ec1 || ec2) return false;
  std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
  std::vector<char> ba(1 << 20), bb(1 << 20);
  while (fa && fb) {
    fa.read(ba.data(), std::streamsize(ba.size()));
    fb.read(bb.data(), std::streamsize(bb.size()));
    if (fa.gcount() != fb.gcount() || !std::equal(ba.begin(), ba.begin() + fa.gcount(), bb.begin())) return false;
  }
  return fa.eof() && fb.eof();
}
}  // namespace

bool AtomicFile::commit_unless_unchanged() {
  if (!same_bytes(temp_, final_)) {
    commit();
    return true;
  }
  std::error_code ec;
  fs::remove(temp_, ec);
  committed_ = true;
  return false;
}

void write_text_file(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) fail_errno(path, "cannot create", errno);
  const int err = write_all(fd, text.data(), text.size());
  const int close_err = ::close(fd) < 0 ? errno : 0;
  if (err || close_err) fail_errno(path, "cannot write", err ? err : close_err);
}

void write_file_atomically(const std::string& path, const std::string& text) {
  AtomicFile f(path);
  try {
    write_text_file(f.temp_path(), text);
  } catch (const Error& e) {
    // Name the final file, not the temporary one the user never asked for.
    std::string what = e.what();
    if (what.rfind(f.temp_path(), 0) == 0) what = path + what.substr(f.temp_path().size());
    throw Error(what);
  }
  f.commit();
}

AppendFile::AppendFile(const std::string& path, bool truncate) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (truncate ? O_TRUNC : 0), 0666);
  if (fd_ < 0) fail_errno(path, "cannot open for writing", errno);
}
AppendFile::AppendFile(AppendFile&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)) { o.fd_ = -1; }
AppendFile& AppendFile::operator=(AppendFile&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    path_ = std::move(o.path_);
    o.fd_ = -1;
  }
  return *this;
}
AppendFile::~AppendFile() {
  if (fd_ >= 0) ::close(fd_);
}

void AppendFile::append(const std::string& data) {
  if (fd_ < 0) throw Error(path_ + ": not open for writing");
  if (const int err = write_all(fd_, data.data(), data.size())) fail_errno(path_, "cannot write", err);
}

void AppendFile::close() {
  if (fd_ < 0) return;
  int err = ::fsync(fd_) < 0 ? errno : 0;
  if (err == EINVAL) err = 0;  // a pipe or special file: nothing to sync
  if (::close(fd_) < 0 && err == 0) err = errno;
  fd_ = -1;
  if (err) fail_errno(path_, "cannot write", err);
}

void make_dirs(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot create directory " + dir + ": " + ec.message());
}

void check_can_write(const std::string& path, const std::string& option, WriteMode mode) {
  const auto cannot = [&](const std::string& why) {
    return Error(path + ": " + option + " cannot be written there (" + why + "); it is written at the end of the run, "
                 "so the run does not start");
  };
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw cannot("it is a folder");
  if (mode == WriteMode::kAppend && fs::exists(path, ec)) {
    if (::access(path.c_str(), W_OK) != 0) throw cannot(std::strerror(errno));
    return;
  }
  // The folder a new file goes into: for kReplace the nearest one that exists (AtomicFile makes
  // the rest), for kAppend its own (AppendFile makes none).
  fs::path folder = fs::path(path).parent_path();
  if (folder.empty()) folder = ".";
  if (mode == WriteMode::kReplace)
    while (!fs::exists(folder, ec) && folder.has_parent_path() && folder.parent_path() != folder) folder = folder.parent_path();
  if (!fs::is_directory(folder, ec))
    throw cannot(fs::exists(folder, ec) ? folder.string() + " is not a folder" : folder.string() + ": " + std::strerror(ENOENT));
  // A file made and removed there: the same rights, file system and quota as the real write.
  const std::string probe = (folder / (".downscale-write-check-" + std::to_string(::getpid()))).string();
  ::unlink(probe.c_str());  // one a killed check of the same pid left
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw cannot(folder.string() + ": " + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

bool path_exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

}  // namespace ds
