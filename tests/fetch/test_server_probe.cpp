// probe_server, which tells a server that accepted the connection and never answered from a host
// that takes none, after a request timed out; and the dry run's cap on a request's wait.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "fetch/request_watch.h"
#include "fetch/server_probe.h"

namespace ds {
namespace {

// A socket bound to a free local port: listening (it accepts, as a hung server's kernel does,
// without the program ever calling accept) or closed (refuses).
struct LocalPort {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int port = 0;
  explicit LocalPort(bool listening) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), len), 0);
    EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
    port = ntohs(a.sin_port);
    if (listening) {
      EXPECT_EQ(::listen(fd, 4), 0);
    }
  }
  ~LocalPort() { ::close(fd); }
  std::string url() const { return "http://user:secret@127.0.0.1:" + std::to_string(port) + "/x.nc"; }
};

TEST(ServerProbe, AListeningServerAccepts) {
  LocalPort server(true);
  EXPECT_EQ(probe_server(server.url(), 2), ServerProbe::accepts);
}

TEST(ServerProbe, AClosedPortTakesNoConnectionAtOnce) {
  LocalPort closed(false);  // bound, not listening: the kernel refuses
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(probe_server(closed.url(), 2), ServerProbe::no_connection);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.5);
}

TEST(ServerProbe, NoHostIsUnknown) {
  EXPECT_EQ(probe_server("data/synth/era.nc", 1), ServerProbe::unknown);
  EXPECT_EQ(probe_server("http:///x.nc", 1), ServerProbe::unknown);
}

// A dry run answers within kDryRunWaitS whatever fetch.timeout_s says (300 s by default; 0 is no
// time-out), and sooner where fetch.timeout_s is shorter.
TEST(DryRunTimeout, CappedAtTwentySeconds) {
  EXPECT_EQ(kDryRunWaitS, 20);
  EXPECT_EQ(dry_run_timeout(300), 20);
  EXPECT_EQ(dry_run_timeout(0), 20);
  EXPECT_EQ(dry_run_timeout(1.5), 1.5);
}

}  // namespace
}  // namespace ds
