// The resume the SDK promises, under abuse: while a command floods
// 100 MiB of output and events pour in, the SDK's TCP connection is cut
// 50 times at random points (mid-frame too), the gateway is killed
// twice, and the consumer stalls twice. Every byte must arrive once in
// order, every event once in order, and the SDK's memory must stay
// bounded. The cuts come from a seeded PRNG: BERTH_CHAOS_SEED=N replays
// a run. Needs `npm run build` first.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createCipheriv, createHash, randomBytes } from "node:crypto";
import { createServer, connect as tcpConnect } from "node:net";

import { boot, sleep, waitFor } from "./live.mjs";
import { connect } from "../dist/index.js";

const FLOOD_BYTES = Number(process.env.BERTH_CHAOS_BYTES ?? 100 * 1024 * 1024);
const CUTS = 50;
// Of the cuts, one in each stall: reconnecting while the consumer stands
// still must not let berthd run further ahead of it.
const STALLS = 2;
const GATEWAY_KILLS = 2;
const STALL_MS = 3000;
const SEED = Number(process.env.BERTH_CHAOS_SEED ?? randomBytes(4).readUInt32LE(0));
// proc.start's default ring (docs/protocol.md): berthd pauses a command
// half a ring after the last acknowledged byte, and the SDK acks every
// 256 KiB taken, so it holds about half a ring plus what one read and
// one ack step add.
const RING = 16 * 1024 * 1024;
const MAX_SDK_BUFFERED = RING / 2 + 2 * 1024 * 1024;
// What the test process may hold while 100 MiB flow through it: a leak
// of the stream (or of the proxy) shows up well before this.
const MAX_HEAP = 200 * 1024 * 1024;
const MAX_ARRAY_BUFFERS = 64 * 1024 * 1024;
const TEST_TIMEOUT_MS = 300000;

/** mulberry32: small, seedable, good enough to place cuts. */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A TCP proxy to the gateway. Before it forwards a chunk towards the
 * client it asks `cutNow()`; when due, it forwards only `split(n)` bytes
 * of the chunk (a frame may end half sent) and destroys both sockets.
 * `poll()` does the same for a connection with nothing to forward, and
 * `cut()` cuts at once.
 */
function proxy(targetPort, cutNow, split) {
  const pairs = new Set();
  const st = { landed: 0, connections: 0, port: 0, server: null };
  const cutAll = () => {
    for (const { client, up } of pairs) {
      client.destroy();
      up.destroy();
    }
    pairs.clear();
  };
  /** Cuts what is open now; counted if anything was. */
  st.cut = () => {
    if (pairs.size > 0) st.landed++;
    cutAll();
  };
  st.poll = () => {
    if (pairs.size > 0 && cutNow()) st.cut();
  };
  st.server = createServer((client) => {
    st.connections++;
    const up = tcpConnect(targetPort, "127.0.0.1");
    const pair = { client, up };
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      up.destroy();
    };
    for (const s of [client, up]) {
      s.on("error", end);
      s.on("close", end);
    }
    client.pipe(up);
    // Towards the client by hand, with backpressure: the proxy must not
    // hold what a stalled SDK does not read.
    up.on("data", (b) => {
      if (cutNow()) {
        client.write(b.subarray(0, split(b.length)));
        st.landed++;
        cutAll();
        return;
      }
      if (!client.write(b)) {
        up.pause();
        client.once("drain", () => up.resume());
      }
    });
  });
  return new Promise((resolve) =>
    st.server.listen(0, "127.0.0.1", () => {
      st.port = st.server.address().port;
      st.close = () => {
        cutAll();
        return new Promise((r) => st.server.close(r));
      };
      resolve(st);
    }),
  );
}

/** The flood's bytes: AES-128-CTR of zeros, which openssl makes in the sandbox and node here. */
function floodKey(rand) {
  const hex = (n) => Array.from({ length: n }, () => Math.floor(rand() * 256).toString(16).padStart(2, "0")).join("");
  return { key: hex(16), iv: hex(16) };
}

let box;
let px;
let sb;
let producer;

before(async () => {
  box = await boot();
});

after(async () => {
  await sb?.close();
  await producer?.close();
  await px?.close();
  await box?.stop();
});

test("100 MiB and an event storm through 50 cuts, 2 gateway kills and 2 stalls: every byte and event once, memory bounded", { timeout: TEST_TIMEOUT_MS }, async () => {
  console.log(`# chaos seed ${SEED} (BERTH_CHAOS_SEED=${SEED} replays it), ${FLOOD_BYTES} bytes`);
  const rand = prng(SEED);
  const { key, iv } = floodKey(rand);
  // Cut points over the flood's offsets (what the consumer has taken), so
  // they spread over it; two of them kill the gateway instead. A point is
  // due only while the SDK is open (its hello answered), so every cut is
  // a drop it must reconnect from.
  const points = Array.from({ length: CUTS - STALLS + GATEWAY_KILLS }, () => Math.floor(FLOOD_BYTES * (0.02 + 0.93 * rand()))).sort((a, b) => a - b);
  const killIdx = new Set();
  while (killIdx.size < GATEWAY_KILLS) killIdx.add(Math.floor(rand() * points.length));
  const kills = points.filter((_, i) => killIdx.has(i));
  const cuts = points.filter((_, i) => !killIdx.has(i));
  const stallsAt = Array.from({ length: STALLS }, (_, i) => Math.floor(FLOOD_BYTES * ((i + 0.4 + 0.3 * rand()) / STALLS)));
  console.log(`# cuts at ${cuts.join(",")}`);
  console.log(`# gateway kills at ${kills.join(",")}; stalls at ${stallsAt.join(",")}`);

  let taken = () => 0;
  const killed = [];
  px = await proxy(
    box.port,
    () => {
      if (sb?.stats().state !== "open") return false;
      if (kills.length > 0 && taken() >= kills[0]) {
        const g = box.killGateway();
        if (g !== undefined) {
          kills.shift();
          killed.push(g);
        }
      }
      if (cuts.length === 0 || taken() < cuts[0]) return false;
      cuts.shift();
      return true;
    },
    (n) => Math.floor(rand() * n),
  );
  sb = await connect({ url: `ws://127.0.0.1:${px.port}/v1`, token: box.token, backoffInitialMs: 20, backoffMaxMs: 200 });
  // Events come from a second client, straight to the gateway (the
  // kills drop it too; secrets.set is resent).
  producer = await connect({ url: box.url, token: box.token, backoffInitialMs: 20, backoffMaxMs: 200 });

  const peak = { bytesBuffered: 0, eventsBuffered: 0, heapUsed: 0, arrayBuffers: 0, rss: 0 };
  const sample = () => {
    const s = sb.stats();
    const m = process.memoryUsage();
    peak.bytesBuffered = Math.max(peak.bytesBuffered, s.bytesBuffered);
    peak.eventsBuffered = Math.max(peak.eventsBuffered, s.eventsBuffered);
    peak.heapUsed = Math.max(peak.heapUsed, m.heapUsed);
    peak.arrayBuffers = Math.max(peak.arrayBuffers, m.arrayBuffers);
    peak.rss = Math.max(peak.rss, m.rss);
  };
  const sampler = setInterval(sample, 50);

  const from = (await sb.request("state", {})).last_seq + 1;
  const ev = sb.events.follow({ fromSeq: from });
  const seqs = [];
  const odd = [];
  let flooding = true;
  const produced = (async () => {
    let i = 0;
    while (flooding) {
      await producer.secrets.set({ [`CHAOS_${i % 8}`]: `v${i}` });
      i++;
      if (i % 4 === 0) await sleep(5);
    }
    await producer.secrets.set({ CHAOS_END: "end" });
    return i;
  })();
  const followed = (async () => {
    for await (const e of ev) {
      if (e.seq === 0) {
        odd.push(e);
        continue;
      }
      seqs.push(e.seq);
      if (e.kind === "secrets.changed" && e.data.set?.includes("CHAOS_END")) break;
    }
  })();

  const started = Date.now();
  const p = await sb.process.start({
    shell: `openssl enc -aes-128-ctr -nosalt -K ${key} -iv ${iv} < /dev/zero 2>/dev/null | head -c ${FLOOD_BYTES}`,
  });
  taken = () => p.stdout.taken;
  // Points that come due while nothing flows (berthd pacing a stalled
  // consumer, or done sending) are cut here.
  const cutter = setInterval(() => px.poll(), 10);
  const stderr = p.stderr.text();
  const want = createCipheriv("aes-128-ctr", Buffer.from(key, "hex"), Buffer.from(iv, "hex"));
  const gotHash = createHash("sha256");
  const wantHash = createHash("sha256");
  let zeros = Buffer.alloc(1 << 20);
  let got = 0;
  let firstMismatch = -1;
  const lost = [];
  for await (const it of p.stdout.items()) {
    if (it.type === "lost") {
      lost.push(it);
      continue;
    }
    assert.equal(it.offset, got, "chunks are contiguous");
    if (it.data.length > zeros.length) zeros = Buffer.alloc(it.data.length);
    const exp = want.update(zeros.subarray(0, it.data.length));
    gotHash.update(it.data);
    wantHash.update(exp);
    if (firstMismatch < 0 && Buffer.compare(Buffer.from(it.data.buffer, it.data.byteOffset, it.data.length), exp) !== 0) firstMismatch = got;
    got += it.data.length;
    sample();
    while (stallsAt.length > 0 && got >= stallsAt[0]) {
      stallsAt.shift();
      // The consumer stops taking: acks stop and berthd must pace the
      // command, through a reconnect too.
      await sleep(STALL_MS / 3);
      await waitFor("the SDK connected", () => sb.stats().state === "open");
      px.cut();
      await sleep((STALL_MS * 2) / 3);
      sample();
    }
  }
  const exit = await p.wait();
  const floodMs = Date.now() - started;
  flooding = false;
  const sets = await produced;
  await followed;
  clearInterval(sampler);
  clearInterval(cutter);
  await waitFor("the SDK connected", () => sb.stats().state === "open");
  sample();
  const s = sb.stats();
  console.log(`# flood ${got} bytes in ${floodMs} ms (${(got / 1048576 / (floodMs / 1000)).toFixed(1)} MiB/s); ${sets} secrets.set, ${seqs.length} events`);
  console.log(`# cuts landed ${px.landed}, gateways killed ${killed.length}, proxy connections ${px.connections}, reconnects ${s.reconnects}, requests resent ${s.requestsResent}`);
  console.log(`# peaks: sdk bytes ${peak.bytesBuffered}, sdk events ${peak.eventsBuffered}, heapUsed ${peak.heapUsed}, arrayBuffers ${peak.arrayBuffers}, rss ${peak.rss}`);

  assert.deepEqual(lost, [], "no lost item on the output stream");
  assert.equal(firstMismatch, -1, `the bytes from offset ${firstMismatch} are not the flood's`);
  assert.equal(got, FLOOD_BYTES, "every byte arrived");
  assert.equal(gotHash.digest("hex"), wantHash.digest("hex"));
  assert.equal(await stderr, "");
  assert.deepEqual(exit.exit, { code: 0 }, JSON.stringify(exit));
  assert.equal(exit.stdout_bytes, FLOOD_BYTES);

  // The minimal image's journal keeps 64 MiB: a few thousand small
  // events never rotate out, so a gap here is the SDK's.
  assert.deepEqual(odd, [], "no gap or boot item: the journal holds every event");
  const firstBad = seqs.findIndex((q, i) => q !== from + i);
  assert.equal(firstBad, -1, `seqs consecutive from ${from}: at index ${firstBad}: ${seqs.slice(Math.max(0, firstBad - 3), firstBad + 3)}`);
  assert.ok(seqs.length > sets, `every secrets.set journaled an event: ${seqs.length} events, ${sets + 1} sets`);

  assert.equal(px.landed, CUTS, "every cut landed on a live connection");
  assert.equal(killed.length, GATEWAY_KILLS, "the gateway was killed");
  assert.ok(s.reconnects >= px.landed, `reconnects ${s.reconnects} >= cuts ${px.landed}`);

  assert.ok(peak.bytesBuffered <= MAX_SDK_BUFFERED, `the SDK held ${peak.bytesBuffered} bytes, over half a ring and a step (${MAX_SDK_BUFFERED})`);
  assert.ok(peak.heapUsed <= MAX_HEAP, `heapUsed peaked at ${peak.heapUsed}`);
  assert.ok(peak.arrayBuffers <= MAX_ARRAY_BUFFERS, `arrayBuffers peaked at ${peak.arrayBuffers}`);
});
