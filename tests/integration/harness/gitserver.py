"""GitServer: a real git server over HTTPS on loopback — `git http-backend`
as CGI behind a small threaded TLS server with a self-signed certificate
made by `openssl req` — with repositories the test makes, some of them
private (basic auth), and a delay that makes a clone last a while.

    gs = GitServer()
    repo = gs.repo("pub", branches={"main": 2, "dev": 1})
    priv = gs.repo("priv", private=("alice", "s3cret"))
    # gs.url("pub") is https://127.0.0.1:PORT/pub.git; gs.cafile trusts it
    rogue = GitServer(cert_of=gs)        # another server the same CA trusts
    gs.redirect("moved", rogue.url("moved"))
    proxy = TunnelProxy(rogue.port)      # a CONNECT proxy that tunnels to it

Everything lives in a scratch directory and the server stops when the
case ends.
"""

import base64
import http.server
import os
import socket
import ssl
import subprocess
import threading
import time
import traceback

from .clients import pump
from .procs import scratch
from .runner import note, track_closer

GIT = "/usr/bin/git"
# A repository's author and committer, fixed so that commits are the test's.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "PATH": "/usr/bin:/bin",
    "HOME": "/nonexistent",
}


def git(*args, cwd=None):
    """Runs git as the test (root); returns its stdout, stripped."""
    r = subprocess.run([GIT, *args], cwd=cwd, env=GIT_ENV, capture_output=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError("git %s: %s" % (" ".join(args), r.stderr.decode(errors="replace")))
    return r.stdout.decode().strip()


class Repo:
    """A bare repository served as NAME.git, and the working clone the
    test commits in and pushes from."""

    def __init__(self, root, name, private):
        self.name = name
        self.private = private  # None, or (username, password)
        self.bare = os.path.join(root, "repos", name + ".git")
        self.work = os.path.join(root, "work", name)
        git("init", "-q", "-b", "main", self.work)
        git("init", "-q", "--bare", "-b", "main", self.bare)
        git("-C", self.work, "remote", "add", "origin", self.bare)

    def commit(self, branch, files):
        """Commits files ({path: text}) on branch (made from main if new)
        and pushes it; returns the commit's id."""
        heads = git("-C", self.work, "branch", "--list", "--format=%(refname:short)").split()
        if heads and branch not in heads:
            git("-C", self.work, "checkout", "-q", "-b", branch, "main")
        elif heads:
            git("-C", self.work, "checkout", "-q", branch)
        for path, text in files.items():
            full = os.path.join(self.work, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as f:
                f.write(text)
            git("-C", self.work, "add", path)
        git("-C", self.work, "commit", "-q", "-m", "change %s" % ", ".join(sorted(files)))
        if not heads and branch != "main":
            git("-C", self.work, "branch", "-q", "-M", branch)
        git("-C", self.work, "push", "-q", "origin", branch)
        return git("-C", self.work, "rev-parse", "HEAD")


class _Server(http.server.ThreadingHTTPServer):
    """A threaded HTTP server whose backlog takes a burst of git's
    connections (the default is 5)."""

    daemon_threads = True
    request_queue_size = 128

    def handle_error(self, request, client_address):
        # A connection the server dropped shows in git only as a cut TLS
        # session: the case's diagnostics say what the server saw.
        note("the git server dropped a connection from %r: %s" % (client_address, traceback.format_exc()))


class GitServer:
    """The HTTPS server. delay: seconds to sleep before each response
    (each round of the smart protocol), so a clone lasts a while.
    chunk_delay: seconds between 16 KiB chunks of a response body.
    cert_of: another GitServer whose certificate (and key) this one serves,
    so that what trusts one trusts the other. bind: the address to listen
    on (default 127.0.0.1 and a free port)."""

    def __init__(self, delay=0.0, chunk_delay=0.0, cert_of=None, bind=("127.0.0.1", 0)):
        self.root = scratch(0o755)
        os.makedirs(os.path.join(self.root, "repos"))
        os.makedirs(os.path.join(self.root, "work"))
        self.repos = {}
        self.delay = delay
        self.chunk_delay = chunk_delay
        self.auths = []  # (repo name, Authorization header) of each request
        self.redirects = {}  # repo name: the URL its requests are sent to
        if cert_of is not None:
            self.cafile, key = cert_of.cafile, cert_of.keyfile
        else:
            self.cafile = os.path.join(self.root, "cert.pem")
            key = os.path.join(self.root, "key.pem")
            subprocess.run(
                ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                 "-out", self.cafile, "-days", "1", "-subj", "/CN=127.0.0.1",
                 "-addext", "subjectAltName=IP:127.0.0.1"],
                check=True, capture_output=True, timeout=60)
            os.chmod(self.cafile, 0o644)
        self.keyfile = key
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.cafile, key)
        self.server = _Server(bind, self._handler())
        # The handshake is each connection's own thread's (Handler.setup),
        # not the accepting thread's: one slow client under load would
        # otherwise hold up every other one's connect.
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True, do_handshake_on_connect=False)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        track_closer(self._close)

    def _close(self):
        self.server.shutdown()
        self.server.server_close()

    def repo(self, name, private=None):
        r = Repo(self.root, name, private)
        self.repos[name] = r
        return r

    def redirect(self, name, url):
        """Answers every request for NAME.git with a 302 to url."""
        self.redirects[name] = url

    def url(self, name):
        return "https://127.0.0.1:%d/%s.git" % (self.port, name)

    def _handler(self):
        gs = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                self.request.settimeout(60)
                self.request.do_handshake()
                super().setup()

            def do_GET(self):
                self._cgi()

            def do_POST(self):
                self._cgi()

            def log_message(self, *args):
                pass

            def _deny(self):
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="git"')
                self.send_header("Content-Length", "0")
                self.end_headers()

            def _cgi(self):
                path, _, query = self.path.partition("?")
                name = path.lstrip("/").split("/", 1)[0]
                name = name[:-4] if name.endswith(".git") else name
                repo = gs.repos.get(name)
                auth = self.headers.get("Authorization", "")
                gs.auths.append((name, auth))
                if name in gs.redirects:
                    rest = path.lstrip("/").split("/", 1)[1:]
                    self.send_response(302)
                    self.send_header("Location", gs.redirects[name] + "".join("/" + r for r in rest)
                                     + ("?" + query if query else ""))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if repo is None:
                    self.send_error(404)
                    return
                if repo.private is not None:
                    want = "Basic " + base64.b64encode(("%s:%s" % repo.private).encode()).decode()
                    if auth != want:
                        self._deny()
                        return
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                env = {
                    "PATH": "/usr/bin:/bin",
                    "GIT_PROJECT_ROOT": os.path.join(gs.root, "repos"),
                    "GIT_HTTP_EXPORT_ALL": "1",
                    "GIT_CONFIG_NOSYSTEM": "1",
                    "GIT_CONFIG_GLOBAL": "/dev/null",
                    "REQUEST_METHOD": self.command,
                    "PATH_INFO": path,
                    "QUERY_STRING": query,
                    "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                    "CONTENT_LENGTH": str(len(body)),
                    "REMOTE_ADDR": "127.0.0.1",
                    "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
                    "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                }
                r = subprocess.run([GIT, "http-backend"], input=body, env=env,
                                   capture_output=True, timeout=60)
                head, _, out = r.stdout.partition(b"\r\n\r\n")
                status, headers = 200, []
                for line in head.decode(errors="replace").split("\r\n"):
                    k, _, v = line.partition(":")
                    if k.lower() == "status":
                        status = int(v.split()[0])
                    elif k:
                        headers.append((k, v.strip()))
                if gs.delay:
                    time.sleep(gs.delay)
                self.send_response(status)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                for i in range(0, len(out), 16384):
                    self.wfile.write(out[i:i + 16384])
                    self.wfile.flush()
                    if gs.chunk_delay:
                        time.sleep(gs.chunk_delay)

        return Handler


class TunnelProxy:
    """An HTTP proxy on loopback that answers every CONNECT by tunnelling
    to one port of its own choosing, and records what was asked for
    (self.connects): a proxy that sends a client elsewhere."""

    def __init__(self, to_port):
        self.to_port = to_port
        self.connects = []
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.url = "http://127.0.0.1:%d" % self.port
        threading.Thread(target=self._serve, daemon=True).start()
        track_closer(self._close)

    def _close(self):
        # close() alone leaves the accepting thread blocked in accept(),
        # the port listening for the rest of the run: shutdown wakes it.
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._tunnel, args=(conn,), daemon=True).start()

    def _tunnel(self, conn):
        conn.settimeout(30)
        head = b""
        try:
            while b"\r\n\r\n" not in head and len(head) < 65536:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            self.connects.append(head.split(b"\r\n", 1)[0].decode(errors="replace"))
            up = socket.create_connection(("127.0.0.1", self.to_port), timeout=30)
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        except OSError:
            conn.close()
            return

        threading.Thread(target=pump, args=(up, conn), daemon=True).start()
        pump(conn, up)
