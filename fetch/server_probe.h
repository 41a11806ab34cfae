// After a request to a server timed out: does the server still take a TCP connection? That
// tells a server that accepts and never answers (its service hung behind a listening port,
// overloaded, a proxy holding the request) from a host whose packets go nowhere (a compute node
// without a route out), which need different advice.
#pragma once
#include <string>

namespace ds {

enum class ServerProbe {
  accepts,        // a TCP connection to the URL's host and port completed
  no_connection,  // refused, unreachable, or no answer within the probe's time
  unknown,        // not a URL with a host, or the host name does not resolve
};

// One connect per address of the URL's host (port from the URL, else 80 for http, 443 for
// https), each bounded by `seconds`; nothing is sent.
ServerProbe probe_server(const std::string& url, double seconds);

}  // namespace ds
