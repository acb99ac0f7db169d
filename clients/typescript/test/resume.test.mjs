// What survives a dropped connection (the gateway killed: berthd
// restarts it) and what a new boot ends. Needs `npm run build` first.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomBytes, createHash } from "node:crypto";

import { boot, sleep, waitFor } from "./live.mjs";
import { connect, BerthError } from "../dist/index.js";

let box;
let sb;
const states = [];

before(async () => {
  box = await boot();
  sb = await connect({ url: box.url, token: box.token, backoffInitialMs: 20, backoffMaxMs: 200, onStateChange: (c) => states.push(c.state) });
});

after(async () => {
  await sb?.close();
  await box?.stop();
});

/** Kills the gateway and waits until the SDK has reconnected through the new one. */
async function dropAndWait() {
  const before = sb.stats().reconnects;
  const old = box.killGateway();
  assert.ok(old, "a gateway runs");
  await waitFor("the SDK reconnected", () => sb.stats().reconnects > before && sb.stats().state === "open", 20000);
}

test("a command's output survives a drop: every byte once, in order", async () => {
  const p = await sb.process.start({ argv: ["sh", "-c", "i=0; while [ $i -lt 300 ]; do echo line-$i; i=$((i+1)); sleep 0.005; done"] });
  const parts = [];
  let dropped = false;
  for await (const c of p.stdout) {
    parts.push(Buffer.from(c));
    if (!dropped && Buffer.concat(parts).length > 200) {
      dropped = true;
      await dropAndWait();
    }
  }
  const want = Array.from({ length: 300 }, (_, i) => `line-${i}\n`).join("");
  assert.equal(Buffer.concat(parts).toString(), want);
  assert.ok(dropped);
  assert.ok(states.includes("reconnecting"), `states ${states}`);
});

test("events across a drop: consecutive seqs, no duplicate", async () => {
  const from = (await sb.request("state", {})).last_seq + 1;
  const ev = sb.events.follow({ fromSeq: from });
  const other = await connect({ url: box.url, token: box.token, backoffInitialMs: 20, backoffMaxMs: 200 });
  const seqs = [];
  let n = 0;
  const produce = (async () => {
    for (let i = 0; i < 40; i++) {
      await other.secrets.set({ [`R${i}`]: "v" });
      if (i === 15) await dropAndWait();
    }
  })();
  for await (const e of ev) {
    seqs.push(e.seq);
    if (e.kind === "secrets.changed" && e.data.set?.[0] === "R39") break;
    n++;
  }
  await produce;
  await other.close();
  assert.deepEqual(seqs, Array.from({ length: seqs.length }, (_, i) => from + i));
  assert.ok(seqs.length >= 40);
});

test("requests in flight at a drop: reads are resent, and so are proc.starts, with their keys: each runs once", async () => {
  assert.ok(sb.connection.hello.features.idempotency_keys > 0, "berth keeps idempotency keys");
  const resent = sb.stats().requestsResent;
  const drop = dropAndWait();
  const starts = Array.from({ length: 5 }, (_, i) => sb.process.start({ argv: ["true"], tag: `inflight-${i}` }).then((p) => p.wait()));
  const reads = Array.from({ length: 20 }, () => sb.request("state", {}));
  await drop;
  await Promise.all(reads);
  await Promise.all(starts);
  const procs = (await sb.process.list()).procs.filter((p) => p.tag.startsWith("inflight-"));
  assert.deepEqual(procs.map((p) => p.tag).sort(), Array.from({ length: 5 }, (_, i) => `inflight-${i}`));
  assert.ok(sb.stats().requestsResent > resent, "requests were in flight at the drop and were resent");
});

test("an upload resumes after a drop from what the partial holds", async () => {
  const path = `/tmp/sdk-upload-${randomBytes(4).toString("hex")}`;
  const data = randomBytes(8 * 1024 * 1024);
  let dropped = false;
  const r = await sb.fs.write(path, data, {
    chunkSize: 256 * 1024,
    onProgress: (sent) => {
      if (!dropped && sent >= 2 * 1024 * 1024) {
        dropped = true;
        box.killGateway();
      }
    },
  });
  assert.ok(dropped);
  assert.equal(r.size, data.length);
  const back = await sb.fs.read(path);
  assert.equal(createHash("sha256").update(back).digest("hex"), createHash("sha256").update(data).digest("hex"));
});

test("a terminal's output resumes after a drop from the last byte that arrived", async () => {
  const { terminal: t } = await sb.pty.open({ argv: ["/bin/sh"] });
  await t.input("echo before-$((1+1))\n");
  let text = "";
  const it = t.output[Symbol.asyncIterator]();
  while (!text.includes("before-2")) text += Buffer.from((await it.next()).value).toString();
  await dropAndWait();
  await t.input("echo after-$((2+1))\n");
  while (!text.includes("after-3")) text += Buffer.from((await it.next()).value).toString();
  // The typed line holds "$((1+1))", so "before-2" is the output's alone: once, not replayed.
  assert.equal(text.split("before-2").length, 2, "the output once");
  assert.equal(text.split("after-3").length, 2, "the output once");
  await t.close();
});

test("stats: reconnects counted, buffers reported", async () => {
  const s = sb.stats();
  assert.ok(s.reconnects >= 4, `reconnects ${s.reconnects}`);
  assert.equal(s.state, "open");
  assert.equal(typeof s.bytesBuffered, "number");
  assert.equal(typeof s.eventsBuffered, "number");
});

test("a new boot: a boot item on the events, streams end with error boot", async () => {
  const previous = sb.bootId;
  const ev = sb.events.follow({ fromSeq: 1 });
  const p = await sb.process.start({ argv: ["sleep", "100"] });
  // Drain what the journal holds now.
  const last = (await sb.request("state", {})).last_seq;
  // (break in a for await would end the follower)
  for (let e = await ev.next(); e.value.seq < last; e = await ev.next());
  await box.restart({ freshState: true });
  const item = await ev.next();
  assert.equal(item.value.kind, "boot");
  assert.equal(item.value.data.previous, previous);
  assert.notEqual(item.value.data.boot_id, previous);
  const next = await ev.next();
  assert.equal(next.value.seq, 1, "seqs start over");
  await assert.rejects(p.stdout.text(), (e) => e instanceof BerthError && e.code === "boot");
  assert.equal(sb.bootId, item.value.data.boot_id);
  await sleep(10);
});
