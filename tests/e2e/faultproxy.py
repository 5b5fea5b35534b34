#!/usr/bin/env python3
"""tests/e2e/faultproxy.py - a fault-injecting HTTP/1.1 proxy in front of the test bed's API server.

Test tooling only (Python 3 standard library: asyncio + ssl). The client under test talks TLS to
this proxy on 127.0.0.1 (a serving certificate for 127.0.0.1, issued with openssl by the test
bed's CA, so the client keeps the bed's CA file); the proxy forwards every request to the real
kube-apiserver over TLS with the bed's admin client certificate. ALPN offers http/1.1 only, so the
client speaks HTTP/1.1 and watch responses arrive in chunked transfer encoding, which the proxy
decodes to act per event line and re-encodes one line per chunk.

Faults are armed on a plain-HTTP control port and apply to the NEXT watch request (one shot):

  GET /arm?fault=F[&after=N][&size=S][&match=SUBSTR][&hold=1][&rv=RV]
      F = pass     forward unchanged (records that the watch was seen)
          cut      forward N events, then half of the next event line, then close the connection
          badjson  forward N events, then inject one line that is not JSON, then go on forwarding
          stall    forward N events, then forward nothing more but keep both connections open
                   until the client gives up (closes its side)
          big      forward N events, then inject one valid ADDED event line of S bytes (sent in
                   16 KiB chunks), then go on forwarding
      match: only a watch whose request target contains SUBSTR (default: any watch)
      hold=1: do not send the request upstream until GET /release
      rv=RV: rewrite the request's resourceVersion query parameter to RV before forwarding
  GET /hide?prefix=P  from now on, answer every request whose path starts with P as the API
                server answers for a group/version it does not serve (404, "404 page not
                found"), without forwarding it; repeatable (several prefixes)
  GET /unhide   forward every path again
  GET /kick     end every active pass-through watch (not one at fault) now: the proxy sends the
                chunked terminator (as the server does at timeoutSeconds) and closes the
                connection, so the client resumes at once
  GET /release  let held requests go
  GET /reset    disarm and forget the records
  GET /state    JSON: counters, the armed fault, the faults applied (with what happened), the
                last 50 watch request targets (after any rewrite), and the last 200 request
                lines of any kind ("METHOD target", recent_requests; /reset forgets them)

"Events" are ADDED/MODIFIED/DELETED/ERROR lines; BOOKMARK lines are forwarded but not counted, and
a cut never falls on one. Other requests are forwarded byte for byte (keep-alive on both sides).

Usage: faultproxy.py --workdir DIR [--ready-file FILE] [--upstream URL --ca FILE --ca-key FILE
       --client-cert FILE --client-key FILE] [--port P] [--control-port P]
Defaults come from the test bed's env ($TESTBED_SERVER, $TESTBED_CA, $TESTBED_RUN/pki/ca.key,
$TESTBED_ADMIN_CERT, $TESTBED_ADMIN_KEY). When ready it writes {"port":P,"control_port":C,"pid":X}
to --ready-file (atomically) and to stdout.
"""

import argparse
import asyncio
import json
import os
import re
import ssl
import subprocess
import sys
import time
import urllib.parse

MAX_HEAD = 64 * 1024
BIG_CHUNK = 16 * 1024


def log(*a):
    print("[faultproxy %s]" % time.strftime("%H:%M:%S"), *a, file=sys.stderr, flush=True)


class State:
    def __init__(self):
        self.requests = 0
        self.watches = 0
        self.armed = None  # dict: fault, after, size, match, hold, rv
        self.applied = []  # records of armed faults consumed
        self.active = set()  # asyncio.Event per active watch relay (kick)
        self.held = 0
        self.release = asyncio.Event()
        self.recent = []  # the last 50 watch request targets as forwarded
        self.recent_requests = []  # the last 200 "METHOD target" of any request
        self.hidden = []  # path prefixes answered 404 (/hide)
        self.hidden_answered = 0

    def snapshot(self):
        return {
            "requests": self.requests,
            "watches": self.watches,
            "armed": self.armed,
            "applied": self.applied,
            "active_watches": len(self.active),
            "held": self.held,
            "recent_watches": self.recent,
            "recent_requests": self.recent_requests,
            "hidden": self.hidden,
            "hidden_answered": self.hidden_answered,
        }


STATE = None


def make_serving_cert(workdir, ca, ca_key):
    key = os.path.join(workdir, "proxy.key")
    csr = os.path.join(workdir, "proxy.csr")
    ext = os.path.join(workdir, "proxy.ext")
    crt = os.path.join(workdir, "proxy.crt")

    def run(*a):
        subprocess.run(a, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    run("openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key)
    run("openssl", "req", "-new", "-key", key, "-subj", "/CN=trainsched-faultproxy", "-out", csr)
    with open(ext, "w") as f:
        f.write("basicConstraints=critical,CA:FALSE\n"
                "keyUsage=critical,digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=serverAuth\n"
                "subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    # -CAserial in the workdir: the CA's own serial file in pki/ stays untouched
    run("openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAserial",
        os.path.join(workdir, "ca.srl"), "-CAcreateserial", "-sha256", "-days", "2",
        "-extfile", ext, "-out", crt)
    os.unlink(csr)
    os.unlink(ext)
    return crt, key


# ------------------------------------------------------------------ HTTP/1.1 helpers

async def read_head(reader):
    """Bytes up to and including the blank line; b"" at a clean EOF before any byte."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as e:
        if not e.partial:
            return b""
        raise
    except asyncio.LimitOverrunError:
        raise ValueError("header too large")
    return head


def parse_headers(lines):
    hdrs = []
    for ln in lines:
        if not ln:
            continue
        name, _, value = ln.partition(":")
        hdrs.append((name.strip(), value.strip()))
    return hdrs


def hget(hdrs, name):
    name = name.lower()
    for k, v in hdrs:
        if k.lower() == name:
            return v
    return None


async def read_chunk(reader):
    """One chunk of a chunked body: (data, raw bytes) ; data b"" means the last chunk (raw holds
    the terminator with any trailers)."""
    size_line = await reader.readuntil(b"\r\n")
    size = int(size_line.split(b";")[0].strip(), 16)
    if size == 0:
        raw = size_line
        while True:
            t = await reader.readuntil(b"\r\n")
            raw += t
            if t == b"\r\n":
                return b"", raw
    data = await reader.readexactly(size)
    crlf = await reader.readexactly(2)
    if crlf != b"\r\n":
        raise ValueError("bad chunk framing")
    return data, size_line + data + crlf


async def relay_body(reader, writer, hdrs, until_eof_ok):
    """Relay a message body framed by hdrs; returns False when the connection must close."""
    te = (hget(hdrs, "Transfer-Encoding") or "").lower()
    cl = hget(hdrs, "Content-Length")
    if "chunked" in te:
        while True:
            data, raw = await read_chunk(reader)
            writer.write(raw)
            await writer.drain()
            if not data:
                return True
    if cl is not None:
        left = int(cl)
        while left > 0:
            b = await reader.read(min(left, 65536))
            if not b:
                raise ConnectionError("short body")
            writer.write(b)
            await writer.drain()
            left -= len(b)
        return True
    if until_eof_ok:
        while True:
            b = await reader.read(65536)
            if not b:
                return False
            writer.write(b)
            await writer.drain()
    return True


class Discard:
    """A writer that drops what it is given (the body of a request answered here)."""

    def write(self, b):
        pass

    async def drain(self):
        pass


def chunk(b):
    return b"%x\r\n" % len(b) + b + b"\r\n"


EVENT_TYPE = re.compile(rb'"type"\s*:\s*"([A-Z]+)"')


def event_type(line):
    m = EVENT_TYPE.search(line[:200])
    return m.group(1).decode() if m else "?"


def is_watch(target):
    q = urllib.parse.urlsplit(target).query
    return any(k == "watch" and v in ("1", "true") for k, v in urllib.parse.parse_qsl(q))


def rewrite_rv(target, rv):
    parts = urllib.parse.urlsplit(target)
    q = [(k, v) for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
         if k != "resourceVersion"]
    q.append(("resourceVersion", rv))
    return urllib.parse.urlunsplit(("", "", parts.path, urllib.parse.urlencode(q), ""))


def namespace_of(target):
    m = re.search(r"/namespaces/([^/?]+)/", target)
    return m.group(1) if m else "default"


def big_event(size, ns):
    head = ('{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":'
            '{"name":"faultproxy-big","namespace":"%s"},"data":{"pad":"' % ns).encode()
    tail = b'"}}}\n'
    pad = max(0, size - len(head) - len(tail))
    return head + b"x" * pad + tail


# ------------------------------------------------------------------ the proxy

class Conn:
    def __init__(self, args, up_ctx, creader, cwriter):
        self.args = args
        self.up_ctx = up_ctx
        self.cr = creader
        self.cw = cwriter
        self.ur = None
        self.uw = None

    async def upstream(self):
        if self.uw is None or self.uw.is_closing() or self.ur.at_eof():
            self.close_upstream()
            u = urllib.parse.urlsplit(self.args.upstream)
            self.ur, self.uw = await asyncio.open_connection(
                u.hostname, u.port, ssl=self.up_ctx, server_hostname=u.hostname,
                limit=MAX_HEAD)

    def close_upstream(self):
        if self.uw is not None:
            try:
                self.uw.transport.abort()
            except Exception:
                pass
        self.ur = self.uw = None

    async def run(self):
        try:
            while True:
                if not await self.one():
                    break
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError, ValueError,
                OSError) as e:
            log("connection ended:", type(e).__name__, e)
        finally:
            self.close_upstream()
            try:
                self.cw.close()
            except Exception:
                pass

    async def one(self):
        head = await read_head(self.cr)
        if not head:
            return False
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = lines[0].split(" ", 2)
        hdrs = parse_headers(lines[1:])
        STATE.requests += 1
        STATE.recent_requests = (STATE.recent_requests + [method + " " + target])[-200:]
        path = urllib.parse.urlsplit(target).path
        if any(path.startswith(p) for p in STATE.hidden):
            # as kube-apiserver answers for a group/version it does not serve
            await relay_body(self.cr, Discard(), hdrs, until_eof_ok=False)
            STATE.hidden_answered += 1
            body = b"404 page not found\n"
            self.cw.write(b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=utf-8\r\n"
                          b"Content-Length: %d\r\n\r\n" % len(body) + body)
            await self.cw.drain()
            return "close" not in (hget(hdrs, "Connection") or "").lower()
        watch = method == "GET" and is_watch(target)
        fault = None
        if watch:
            STATE.watches += 1
            a = STATE.armed
            if a is not None and (not a.get("match") or a["match"] in target):
                fault = dict(a)
                STATE.armed = None
                fault["path"] = target
                fault["events_forwarded"] = 0
                fault["done"] = False
                STATE.applied.append(fault)
                log("applying", fault["fault"], "to", target)
                if fault.get("rv"):
                    target = rewrite_rv(target, fault["rv"])
                if fault.get("hold"):
                    STATE.held += 1
                    fault["held"] = True
                    await STATE.release.wait()
                    STATE.held -= 1
                    fault["held"] = False
        if watch:
            STATE.recent = (STATE.recent + [target])[-50:]
        out = ("%s %s %s\r\n" % (method, target, version)).encode("latin-1")
        out += b"".join(("%s: %s\r\n" % (k, v)).encode("latin-1") for k, v in hdrs) + b"\r\n"
        bodyless = hget(hdrs, "Content-Length") in (None, "0") and not hget(
            hdrs, "Transfer-Encoding")
        for attempt in (0, 1):
            await self.upstream()
            self.uw.write(out)
            await relay_body(self.cr, self.uw, hdrs, until_eof_ok=False)
            await self.uw.drain()
            try:
                rhead = await read_head(self.ur)
            except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
                rhead = b""
            if rhead:
                break
            # the upstream closed a kept-alive connection before answering: a request without
            # a body is sent again once on a new connection
            self.close_upstream()
            if attempt or not bodyless:
                raise ConnectionError("upstream closed")
        rlines = rhead.decode("latin-1").split("\r\n")
        status = int(rlines[0].split(" ", 2)[1])
        rhdrs = parse_headers(rlines[1:])
        chunked = "chunked" in (hget(rhdrs, "Transfer-Encoding") or "").lower()
        self.cw.write(rhead)
        await self.cw.drain()
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            keep = True
        elif watch and status == 200 and chunked:
            keep = await self.watch_relay(fault)
        else:
            if fault is not None:
                fault["done"] = True
                fault["outcome"] = "status %d, not applied" % status
            keep = await relay_body(self.ur, self.cw, rhdrs, until_eof_ok=True)
        conn_hdr = (hget(hdrs, "Connection") or "").lower()
        rconn_hdr = (hget(rhdrs, "Connection") or "").lower()
        if "close" in rconn_hdr:
            self.close_upstream()
        return keep and "close" not in conn_hdr and "close" not in rconn_hdr

    async def watch_relay(self, fault):
        """Per-line relay of a chunked watch response. Returns False when the client connection
        must be closed."""
        kick = asyncio.Event()
        if fault is None:  # a kick ends pass-through watches only, never the one at fault
            STATE.active.add(kick)
        buf = bytearray()
        kind = fault["fault"] if fault else "none"
        after = int(fault.get("after", 0)) if fault else 0
        injected = False
        t0 = time.monotonic()
        client_eof = asyncio.ensure_future(self.cr.read(1))
        kick_wait = asyncio.ensure_future(kick.wait())
        up = None

        async def inject_if_due():
            nonlocal injected
            if injected or fault is None or fault["events_forwarded"] < after:
                return False
            if kind == "badjson":
                injected = True
                self.cw.write(chunk(b'{"type":"MODIFIED","object":{"metadata":{"name":"x"}},,}\n'))
                await self.cw.drain()
                fault["outcome"] = "injected invalid JSON after %d events" % after
                fault["done"] = True
            elif kind == "big":
                injected = True
                line = big_event(int(fault.get("size", 1 << 20)), namespace_of(fault["path"]))
                for i in range(0, len(line), BIG_CHUNK):
                    self.cw.write(chunk(line[i:i + BIG_CHUNK]))
                    await self.cw.drain()
                fault["outcome"] = "injected an event line of %d bytes after %d events" % (
                    len(line), after)
                fault["done"] = True
            elif kind == "stall":
                injected = True
                return True
            return False

        try:
            if await inject_if_due():
                return await self.stall(fault, client_eof)
            while True:
                up = asyncio.ensure_future(read_chunk(self.ur))
                done, _ = await asyncio.wait({up, client_eof, kick_wait},
                                             return_when=asyncio.FIRST_COMPLETED)
                if client_eof in done:
                    up.cancel()
                    if fault is not None and not fault["done"]:
                        fault["done"] = True
                        fault["outcome"] = "client closed after %d events" % fault[
                            "events_forwarded"]
                    return False
                if kick_wait in done and up not in done:
                    up.cancel()
                    self.cw.write(b"0\r\n\r\n")
                    await self.cw.drain()
                    if fault is not None and not fault["done"]:
                        fault["done"] = True
                        fault["outcome"] = "kicked after %d events" % fault["events_forwarded"]
                    return False
                data, raw = up.result()
                up = None
                if not data:  # the server ended the watch
                    if buf:
                        self.cw.write(chunk(bytes(buf)))
                    self.cw.write(raw)
                    await self.cw.drain()
                    if fault is not None and not fault["done"]:
                        fault["done"] = True
                        fault["outcome"] = "server ended the watch after %d events" % fault[
                            "events_forwarded"]
                    return True
                buf += data
                while True:
                    nl = buf.find(b"\n")
                    if nl < 0:
                        break
                    line = bytes(buf[:nl + 1])
                    del buf[:nl + 1]
                    et = event_type(line)
                    counted = et != "BOOKMARK"
                    if (kind == "cut" and counted and fault is not None and not fault["done"]
                            and fault["events_forwarded"] >= after):
                        half = max(1, (len(line) - 1) // 2)
                        self.cw.write(chunk(line[:half]))
                        await self.cw.drain()
                        fault["done"] = True
                        fault["outcome"] = "cut a %s event after %d of %d bytes" % (
                            et, half, len(line))
                        fault["elapsed_s"] = round(time.monotonic() - t0, 3)
                        return False
                    self.cw.write(chunk(line))
                    await self.cw.drain()
                    if counted and fault is not None:
                        fault["events_forwarded"] += 1
                    if await inject_if_due():
                        return await self.stall(fault, client_eof)
        finally:
            STATE.active.discard(kick)
            for t in (client_eof, kick_wait, up):
                if t is None:
                    continue
                if not t.done():
                    t.cancel()
                else:
                    if not t.cancelled():
                        t.exception()  # retrieved: no "exception was never retrieved" noise

    async def stall(self, fault, client_eof):
        """Forward nothing; wait until the client closes its side (or sends anything)."""
        t0 = time.monotonic()
        fault["outcome"] = "stalling after %d events" % fault["events_forwarded"]
        log("stalling", fault["path"])
        try:
            await client_eof
        except Exception:
            pass
        fault["done"] = True
        fault["stalled_s"] = round(time.monotonic() - t0, 3)
        fault["outcome"] = "stalled after %d events; the client closed after %.1f s" % (
            fault["events_forwarded"], fault["stalled_s"])
        log(fault["outcome"])
        return False


# ------------------------------------------------------------------ control endpoint

async def control(reader, writer):
    try:
        head = await read_head(reader)
        target = head.decode("latin-1").split("\r\n")[0].split(" ")[1]
        u = urllib.parse.urlsplit(target)
        q = dict(urllib.parse.parse_qsl(u.query))
        code = 200
        if u.path == "/arm":
            f = q.get("fault", "pass")
            if f not in ("pass", "cut", "badjson", "stall", "big"):
                code, body = 400, {"error": "unknown fault %s" % f}
            else:
                STATE.armed = {"fault": f, "after": int(q.get("after", "0")),
                               "size": int(q.get("size", "0")), "match": q.get("match", ""),
                               "hold": q.get("hold", "0") == "1", "rv": q.get("rv", "")}
                if STATE.armed["hold"]:
                    STATE.release.clear()
                log("armed", STATE.armed)
                body = STATE.snapshot()
        elif u.path == "/hide":
            STATE.hidden.append(q.get("prefix", "/"))
            body = STATE.snapshot()
        elif u.path == "/unhide":
            STATE.hidden = []
            body = STATE.snapshot()
        elif u.path == "/kick":
            n = len(STATE.active)
            for ev in list(STATE.active):
                ev.set()
            body = {"kicked": n}
        elif u.path == "/release":
            STATE.release.set()
            body = STATE.snapshot()
        elif u.path == "/reset":
            STATE.armed = None
            STATE.applied = []
            STATE.recent_requests = []
            STATE.release.set()
            body = STATE.snapshot()
        elif u.path == "/state":
            body = STATE.snapshot()
        else:
            code, body = 404, {"error": "no such endpoint"}
        data = json.dumps(body).encode()
        writer.write(b"HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                     b"Connection: close\r\n\r\n" % (code, len(data)) + data)
        await writer.drain()
    except Exception as e:  # a broken control request must not stop the proxy
        log("control:", type(e).__name__, e)
    finally:
        writer.close()


async def main():
    global STATE
    env = os.environ
    p = argparse.ArgumentParser()
    p.add_argument("--workdir", required=True)
    p.add_argument("--ready-file")
    p.add_argument("--upstream", default=env.get("TESTBED_SERVER"))
    p.add_argument("--ca", default=env.get("TESTBED_CA"))
    p.add_argument("--ca-key", default=os.path.join(env.get("TESTBED_RUN", ""), "pki", "ca.key"))
    p.add_argument("--client-cert", default=env.get("TESTBED_ADMIN_CERT"))
    p.add_argument("--client-key", default=env.get("TESTBED_ADMIN_KEY"))
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--control-port", type=int, default=0)
    args = p.parse_args()
    for k in ("upstream", "ca", "client_cert", "client_key"):
        if not getattr(args, k):
            p.error("--%s missing (source the test bed's env)" % k.replace("_", "-"))
    os.makedirs(args.workdir, exist_ok=True)
    STATE = State()

    crt, key = make_serving_cert(args.workdir, args.ca, args.ca_key)
    srv_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    srv_ctx.load_cert_chain(crt, key)
    srv_ctx.set_alpn_protocols(["http/1.1"])
    up_ctx = ssl.create_default_context(cafile=args.ca)
    up_ctx.load_cert_chain(args.client_cert, args.client_key)
    up_ctx.set_alpn_protocols(["http/1.1"])

    async def on_client(r, w):
        await Conn(args, up_ctx, r, w).run()

    proxy = await asyncio.start_server(on_client, "127.0.0.1", args.port, ssl=srv_ctx,
                                       limit=MAX_HEAD)
    ctl = await asyncio.start_server(control, "127.0.0.1", args.control_port)
    ready = {"port": proxy.sockets[0].getsockname()[1],
             "control_port": ctl.sockets[0].getsockname()[1], "pid": os.getpid()}
    if args.ready_file:
        tmp = args.ready_file + ".tmp"
        with open(tmp, "w") as f:
            json.dump(ready, f)
        os.rename(tmp, args.ready_file)
    print(json.dumps(ready), flush=True)
    log("listening on", ready, "upstream", args.upstream)
    async with proxy, ctl:
        await asyncio.gather(proxy.serve_forever(), ctl.serve_forever())


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
