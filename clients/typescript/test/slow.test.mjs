// A consumer slower than a command: the gateway paces berthd by the
// client's queue, so one that reads slowly slows the stream, and one that
// stops reading for longer than client_stall_ms is dropped (4008); the
// SDK reconnects and resumes. Needs `npm run build` first.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { spawnSync } from "node:child_process";

import { boot } from "./live.mjs";
import { connect } from "../dist/index.js";

// A failure is a stall, not an hour of reconnects.
const TIMEOUT_MS = 180000;

let box;
let sb;
const closes = [];

before(async () => {
  // The smallest queue the gateway takes, and a second without a byte
  // taken is a stop.
  box = await boot({
    edit: (t) => t.replace(/^client_queue = .*$/m, "client_queue = 64K\nclient_stall_ms = 1000"),
  });
  sb = await connect({ url: box.url, token: box.token, backoffInitialMs: 20, backoffMaxMs: 200, onStateChange: (c) => c.closeCode !== undefined && closes.push(c.closeCode) });
});

after(async () => {
  await sb?.close();
  await box?.stop();
});

/** The gateway's count of 4008 drops, read while the event loop stands still. */
function dropsNow() {
  const r = spawnSync("curl", ["-s", "--max-time", "2", `http://127.0.0.1:${box.port}/metrics`], { encoding: "utf8" });
  const m = /^berth_gateway_slow_consumer_drops_total (\d+)$/m.exec(r.stdout ?? "");
  return m === null ? -1 : Number(m[1]);
}

/** Blocks the event loop, so that nothing is read from the socket, until the gateway has dropped the client or ms have passed. */
function stallUntilDropped(before, ms) {
  const nap = new Int32Array(new SharedArrayBuffer(4));
  const until = Date.now() + ms;
  while (Date.now() < until && dropsNow() <= before) Atomics.wait(nap, 0, 0, 100);
}

function seqHash(n) {
  const h = createHash("sha256");
  for (let i = 1; i <= n; i++) h.update(`${i}\n`);
  return h.digest("hex");
}

test("a consumer that stops reading is dropped (4008) once; the SDK reconnects and a command's output is whole", { timeout: TIMEOUT_MS }, async () => {
  const n = 10000000;
  const reconnects = sb.stats().reconnects;
  const drops = dropsNow();
  // A ring of 256 MiB lets berthd send all 79 MB ahead of the acks: more
  // than loopback's socket buffers grow to (tens of MiB at most) and the
  // gateway's queue can hold.
  const p = await sb.process.start({ argv: ["seq", "1", String(n)], ring: 256 << 20 });
  const got = createHash("sha256");
  let bytes = 0;
  let stalled = false;
  for await (const c of p.stdout) {
    got.update(c);
    bytes += c.length;
    if (!stalled && bytes > 1 << 20) {
      stalled = true;
      stallUntilDropped(drops, 60000);
    }
  }
  assert.equal(got.digest("hex"), seqHash(n));
  assert.ok(closes.includes(4008), `close codes ${closes}`);
  // One stop, one drop: a client that reads again is paced, not dropped
  // at every fresh connection.
  const again = sb.stats().reconnects - reconnects;
  assert.ok(again >= 1 && again <= 2, `${again} reconnects, close codes ${closes}`);
});

test("a consumer that reads more slowly than the command writes is never dropped: the command waits for it", { timeout: TIMEOUT_MS }, async () => {
  const n = 1000000;
  const before = closes.length;
  const reconnects = sb.stats().reconnects;
  const p = await sb.process.start({ argv: ["seq", "1", String(n)], ring: 64 << 20 });
  const got = createHash("sha256");
  let chunks = 0;
  for await (const c of p.stdout) {
    got.update(c);
    // Each pause is well under client_stall_ms, and together they last
    // many times it.
    if (++chunks % 2 === 0) await sleep(50);
  }
  assert.equal(got.digest("hex"), seqHash(n));
  assert.ok(chunks >= 100, `only ${chunks} chunks: the pauses add up to less than the stall`);
  assert.deepEqual(closes.slice(before), []);
  assert.equal(sb.stats().reconnects, reconnects);
});
