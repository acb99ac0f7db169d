"""berth grant against a real sandbox whose gateway serves previews:
create prints the link on its first line, then the id and the expiry (in
UTC and how long from now), the token only with --token, and --json
grant.create's result whole; list is a table of the live grants, how
long each has and whether a private link was used, --json grant.list's
result; revoke ends each ID and goes on past one berthd refuses, naming
it, exit 1; a malformed ID revokes none; a bad scope and a refused
argument are berthd's error with its code, exit 1; a command line of the
wrong shape is a usage error, exit 2, and sends nothing."""

import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Sandbox, case, expect, expect_eq, expect_in, run, text_ok  # noqa: E402
from harness.cli import TRANSPORTS, berth  # noqa: E402
from harness.procs import free_port  # noqa: E402

GRANT_ID = re.compile(r"g[0-9a-f]{16}")


def seconds_left(cell):
    """EXPIRES, "in 59m58s" or "in 1h0m", in seconds."""
    m = re.fullmatch(r"in (?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", cell)
    expect(m and cell != "in ", "an EXPIRES cell: %r" % cell)
    return sum(int(v or 0) * k for v, k in zip(m.groups(), (3600, 60, 1)))


def preview_config(port):
    """A gateway that serves previews: the scopes preview:PORT need it."""
    return "[gateway]\npreview_listen = 127.0.0.1:%d\n" % port


def create(sb, transport, *args):
    """berth grant create ARGS must succeed, saying nothing on stderr:
    (its lines, the grant as grant.list shows it)."""
    rc, out, err = berth(sb, transport, "grant", "create", *args, text=True)
    expect_eq((rc, err), (0, ""), "create %r: exit status and stderr" % (args,))
    lines = out.splitlines()
    expect(len(lines) >= 3, "create printed %r" % lines)
    key, _, gid = lines[1].partition(" ")
    expect_eq(key, "id", "create's second line: %r" % lines[1])
    gid = gid.strip()
    expect(GRANT_ID.fullmatch(gid), "the id: %r" % gid)
    listed = [g for g in sb.unix().call("grant.list")["grants"] if g["id"] == gid]
    expect_eq(len(listed), 1, "grant %s listed" % gid)
    return lines, listed[0]


def utc(ms):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms // 1000))


def table(out):
    """A table's rows as dicts of its header's names, cells cut at the
    header's columns (a label may hold spaces)."""
    lines = out.splitlines()
    starts = [m.start() for m in re.finditer(r"\S+", lines[0])]
    names = lines[0].split()
    return [{n: line[a:b].strip() for n, a, b in zip(names, starts, starts[1:] + [None])} for line in lines[1:]]


def pty_id(sb):
    return sb.unix().call("pty.open", {"argv": ["/bin/sleep", "1000"], "user": "nobody"})["id"]


@case("create prints the link, the id and the expiry, the token only with --token; list shows each grant "
      "with how long it has and whether its link was used; revoke ends them", transports=TRANSPORTS)
def create_list_revoke(transport):
    pport = free_port()
    with Sandbox(extra=preview_config(pport)) as sb:
        lines, g = create(sb, transport, "preview:3000", "--ttl", "600", "--label", "dev server")
        expect_eq(len(lines), 3, "create's lines without --token: %r" % lines)
        expect_eq((g["scope"], g["label"], g["visibility"]), ("preview:3000", "dev server", "private"),
                  "the grant made")
        expect_eq(g["expires_at"] - g["created"], 600000, "--ttl 600")
        link = "http://127.0.0.1:%d/preview/%s/?berth_link=" % (pport, g["id"])
        expect(lines[0].startswith(link) and len(lines[0]) == len(link) + 40, "the link: %r" % lines[0])
        expect_eq(lines[2], "expires  %s (in 10m0s)" % utc(g["expires_at"]), "the expiry")
        # The link's code, once used, gives the token: it was nowhere in what berth printed.
        token = sb.unix().call("gateway.redeem", {"grant": g["id"], "code": lines[0][-40:]})["token"]
        expect(token not in "\n".join(lines), "the token printed without --token")

        pty = pty_id(sb)
        lines, p = create(sb, transport, "pty:%s:write" % pty, "--token")
        expect_eq(len(lines), 4, "create's lines with --token: %r" % lines)
        base = sb.url.rsplit("/v1", 1)[0]
        expect_eq(lines[0], "%s/v1/pty/%s" % (base, pty), "a pty link")
        expect_eq(lines[2], "expires  %s (in 1h0m)" % utc(p["expires_at"]), "the default life, an hour")
        key, _, ptoken = lines[3].partition(" ")
        expect_eq(key, "token", "the fourth line: %r" % lines[3])
        ptoken = ptoken.strip()
        got = sb.unix().call("gateway.check", {"door": "pty", "peer": "test", "credential": ptoken})
        expect_eq((got["pty"], got["write"]), (pty, True), "the token printed opens the session's door")

        until = int(time.time() * 1000) + 120000
        lines, u = create(sb, transport, "preview:8080", "--public", "--until", str(until))
        expect_eq((u["visibility"], u["expires_at"]), ("public", until), "--public --until MS")
        m = re.fullmatch(r"http://127\.0\.0\.1:%d/preview/([0-9a-f]{40})/" % pport, lines[0])
        expect(m, "a public link: %r" % lines[0])
        got = sb.unix().call("gateway.check", {"door": "preview", "peer": "test", "credential": "", "key": m[1]})
        expect_eq(got["port"], 8080, "a public link alone opens the preview")

        rows = table(text_ok(sb, transport, "grant", "list"))
        expect_eq([(r["ID"], r["SCOPE"], r["LABEL"], r["VISIBILITY"], r["REDEEMED"]) for r in rows],
                  [(g["id"], "preview:3000", "dev server", "private", "yes"),
                   (p["id"], "pty:%s:write" % pty, "-", "private", "-"),
                   (u["id"], "preview:8080", "-", "public", "-")], "list's rows, oldest first")
        for r, life in zip(rows, (600, 3600, 120)):
            left = seconds_left(r["EXPIRES"])
            expect(life - 60 <= left <= life, "%s's EXPIRES: %r" % (r["ID"], r))
        out = text_ok(sb, transport, "grant", "list")
        for t in (token, ptoken):
            expect(t not in out, "a token in the list")

        rc, out, err = berth(sb, transport, "grant", "revoke", g["id"], u["id"], text=True)
        expect_eq((rc, out, err), (0, "", ""), "revoke of two")
        expect_eq([x["id"] for x in sb.unix().call("grant.list")["grants"]], [p["id"]], "what is left")
        expect_eq(sb.unix().error_of("gateway.check", {"door": "preview", "peer": "test", "credential": token,
                                                       "key": g["id"]}), "unauthorized", "a revoked grant's token")
        text_ok(sb, transport, "grant", "revoke", p["id"])
        expect_eq(text_ok(sb, transport, "grant", "list"), "no grants\n", "list of none")


@case("--json: create prints grant.create's result whole, token and link included; list prints grant.list's; "
      "what create printed is what list shows", transports=TRANSPORTS)
def json_round_trip(transport):
    with Sandbox(extra=preview_config(free_port())) as sb:
        made = json.loads(text_ok(sb, transport, "--json", "grant", "create", "preview:5173", "--label", "ui"))
        expect_eq(sorted(made), sorted(["id", "token", "url", "scope", "label", "visibility", "created",
                                        "expires_at", "redeemed"]), "create --json's keys")
        expect(re.fullmatch(r"[0-9a-f]{40}", made["token"]), "the token: %r" % made["token"])
        listed = json.loads(text_ok(sb, transport, "--json", "grant", "list"))
        expect_eq(listed, sb.unix().call("grant.list"), "list --json is grant.list's result")
        record = {k: v for k, v in made.items() if k not in ("token", "url")}
        expect_eq(listed["grants"], [record], "what create printed, as list shows it")
        got = sb.unix().call("gateway.check", {"door": "preview", "peer": "test", "credential": made["token"],
                                               "key": made["id"]})
        expect_eq(got["grant"], made["id"], "the token of --json opens the preview's door")
        rc, out, err = berth(sb, transport, "--json", "grant", "revoke", made["id"], text=True)
        expect_eq((rc, out, err), (0, "", ""), "revoke --json prints nothing")
        expect_eq(json.loads(text_ok(sb, transport, "--json", "grant", "list")), {"grants": []}, "none left")


@case("revoke goes on past an unknown ID and names it, exit 1; a malformed ID revokes none, exit 2",
      transports=TRANSPORTS)
def revoke_unknown(transport):
    with Sandbox(extra=preview_config(free_port())) as sb:
        _, a = create(sb, transport, "preview:3000")
        _, b = create(sb, transport, "preview:3001")
        unknown = "g" + "0" * 16
        rc, out, err = berth(sb, transport, "grant", "revoke", "g123", a["id"], text=True)
        expect_eq(rc, 2, "a malformed ID: exit status (stderr %r)" % err)
        expect_in("g123", err, "the usage error names it")
        expect_eq(len(sb.unix().call("grant.list")["grants"]), 2, "a malformed ID revoked none")
        rc, out, err = berth(sb, transport, "grant", "revoke", a["id"], unknown, b["id"], text=True)
        expect_eq((rc, out), (1, ""), "revoke with an unknown ID: exit status (stderr %r)" % err)
        expect_eq(err, 'berth: grant %s not revoked: not_found: no grant "%s" (it may have expired)\n'
                  % (unknown, unknown), "the refusal, naming the ID")
        expect_eq(sb.unix().call("grant.list")["grants"], [], "the IDs around it were revoked")
        rc, _, err = berth(sb, transport, "grant", "revoke", a["id"], text=True)
        expect_eq(rc, 1, "revoke of a revoked grant")
        expect_in("not_found", err, "its refusal")


@case("a bad scope and what berthd refuses exit 1 with the error's code and message; a command line of the "
      "wrong shape exits 2 and makes nothing", transports=TRANSPORTS)
def refused(transport):
    with Sandbox(extra=preview_config(free_port())) as sb:
        for args, code, words in (
            (["nosuch"], "bad_args", 'unknown scope "nosuch": desktop:view'),
            (["preview:0"], "bad_args", "preview:PORT"),
            (["cdp"], "unavailable", ""),
            (["desktop:view"], "unavailable", ""),
            (["preview:3000", "--ttl", "3601"], "bad_args", "1-3600 seconds"),
            (["preview:3000", "--until", "1000"], "bad_args", ""),
            (["pty:%s:view" % pty_id(sb), "--public"], "bad_args", "public"),
            (["pty:01234567:view"], "not_found", ""),
        ):
            rc, out, err = berth(sb, transport, "grant", "create", *args, text=True)
            expect_eq((rc, out), (1, ""), "create %r: exit status and stdout (stderr %r)" % (args, err))
            expect(err.startswith("berth: %s: " % code) and words in err and err.count("\n") == 1,
                   "create %r's error: %r" % (args, err))
        for args in ([], ["a", "b"], ["cdp", "--ttl", "0"], ["cdp", "--ttl", "x"], ["cdp", "--until", "-5"],
                     ["cdp", "--ttl", "5", "--until", "9999999999999"], ["cdp", "--label", "x" * 257],
                     ["cdp", "--nosuch"]):
            rc, out, err = berth(sb, transport, "grant", "create", *args, text=True)
            expect_eq((rc, out), (2, ""), "create %r: a usage error (stderr %r)" % (args, err))
            expect_in("usage: berth [OPTIONS] grant create SCOPE", err, "the synopsis")
        for args in (["grant"], ["grant", "nosuch"], ["grant", "list", "x"], ["grant", "revoke"]):
            rc, _, err = berth(sb, transport, *args, text=True)
            expect_eq(rc, 2, "%r: a usage error (stderr %r)" % (args, err))
        expect_eq(sb.unix().call("grant.list")["grants"], [], "nothing was made")


run()
