"""cdprtt: round trips of one DevTools command over one WebSocket, one
at a time; prints the median and the 99th percentile in ms.

    cdprtt.py WS_URL COUNT [TOKEN]

The command is Browser.getVersion: every browser endpoint answers it at
once, so what is measured is the path, not the work. The first 50 round
trips warm the path up and are not counted."""

import asyncio
import json
import sys
import time

import websockets


def connect(url, token):
    headers = {"Authorization": "Bearer " + token} if token else {}
    # websockets 14 renamed extra_headers; Debian 12 has 10.4.
    key = "additional_headers" if int(websockets.__version__.split(".")[0]) >= 14 else "extra_headers"
    return websockets.connect(url, max_size=None, **{key: headers})


async def main():
    url, count = sys.argv[1], int(sys.argv[2])
    token = sys.argv[3] if len(sys.argv) > 3 else None
    times = []
    async with connect(url, token) as ws:
        for i in range(count + 50):
            t = time.perf_counter()
            await ws.send(json.dumps({"id": i, "method": "Browser.getVersion"}))
            while json.loads(await ws.recv()).get("id") != i:
                pass
            if i >= 50:
                times.append((time.perf_counter() - t) * 1000)
    times.sort()
    print("%.4f %.4f" % (times[len(times) // 2], times[int(len(times) * 0.99)]))


asyncio.run(main())
