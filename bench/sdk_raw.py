"""sdk_raw: the raw protocol's side of bench/sdk.sh, the figures the
TypeScript SDK is set beside. A WebSocket client written from
docs/protocol.md alone (python3-websockets and msgpack, as the tests'):

  sdk_raw.py URL TOKEN_FILE ping N INFLIGHT   -> "SECONDS"
  sdk_raw.py URL TOKEN_FILE output BYTES      -> "SECONDS"

ping: N pings, INFLIGHT of them always unanswered. output: a command
writes BYTES to stdout, read through proc.start's attach with ack (an
ack each MiB), until the stream's eof."""

import asyncio
import sys
import time

import msgpack
import websockets

ACK_EVERY = 1 << 20


async def hello(url, token):
    ws = await websockets.connect(
        url, subprotocols=["berth.v1"], extra_headers={"Authorization": "Bearer " + token}, max_size=None
    )
    await ws.send(msgpack.packb({"type": "request", "id": 1, "op": "hello", "args": {"version": "berth.v1"}}))
    r = msgpack.unpackb(await ws.recv())
    if not r.get("ok"):
        sys.exit("bench: hello refused: %r" % (r,))
    return ws


async def ping(ws, n, inflight):
    packed = [msgpack.packb({"type": "request", "id": i, "op": "ping"}) for i in range(2, n + 2)]
    t0 = time.monotonic()
    sent = 0
    got = 0
    while sent < min(inflight, n):
        await ws.send(packed[sent])
        sent += 1
    while got < n:
        m = msgpack.unpackb(await ws.recv())
        if m.get("type") != "response" or not m.get("ok"):
            sys.exit("bench: ping failed: %r" % (m,))
        got += 1
        if sent < n:
            await ws.send(packed[sent])
            sent += 1
    return time.monotonic() - t0


async def output(ws, nbytes):
    cmd = "head -c %d /dev/zero" % nbytes
    args = {"shell": cmd, "attach": True, "ack": True}
    t0 = time.monotonic()
    await ws.send(msgpack.packb({"type": "request", "id": 2, "op": "proc.start", "args": args}))
    pid = None
    have = 0
    acked = 0
    rid = 3
    while True:
        m = msgpack.unpackb(await ws.recv())
        if m["type"] == "response":
            if not m["ok"]:
                sys.exit("bench: %r" % (m,))
            if m["id"] == 2:
                pid = m["result"]["id"]
            continue
        if m["type"] != "data" or not m["stream"].endswith("/stdout"):
            continue
        if m.get("eof"):
            break
        have = m["offset"] + len(m["data"])
        if have - acked >= ACK_EVERY:
            acked = have
            await ws.send(
                msgpack.packb({"type": "request", "id": rid, "op": "proc.ack", "args": {"id": pid, "stdout": have}})
            )
            rid += 1
    took = time.monotonic() - t0
    if have != nbytes:
        sys.exit("bench: read %d bytes of %d" % (have, nbytes))
    return took


async def main():
    url, token_file, what = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(token_file) as f:
        token = f.read().strip()
    ws = await hello(url, token)
    if what == "ping":
        took = await ping(ws, int(sys.argv[4]), int(sys.argv[5]))
    else:
        took = await output(ws, int(sys.argv[4]))
    await ws.close()
    print("%.6f" % took)


asyncio.run(main())
