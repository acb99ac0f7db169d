"""An offline sandbox's network namespace, from the test's side: a
socket made there (a server of the test's that the sandbox's programs
reach on their loopback, or a client of a server running there), a
function run there, one HTTP request there."""

import ctypes
import http.client
import json
import os
import socket
import threading

CLONE_NEWNET = 0x40000000


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.setns.argtypes = (ctypes.c_int, ctypes.c_int)
    return libc


def netns_socket(pid, family=socket.AF_INET, type=socket.SOCK_STREAM):
    """A socket of pid's network namespace (an offline sandbox's loopback):
    this thread enters it to make the socket and comes back; the socket
    stays there, so what it binds or connects to is that namespace's."""
    libc = _libc()
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    there = os.open("/proc/%d/ns/net" % pid, os.O_RDONLY)
    try:
        if libc.setns(there, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns into the network namespace of %d" % pid)
        try:
            return socket.socket(family, type)
        finally:
            if libc.setns(own, CLONE_NEWNET) != 0:
                # This thread would stay in the sandbox's namespace.
                os._exit(70)
    finally:
        os.close(own)
        os.close(there)


def netns_call(pid, fn):
    """fn() in a thread of its own that first enters pid's network
    namespace: the sockets it makes, and the threads and programs it
    starts, are that namespace's (a server of the test's that an offline
    sandbox's programs must reach). Returns fn's result."""
    out = {}

    def body():
        libc = _libc()
        there = os.open("/proc/%d/ns/net" % pid, os.O_RDONLY)
        try:
            if libc.setns(there, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns into the network namespace of %d" % pid)
            out["value"] = fn()
        except BaseException as e:
            out["error"] = e
        finally:
            os.close(there)

    t = threading.Thread(target=body)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def netns_connect(pid, port, timeout=10.0):
    """A TCP connection to 127.0.0.1:port in pid's network namespace."""
    s = netns_socket(pid)
    s.settimeout(timeout)
    s.connect(("127.0.0.1", port))
    return s


def netns_http(pid, port, method, path, body=None, headers=None, timeout=60.0):
    """One HTTP/1.1 request to 127.0.0.1:port in pid's network namespace;
    returns (status, headers {lowercase: value}, body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.sock = netns_connect(pid, port, timeout)
    data = None if body is None else json.dumps(body).encode()
    hdrs = dict(headers or {})
    if data is not None:
        hdrs.setdefault("Content-Type", "application/json")
    try:
        conn.request(method, path, body=data, headers=hdrs)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()
