"""berth ports against a real sandbox: a table of the listeners with the
server's port, address, pid, command, user and when it was first seen;
--json is port.list's result; with ports = off, berthd's unavailable,
exit 1."""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Sandbox, case, expect, expect_eq, minimal_config, run, text_ok  # noqa: E402
from harness.cli import berth  # noqa: E402

PORT = 18181


def with_ports(mode):
    return minimal_config().replace("[berthd]\n", "[berthd]\nports = %s\n" % mode, 1)


@case("berth ports: the server's row; --json is port.list's result")
def t_table():
    with Sandbox(offline=True) as sb:
        c = sb.unix()
        p = c.call("proc.start", {"argv": ["/usr/bin/python3", "-m", "http.server", "--bind", "127.0.0.1",
                                           str(PORT)], "user": "agent", "cwd": "/tmp"})
        sb.wait_event(lambda ev: ev["kind"] == "port.opened" and ev["data"]["port"] == PORT, 10)
        out = text_ok(sb, "unix", "ports")
        lines = out.splitlines()
        expect_eq(lines[0].split(), ["PORT", "ADDRESS", "PID", "COMMAND", "USER", "SINCE"], "the header")
        rows = [line.split() for line in lines[1:] if line.split()[0] == str(PORT)]
        expect_eq(len(rows), 1, "one row for the server: %r" % out)
        expect_eq(rows[0][:5], [str(PORT), "127.0.0.1", str(p["pid"]), "python3", "agent"], "its row")
        since = [x["since"] for x in c.call("port.list")["ports"] if x["port"] == PORT][0]
        expect_eq(rows[0][5], time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(since // 1000)), "SINCE")
        got = json.loads(text_ok(sb, "unix", "--json", "ports"))
        expect_eq(got, c.call("port.list"), "--json is port.list's result")


@case("berth ports with ports = off: unavailable, exit 1")
def t_off():
    with Sandbox(config=with_ports("off"), offline=True) as sb:
        rc, out, err = berth(sb, "unix", "ports", text=True)
        expect_eq((rc, out), (1, ""), "exit status and stdout")
        expect("unavailable" in err or "off" in err, "stderr names why: %r" % err)


if __name__ == "__main__":
    run()
