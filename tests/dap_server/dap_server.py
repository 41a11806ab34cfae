#!/usr/bin/python3
"""A small OPeNDAP (DAP2) server for tests and benchmarks: serves the NetCDF files of one folder
on 127.0.0.1, so that netCDF-C's DAP client (the one `downscale fetch` uses) talks to a real
server, and can inject the failures a THREDDS server shows in practice.

    /usr/bin/python3 dap_server.py --root DIR [--port 0] [--log FILE] [--auth USER:PASSWORD]

prints "PORT <n>" on stdout once it listens. Requests:

    /<file>.dds|.das|.dods[?constraint]            the file DIR/<file>
    /faults/<options>/<file>.dds|.das|.dods[?...]  the same, with faults

<options> is a '+'-separated list (counters are kept per distinct <options> string, so each
test can use its own, e.g. add id=<anything>); "data requests" are .dods requests projecting a
variable of 3 or more dimensions (the hyperslab reads, not the coordinate prefetch):
    drop=N       the first N data requests send their header and half the body, then close
    e500=N       the first N data requests answer 500 Internal Server Error
    e500open=N   the first N .dds requests answer 500 (a failure while opening)
    slow=S       every data request waits S seconds first
    hang=N       the first N data requests never answer (a server that stops responding; the
                 connection stays open until the client gives up or the server ends)
    hangopen=N   the first N .dds requests never answer (a hang while opening)
    rate=B       every data response is sent at B bytes/s (a per-connection limit, as over a WAN)
    gone=VAR     data requests for VAR answer 404 (a variable the server lists but cannot serve)
    auth=1       every request needs HTTP Basic credentials (the server's --auth USER:PASSWORD,
                 kept out of URLs so tests can check a password never reaches a log), else 401

Variables are served as DAP2 Arrays with named dimensions (not Grids); values are sent as
stored (packed, no masking), in XDR (big-endian, lengths twice), as DAP2 prescribes. Written
with http.server and python3-netcdf4/numpy from Debian; single file, no other dependency.
"""
import argparse
import base64
import re
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import netCDF4
import numpy as np

# numpy dtype -> (DAP2 type name, XDR wire dtype). DAP2 has no 8-bit signed or 64-bit ints;
# Int16/UInt16 travel as 32-bit words.
DAP_TYPES = {
    "f4": ("Float32", ">f4"), "f8": ("Float64", ">f8"),
    "i4": ("Int32", ">i4"), "u4": ("UInt32", ">u4"),
    "i2": ("Int16", ">i4"), "u2": ("UInt16", ">u4"),
    "u1": ("Byte", "u1"), "i1": ("Byte", "u1"),
}

_counters = {}
_counters_lock = threading.Lock()


def take(options, key, limit):
    """True for the first `limit` calls with this options string and key."""
    with _counters_lock:
        n = _counters.get((options, key), 0)
        _counters[(options, key)] = n + 1
    return n < limit


def dap_type(var):
    key = var.dtype.str[1:]
    if key not in DAP_TYPES:
        raise ValueError("type %s of %s not served" % (var.dtype, var.name))
    return DAP_TYPES[key]


def parse_constraint(query):
    """'z[0:1:9][0][2:5],time' -> [(name, [(start, stride, stop), ...] or None)]"""
    projections = []
    text = urllib.parse.unquote(query.split("&", 1)[0])
    for item in filter(None, text.split(",")):
        m = re.match(r"^([^\[]+)((?:\[[^\]]*\])*)$", item)
        if not m:
            raise ValueError("bad projection " + item)
        name = m.group(1)
        slices = []
        for s in re.findall(r"\[([^\]]*)\]", m.group(2)):
            parts = [int(p) for p in s.split(":")]
            if len(parts) == 1:
                slices.append((parts[0], 1, parts[0]))
            elif len(parts) == 2:
                slices.append((parts[0], 1, parts[1]))
            else:
                slices.append((parts[0], parts[1], parts[2]))
        projections.append((name, slices or None))
    return projections


def das_value(value, dtype):
    if isinstance(value, str):
        return '"%s"' % value.replace("\\", "\\\\").replace('"', '\\"')
    arr = np.atleast_1d(value)
    if arr.dtype.kind == "f":
        return ", ".join(repr(float(x)) for x in arr)
    return ", ".join(str(int(x)) for x in arr)


def das_type(value):
    if isinstance(value, str):
        return "String"
    arr = np.atleast_1d(value)
    return DAP_TYPES.get(arr.dtype.str[1:], ("Float64", ""))[0]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "downscale-test-dap/1"
    # http.server sends the headers and the body in separate writes; with Nagle's algorithm on,
    # the body of a small reply (a DDS, a DAS) waits for the client's delayed ACK of the headers,
    # 40 ms on Linux, on every request after the first of a kept-alive connection. Tomcat
    # (THREDDS) and Apache (Hyrax) set TCP_NODELAY by default; so does this server.
    disable_nagle_algorithm = True

    def log_message(self, fmt, *args):
        if self.server.log:
            with self.server.log_lock:
                self.server.log.write("%s\n" % (fmt % args))
                self.server.log.flush()

    def send_text(self, code, text, ctype="text/plain", extra=()):
        body = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def dap_error(self, code, message):
        self.send_text(code, 'Error {\n    code = %d;\n    message = "%s";\n};\n' % (code, message),
                       extra=[("XDODS-Server", "dods/3.2")])

    def do_GET(self):
        try:
            self.handle_get()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def handle_get(self):
        url = urllib.parse.urlsplit(self.path)
        path, query = urllib.parse.unquote(url.path), url.query
        options = ""
        if path.startswith("/faults/"):
            _, _, options, path = path.split("/", 3)
            path = "/" + path
        opts = dict(o.split("=", 1) for o in options.split("+") if "=" in o)

        if "auth" in opts:
            want = "Basic " + base64.b64encode(self.server.auth.encode()).decode()
            if self.headers.get("Authorization") != want:
                self.send_text(401, "Unauthorized\n", extra=[("WWW-Authenticate", 'Basic realm="test"')])
                return

        m = re.match(r"^/(.+?)\.(dds|das|dods)$", path)
        if not m:
            self.dap_error(404, "not an OPeNDAP request: " + path)
            return
        name, kind = m.group(1), m.group(2)
        file = self.server.root + "/" + name
        if ".." in name:
            self.dap_error(404, "no such dataset")
            return
        # Requests are served concurrently, one thread each, as THREDDS and Hyrax serve them: a
        # client with several requests in flight (fetch's parallel chunks) overlaps them here as
        # it would against a real server, while nccopy's single request is unaffected. Open files
        # are kept, as THREDDS does; netCDF4-python (HDF5) is not thread-safe, so only the
        # netCDF work (metadata and the hyperslab read) holds the lock. Encoding, the injected
        # delays and sending run outside it, so one slow connection does not stall the others.
        with self.server.nc_lock:
            ds = self.server.datasets.get(file)
            if ds is None:
                try:
                    ds = netCDF4.Dataset(file)
                except OSError:
                    ds = None
                else:
                    ds.set_auto_maskandscale(False)
                    self.server.datasets[file] = ds
            reply = self.prepare(ds, name, kind, options, opts, query) if ds is not None else None
        if reply is None:
            self.dap_error(404, "no such dataset: " + name)
            return
        what = reply[0]
        if what == "hang":  # outside the dataset lock: the other requests go on
            time.sleep(24 * 3600)
            return
        if what == "error":
            self.dap_error(reply[1], reply[2])
        elif what == "text":
            self.send_text(200, reply[1], extra=[("XDODS-Server", "dods/3.2")])
        else:
            _, header, arrays, is_data, drop = reply
            if is_data and "slow" in opts:
                time.sleep(float(opts["slow"]))
            self.send_dods(header, arrays, opts, is_data, drop)

    def prepare(self, ds, name, kind, options, opts, query):
        """Under the dataset lock: everything that touches the netCDF file. Returns
        ("error", code, message), ("text", body) or ("dods", header, arrays, is_data, drop)."""
        if kind == "das":
            return ("text", self.das(ds))
        try:
            projections = parse_constraint(query) if query else [(v, None) for v in ds.variables]
            for v, _ in projections:
                if v not in ds.variables:
                    return ("error", 400, "no variable " + v)
            dds = self.dds(ds, name, projections)
        except ValueError as e:
            return ("error", 400, str(e))
        if kind == "dds":
            if "e500open" in opts and take(options, "e500open", int(opts["e500open"])):
                return ("error", 500, "injected failure")
            if "hangopen" in opts and take(options, "hangopen", int(opts["hangopen"])):
                return ("hang",)
            return ("text", dds)
        is_data = any(ds.variables[v].ndim >= 3 for v, _ in projections)
        if is_data:
            if "gone" in opts and any(v == opts["gone"] for v, _ in projections):
                return ("error", 404, "variable " + opts["gone"] + " is not available")
            if "e500" in opts and take(options, "e500", int(opts["e500"])):
                return ("error", 500, "injected failure")
            if "hang" in opts and take(options, "hang", int(opts["hang"])):
                return ("hang",)
        arrays = []
        for v, slices in projections:
            var = ds.variables[v]
            if slices is None:
                data = var[...]
            else:
                for (start, stride, stop), n in zip(slices, var.shape):
                    if not (0 <= start <= stop < n and stride >= 1):
                        return ("error", 400, "index range out of bounds for " + v)
                data = var[tuple(slice(a, b + 1, s) for a, s, b in slices)]
            arrays.append((data, dap_type(var)[1]))
        drop = is_data and "drop" in opts and take(options, "drop", int(opts["drop"]))
        return ("dods", (dds + "\nData:\n").encode(), arrays, is_data, drop)

    def das(self, ds):
        out = ["Attributes {"]
        for v in ds.variables.values():
            out.append("    %s {" % v.name)
            for a in v.ncattrs():
                val = v.getncattr(a)
                out.append("        %s %s %s;" % (das_type(val), a, das_value(val, None)))
            out.append("    }")
        out.append("    NC_GLOBAL {")
        for a in ds.ncattrs():
            val = ds.getncattr(a)
            out.append("        %s %s %s;" % (das_type(val), a, das_value(val, None)))
        out.append("    }")
        out.append("}")
        return "\n".join(out) + "\n"

    @staticmethod
    def shape(var, slices):
        if slices is None:
            return list(var.shape)
        if len(slices) != var.ndim:
            raise ValueError("%s needs %d index ranges" % (var.name, var.ndim))
        return [(stop - start) // stride + 1 for start, stride, stop in slices]

    def dds(self, ds, name, projections):
        out = ["Dataset {"]
        for v, slices in projections:
            var = ds.variables[v]
            dims = "".join("[%s = %d]" % (d, n) for d, n in zip(var.dimensions, self.shape(var, slices)))
            out.append("    %s %s%s;" % (dap_type(var)[0], v, dims))
        out.append("} %s;" % name.replace("/", "_"))
        return "\n".join(out) + "\n"

    def send_dods(self, header, arrays, opts, is_data, drop=False):
        parts = [header]
        for data, wire in arrays:
            data = np.ascontiguousarray(data)
            n = np.array([data.size, data.size], dtype=">u4").tobytes()
            body = data.astype(wire).tobytes()
            if wire == "u1":
                body += b"\0" * ((-len(body)) % 4)
            parts += [n, body]
        total = sum(len(p) for p in parts)
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Description", "dods-data")
        self.send_header("XDODS-Server", "dods/3.2")
        self.send_header("Content-Length", str(total))
        self.end_headers()
        if drop:
            # Half the promised bytes, then a closed connection: what a proxy time-out looks like.
            sent, half = 0, total // 2
            for p in parts:
                if sent + len(p) >= half:
                    self.wfile.write(p[: half - sent])
                    break
                self.wfile.write(p)
                sent += len(p)
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        rate = float(opts.get("rate", 0)) if is_data else 0
        if rate > 0:
            # Paced in 64 kB pieces: each connection at `rate`, connections in parallel.
            body, start = b"".join(parts), time.monotonic()
            for off in range(0, len(body), 65536):
                self.wfile.write(body[off:off + 65536])
                ahead = (off + 65536) / rate - (time.monotonic() - start)
                if ahead > 0:
                    time.sleep(ahead)
        else:
            for p in parts:
                self.wfile.write(p)
        with self.server.log_lock:
            self.server.bytes_sent += total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", required=True, help="folder of the NetCDF files served")
    ap.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free one)")
    ap.add_argument("--log", help="append one line per request to this file")
    ap.add_argument("--auth", default="tester:s3cret-pw", help="USER:PASSWORD wanted by the auth=1 fault")
    args = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.root = args.root.rstrip("/")
    server.datasets = {}
    server.nc_lock = threading.Lock()
    server.auth = args.auth
    server.log = open(args.log, "a") if args.log else None
    server.log_lock = threading.Lock()
    server.bytes_sent = 0
    print("PORT %d" % server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
