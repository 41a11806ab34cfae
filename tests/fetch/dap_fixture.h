// The test OPeNDAP server (tests/dap_server/dap_server.py) serving the formula-valued sources
// of make_sources.py from a scratch folder, started once per test executable on an ephemeral
// port of 127.0.0.1 and stopped at the end.
#pragma once
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "support/test_support.h"

namespace ds::test {

class DapServer {
 public:
  DapServer() {
    const std::string tools = source_dir() + "/tests/dap_server";
    const std::string make = "/usr/bin/python3 " + tools + "/make_sources.py " + dir_.path();
    if (std::system(make.c_str()) != 0) throw std::runtime_error("make_sources.py failed");
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe");
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], STDOUT_FILENO);
      ::close(fds[0]);
      // The server's own diagnostics (HDF5's attribute probes among them) go to a file.
      const std::string script = tools + "/dap_server.py", log = dir_ / "requests.log", err = dir_ / "server.err";
      if (!std::freopen(err.c_str(), "w", stderr)) _exit(126);
      execl("/usr/bin/python3", "python3", script.c_str(), "--root", dir_.path().c_str(), "--log", log.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    ::close(fds[1]);
    FILE* out = fdopen(fds[0], "r");
    int port = 0;
    if (std::fscanf(out, "PORT %d", &port) != 1) throw std::runtime_error("the test DAP server did not start");
    std::fclose(out);
    base_ = "http://127.0.0.1:" + std::to_string(port);
  }
  ~DapServer() {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  // URL of a served file, optionally with faults ("drop=1+id=x", see dap_server.py).
  std::string url(const std::string& file, const std::string& faults = "") const {
    return faults.empty() ? base_ + "/" + file : base_ + "/faults/" + faults + "/" + file;
  }
  std::string local(const std::string& file) const { return dir_ / file; }
  std::string log() const { return dir_ / "requests.log"; }

 private:
  TempDir dir_;
  pid_t pid_ = -1;
  std::string base_;
};

// One server for the whole test executable.
inline const DapServer& dap_server() {
  static DapServer server;
  return server;
}

}  // namespace ds::test
