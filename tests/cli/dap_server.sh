# Sourced by the CLI tests that fetch over OPeNDAP: start_dap_server ROOT starts the test DAP
# server (tests/dap_server/dap_server.py, for /usr/bin/python3) on a free port serving ROOT's
# files in place, logging to server.log in the current folder, and waits for it (10 s at most).
# Sets server_pid (the caller's cleanup kills it), port and base (http://127.0.0.1:PORT).
start_dap_server() {
  local here
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  /usr/bin/python3 "$here/../dap_server/dap_server.py" --root "$1" --log server.log > port.txt 2> server.err &
  server_pid=$!
  for _ in $(seq 100); do grep -q PORT port.txt 2>/dev/null && break; sleep 0.1; done
  port=$(awk '{print $2}' port.txt)
  [[ -n $port ]] || { echo "the test DAP server did not start"; cat server.err; exit 1; }
  base=http://127.0.0.1:$port
}
