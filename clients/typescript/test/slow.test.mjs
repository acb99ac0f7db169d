// A consumer too slow for the gateway's queue (4008): the SDK
// reconnects and resumes. Needs `npm run build` first.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";

import { boot } from "./live.mjs";
import { connect } from "../dist/index.js";

let box;
let sb;
const closes = [];

before(async () => {
  // The smallest queue the gateway takes, so a stalled client overflows it.
  box = await boot({ edit: (t) => t.replace(/^client_queue = .*$/m, "client_queue = 64K") });
  sb = await connect({ url: box.url, token: box.token, backoffInitialMs: 20, backoffMaxMs: 200, onStateChange: (c) => c.closeCode !== undefined && closes.push(c.closeCode) });
});

after(async () => {
  await sb?.close();
  await box?.stop();
});

test("closed as a slow consumer (4008), the SDK reconnects and a command's output is whole", async () => {
  const n = 5000000;
  const want = createHash("sha256");
  for (let i = 1; i <= n; i++) want.update(`${i}\n`);
  // A ring of 64 MiB lets berthd send 32 MiB ahead of the acks: more than
  // loopback's socket buffers and the gateway's queue can hold.
  const p = await sb.process.start({ argv: ["seq", "1", String(n)], ring: 64 << 20 });
  const got = createHash("sha256");
  let bytes = 0;
  let stalled = false;
  for await (const c of p.stdout) {
    got.update(c);
    bytes += c.length;
    if (!stalled && bytes > 1 << 20) {
      stalled = true;
      // The event loop stands still: nothing is read from the socket.
      const until = Date.now() + 3000;
      while (Date.now() < until);
    }
  }
  assert.ok(closes.includes(4008), `close codes ${closes}`);
  assert.equal(got.digest("hex"), want.digest("hex"));
  assert.ok(sb.stats().reconnects >= 1);
});
