#include "io/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "io/atomic_file.h"
#include "io/error.h"

namespace ds {

namespace {

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

// "pid N on host H" from the holder's lock file; it may not have written it yet.
std::string holder(int fd) {
  char buf[512] = {};
  const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  long pid = 0;
  char host[300] = {};
  if (n > 0 && std::sscanf(buf, "%ld %299s", &pid, host) == 2)
    return "pid " + std::to_string(pid) + " on host " + host;
  return "pid unknown";
}

std::string busy_message(const std::string& stage, const std::string& who, const std::string& dir,
                         const std::string& path) {
  return "another downscale " + stage + " (" + who + ") is using " + dir + " (lock " + path +
         "); wait for it to end or stop it first";
}

}  // namespace

void (*RunLock::between_open_and_lock)(const std::string&, int) = nullptr;

void RunLock::check_free(const std::string& dir, const std::string& stage) {
  const std::string path = dir + "/.downscale-" + stage + ".lock";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;  // no lock file: nobody has held it here
  const bool held = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  const std::string who = held ? holder(fd) : "";
  ::close(fd);  // releases the probe's lock, if it got it
  if (held) throw Error(busy_message(stage, who, dir, path));
}

RunLock::RunLock(const std::string& dir, const std::string& stage) : path_(dir + "/.downscale-" + stage + ".lock") {
  std::error_code ec;
  for (std::filesystem::path p = std::filesystem::absolute(dir, ec); !ec && !p.empty() && !std::filesystem::exists(p, ec);
       p = p.parent_path()) {
    created_.push_back(p.string());
    if (p == p.parent_path()) break;
  }
  // A holder ending in a folder its lock made removes the lock file (the destructor): a process
  // that opened the file just before that locks a file no longer under its name, while a third
  // would create and lock a new one, and both would run. So the lock counts only if the name still
  // leads to the locked file; else it is taken again (a few times: each round needs a holder that
  // ends in between).
  for (int attempt = 0;; ++attempt) {
    make_dirs(dir);
    fd_ = ::open(path_.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error("cannot open the lock file " + path_ + ": " + std::strerror(errno));
    if (between_open_and_lock) between_open_and_lock(path_, attempt);
    if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      const std::string who = err == EWOULDBLOCK ? holder(fd_) : "";
      ::close(fd_);
      fd_ = -1;
      if (err != EWOULDBLOCK) throw Error("cannot lock " + path_ + ": " + std::strerror(err));
      throw Error(busy_message(stage, who, dir, path_));
    }
    struct stat locked {}, named {};
    const bool same = ::fstat(fd_, &locked) == 0 && ::stat(path_.c_str(), &named) == 0 &&
                      locked.st_dev == named.st_dev && locked.st_ino == named.st_ino;
    if (same) break;
    ::close(fd_);
    fd_ = -1;
    if (attempt == 10) throw Error("cannot lock " + path_ + ": it was removed each time it was locked");
  }
  const std::string me = std::to_string(::getpid()) + " " + host_name() + "\n";
  // Best effort: the lock itself is the flock, the text only names its holder.
  if (ftruncate(fd_, 0) == 0 && pwrite(fd_, me.data(), me.size(), 0) < 0) {}
}

RunLock::~RunLock() {
  if (fd_ < 0) return;
  // Still holding the lock: a folder this lock made that holds only its file is removed (rmdir
  // fails on any folder with something else in it, so a stage's outputs always stay).
  if (!created_.empty()) {
    std::error_code ec;
    const auto parent = std::filesystem::path(path_).parent_path();
    bool only_lock = true;
    // increment(ec), not ++: a readdir error in a destructor must not throw.
    for (std::filesystem::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().filename() != std::filesystem::path(path_).filename()) only_lock = false;
    if (!ec && only_lock && ::unlink(path_.c_str()) == 0)
      for (const auto& d : created_)
        if (::rmdir(d.c_str()) != 0) break;
  }
  ::close(fd_);  // releases the flock
}

}  // namespace ds
