#include "fetch/server_probe.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "fetch/chunk.h"

namespace ds {

namespace {

// A non-blocking connect, then poll for its completion: a dropped SYN would otherwise block
// for the kernel's retries (minutes).
bool connects(const addrinfo& ai, int ms) {
  const int fd = ::socket(ai.ai_family, ai.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai.ai_protocol);
  if (fd < 0) return false;
  bool ok = ::connect(fd, ai.ai_addr, ai.ai_addrlen) == 0;
  if (!ok && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof err;
    ok = ::poll(&p, 1, ms) == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
  }
  ::close(fd);
  return ok;
}

}  // namespace

ServerProbe probe_server(const std::string& url, double seconds) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return ServerProbe::unknown;
  std::string host = url_host(url);
  std::string port = url.compare(0, scheme_end, "https") == 0 ? "443" : "80";
  if (!host.empty() && host.front() == '[') {  // [IPv6]:port
    const size_t close = host.find(']');
    if (close == std::string::npos) return ServerProbe::unknown;
    if (close + 1 < host.size() && host[close + 1] == ':') port = host.substr(close + 2);
    host = host.substr(1, close - 1);
  } else if (const size_t colon = host.rfind(':'); colon != std::string::npos) {
    port = host.substr(colon + 1);
    host.erase(colon);
  }
  if (host.empty() || port.empty()) return ServerProbe::unknown;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) return ServerProbe::unknown;
  ServerProbe result = ServerProbe::no_connection;
  for (const addrinfo* ai = found; ai; ai = ai->ai_next)
    if (connects(*ai, static_cast<int>(seconds * 1000))) {
      result = ServerProbe::accepts;
      break;
    }
  ::freeaddrinfo(found);
  return result;
}

}  // namespace ds
