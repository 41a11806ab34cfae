#include "io/read_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ds {

std::string read_file(const std::string& path, ExitCode code) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path + ": cannot be opened: " + std::strerror(errno), code);
  struct Closer {  // on every way out, bad_alloc from append included
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  std::string bytes;
  char buf[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;  // a signal the stage handles later (stop_signal.h)
    if (got < 0) throw Error(path + ": cannot be read: " + std::strerror(errno), code);
    if (got == 0) break;
    bytes.append(buf, size_t(got));
  }
  return bytes;
}

}  // namespace ds
