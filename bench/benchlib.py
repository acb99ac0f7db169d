"""benchlib: what the benchmarks' Python shares. berthd in a PID namespace
of its own (with Xvfb and berth-desktop as its services when given a
display), a client of its Unix socket, waiting, /proc and free numbers.

A benchmark's Python puts this file's directory on sys.path and imports
it; a failure ends the bench with a "bench: ..." message."""

import os
import random
import signal
import socket
import statistics
import struct
import subprocess
import sys
import time

import msgpack

X11_DIR = "/tmp/.X11-unix"


def wait_until(pred, timeout=20, what="a condition"):
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            sys.exit("bench: timed out waiting for %s" % what)
        time.sleep(0.01)


def children(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        return [int(x) for x in f.read().split()]


def cmdline(pid):
    """pid's command line as raw bytes, b"" once it is gone."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read()
    except OSError:
        return b""


def cpu_s(pid):
    """pid's user + system CPU seconds so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def free_display():
    """An X display number with no socket file, lock or abstract socket."""
    for n in random.sample(range(150, 900), 750):
        if not os.path.exists("%s/X%d" % (X11_DIR, n)) and not os.path.exists("/tmp/.X%d-lock" % n):
            s = socket.socket(socket.AF_UNIX)
            try:
                s.bind("\0%s/X%d" % (X11_DIR, n))
                return n
            except OSError:
                pass
            finally:
                s.close()
    sys.exit("bench: no free display")


def forget_display(n):
    """What an X server killed with its namespace leaves behind."""
    for path in ("%s/X%d" % (X11_DIR, n), "/tmp/.X%d-lock" % n):
        if os.path.exists(path):
            os.unlink(path)


def picture(path, w, h, rich=False):
    """A desktop-like PPM: a gradient, a panel, three windows of text-like
    glyph lines; rich adds panel icons and a noisy photo-like area."""
    rnd = random.Random(7)
    px = bytearray(w * h * 3)

    def fill(x, y, fw, fh, c):
        row = bytes(c) * fw
        for j in range(y, y + fh):
            px[(j * w + x) * 3:(j * w + x + fw) * 3] = row

    for y in range(h):
        fill(0, y, w, 1, (30, 60 + y * 100 // h, 120 + y * 80 // h))
    fill(0, 0, w, 28, (220, 220, 224))
    if rich:
        for i in range(12):
            fill(8 + i * 30, 4, 20, 20, (rnd.randrange(256), rnd.randrange(256), rnd.randrange(256)))
    for wx, wy, ww, wh in ((40, 60, 560, 420), (640, 90, 600, 500), (200, 420, 520, 340)):
        fill(wx - 1, wy - 1, ww + 2, wh + 2, (90, 90, 90))
        fill(wx, wy, ww, 24, (60, 90, 160))
        fill(wx, wy + 24, ww, wh - 24, (250, 250, 250))
        for line in range(wy + 32, wy + wh - 14, 14):
            x = wx + 8
            while x < wx + ww - 60:
                for _ in range(rnd.randrange(2, 10)):
                    for gy in range(10):
                        bits = rnd.getrandbits(6)
                        for gx in range(6):
                            if bits >> gx & 1 and gy % 3:
                                i = ((line + gy) * w + x + gx) * 3
                                px[i:i + 3] = b"\x20\x20\x28"
                    x += 7
                x += 7
    if rich:
        for y in range(500, 700):
            for x in range(900, 1200):
                n = rnd.randrange(-12, 13)
                i = (y * w + x) * 3
                px[i:i + 3] = bytes((max(0, min(255, 120 + (x - 900) // 3 + n)),
                                     max(0, min(255, 80 + (y - 500) // 2 + n)), max(0, min(255, 60 + n))))
    with open(path, "wb") as f:
        f.write(b"P6 %d %d 255\n" % (w, h) + px)


class Conn:
    """A client of berthd's Unix socket, said hello to. Messages that are
    not the awaited response (data, events) are dropped by response()."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.buf = bytearray()
        self.pos = 0
        self.next_id = 0
        self.call("hello", {"version": "berth.v1", "client": "bench"})

    def send(self, op, args=None):
        """Sends a request without waiting: its id."""
        self.next_id += 1
        p = msgpack.packb({"type": "request", "id": self.next_id, "op": op, "args": args or {}}, use_bin_type=True)
        self.s.sendall(struct.pack(">I", len(p)) + p)
        return self.next_id

    def recv(self):
        """The next message. Read bytes are consumed by position and
        compacted only before the next read, so a flood costs no copies."""
        while True:
            if len(self.buf) - self.pos >= 4:
                (n,) = struct.unpack_from(">I", self.buf, self.pos)
                if len(self.buf) - self.pos >= 4 + n:
                    m = msgpack.unpackb(self.buf[self.pos + 4:self.pos + 4 + n], raw=False)
                    self.pos += 4 + n
                    return m
            if self.pos:
                del self.buf[:self.pos]
                self.pos = 0
            chunk = self.s.recv(1 << 20)
            if not chunk:
                sys.exit("bench: berthd closed the connection")
            self.buf += chunk

    def response(self, i):
        """The response to request i, whether ok or not."""
        while True:
            m = self.recv()
            if m.get("type") == "response" and m.get("id") == i:
                return m

    def request(self, op, args=None):
        return self.response(self.send(op, args))

    def call(self, op, args=None):
        """The result of op; an error ends the bench."""
        m = self.request(op, args)
        if not m["ok"]:
            sys.exit("bench: %s: %s" % (op, m["error"]))
        return m["result"]

    def close(self):
        self.s.close()


def desktop_config(build, display, w, h):
    """The services that run Xvfb on display and berth-desktop on it."""
    return ("\n[service xvfb]\ncommand = Xvfb :%d -screen 0 %dx%dx24 -nolisten tcp\n"
            "ready = exec /usr/bin/xdpyinfo -display :%d\nrequired = no\n\n"
            "[check xfce]\nready = report\n\n"
            "[service desktop]\ncommand = %s --display :%d\nafter = xvfb\nrequired = no\n"
            % (display, w, h, display, os.path.join(build, "berth-desktop"), display))


class Berth:
    """berthd in a PID namespace of its own (unshare), in d/berthd-RUN with
    the minimal image's config, on a free port, plus the config text
    services. Given a display, it also runs Xvfb (size) and berth-desktop,
    and is up once ready, a request (op, args), answers. c is a kept
    connection (None without connect); stop() ends it all. wrap: a
    command berthd is run through in the namespace (it execs berthd, the
    rest of the argv its arguments). berthd_keys: lines put at the top
    of the config's [berthd] section."""

    def __init__(self, src, build, d, run, display=None, size=(1280, 800), ready=("desktop.info", None),
                 connect=True, services="", wrap=(), berthd_keys=""):
        self.dir = os.path.join(d, "berthd-%d" % run)
        os.makedirs(self.dir)
        self.display = display
        conf = os.path.join(src, "images", "minimal", "berth.conf")
        if display is not None:
            services += desktop_config(build, display, *size)
        if services or berthd_keys:
            with open(conf) as f:
                text = f.read().replace("[berthd]\n", "[berthd]\n" + berthd_keys, 1) + services
            conf = os.path.join(self.dir, "berth.conf")
            with open(conf, "w") as f:
                f.write(text)
        self.port = free_port()
        self.sock = os.path.join(self.dir, "state", "berthd.sock")
        self.token = os.path.join(self.dir, "token")
        self.proc = subprocess.Popen(
            ["unshare", "-p", "-f", "--mount-proc"] + list(wrap) + [os.path.join(build, "berthd"), "--config", conf,
             "--listen", "127.0.0.1:%d" % self.port, "--state-dir", os.path.join(self.dir, "state"),
             "--token-file", self.token],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(self.dir, "log"), "wb"), start_new_session=True)
        wait_until(lambda: os.path.exists(self.sock), what="berthd's socket")
        wait_until(lambda: children(self.proc.pid), what="berthd's pid")
        self.pid = children(self.proc.pid)[0]
        self.c = self.connect() if connect else None
        if display is not None:
            op, args = ready
            wait_until(lambda: self.c.request(op, args)["ok"], 30, "%s answering" % op)

    def connect(self):
        """A new connection (a benchmark's subclass may give its own)."""
        return Conn(self.sock)

    def child(self, name):
        """The host pid of berthd's child whose argv[0] ends in name."""
        for pid in children(self.pid):
            if os.path.basename(cmdline(pid).split(b"\0")[0]) == name.encode():
                return pid
        sys.exit("bench: no %s under berthd" % name)

    def stop(self):
        if self.c is not None:
            self.c.close()
        os.kill(self.pid, signal.SIGTERM)
        self.proc.wait(10)
        if self.display is not None:
            forget_display(self.display)


def latency_ms(runs):
    """(median, p99) in ms of lists of seconds, one list a run: medians
    over the runs of each run's figure."""

    def p99(xs):
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(len(xs) * 0.99))]

    med = statistics.median
    return med(med(x) for x in runs) * 1000, med(p99(x) for x in runs) * 1000
