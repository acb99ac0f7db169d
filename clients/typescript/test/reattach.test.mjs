// Where a command's streams attach again after a drop, against a peer of
// the test's own: from what the consumer took (an attach sets berthd's
// place, which paces the command), with what was queued read again, or
// kept when berthd no longer holds it. Needs `npm run build` first; no
// berthd.
import { test } from "node:test";
import assert from "node:assert/strict";
import { WebSocketServer } from "ws";
import { decode, encode } from "@msgpack/msgpack";

import { waitFor } from "./live.mjs";
import { connect } from "../dist/index.js";

const ID = "0000abcd";
const STREAM = `proc/${ID}/stdout`;
const CHUNK = 1000;
const END = 5000;

/** Byte `o` of the command's stdout. */
const byteAt = (o) => (o * 7 + 3) & 255;
const bytes = (from, to) => Uint8Array.from({ length: to - from }, (_, i) => byteAt(from + i));

/**
 * A peer running one command whose stdout is END bytes. The first
 * connection is sent 4 chunks after proc.start; an attach is answered
 * from `startAt(from)` with the rest and eof. Every ack is checked
 * against what that connection was sent.
 */
async function peer(startAt) {
  const wss = new WebSocketServer({ port: 0, host: "127.0.0.1", handleProtocols: () => "berth.v1" });
  await new Promise((r) => wss.once("listening", r));
  const st = { attaches: [], badAcks: [], current: null };
  const send = (ws, offset, to, eof = false) => {
    for (let at = offset; at < to; ) {
      const n = Math.min(to, (Math.floor(at / CHUNK) + 1) * CHUNK) - at;
      ws.send(encode({ type: "data", stream: STREAM, offset: at, data: bytes(at, at + n) }));
      at += n;
      ws.sent = at;
    }
    if (eof) ws.send(encode({ type: "data", stream: STREAM, offset: to, data: new Uint8Array(0), eof: true }));
  };
  wss.on("connection", (ws) => {
    st.current = ws;
    ws.sent = 0;
    ws.on("message", (raw) => {
      const m = decode(raw);
      const reply = (result) => ws.send(encode({ type: "response", id: m.id, ok: true, result }));
      const stream = (offset, lost, end) => ({ offset, lost, end });
      switch (m.op) {
        case "hello":
          reply({ version: "berth.v1", agent_version: "0", boot_id: "b".repeat(32), labels: {}, capabilities: [], limits: { max_message: 8 << 20, max_depth: 32 }, pid: 1, started_at: 0 });
          break;
        case "proc.start":
          reply({ id: ID, pid: 42 });
          send(ws, 0, 4 * CHUNK);
          break;
        case "proc.attach": {
          const from = m.args.from_offset.stdout;
          st.attaches.push(from);
          const at = startAt(from);
          ws.sent = at;
          reply({ id: ID, state: "running", stdout: stream(at, at - from, END), stderr: stream(0, 0, 0) });
          send(ws, at, END, true);
          ws.send(encode({ type: "data", stream: `proc/${ID}/stderr`, offset: 0, data: new Uint8Array(0), eof: true }));
          break;
        }
        case "proc.ack":
          if (m.args.stdout > ws.sent) st.badAcks.push({ ack: m.args.stdout, sent: ws.sent });
          reply({});
          break;
        default:
          reply({});
      }
    });
  });
  st.url = `ws://127.0.0.1:${wss.address().port}/v1`;
  st.close = () => new Promise((r) => wss.close(r));
  return st;
}

/**
 * Starts the command, takes its first chunk, waits until the other three
 * are queued, drops the connection and, once it is attached again, reads
 * to the end. Returns the
 * attach's offsets, the items read and the peer's view of the acks.
 */
async function dropWithQueued(startAt) {
  const px = await peer(startAt);
  const sb = await connect({ url: px.url, token: "t", backoffInitialMs: 20, backoffMaxMs: 50 });
  try {
    const p = await sb.process.start({ argv: ["x"] });
    const items = p.stdout.items();
    const first = await items.next();
    await waitFor("three chunks queued", () => p.stdout.bytes === 3 * CHUNK);
    px.current.terminate();
    // The consumer stands still until the SDK has attached again.
    await waitFor("an attach", () => px.attaches.length === 1);
    const got = [first.value];
    for await (const it of items) got.push(it);
    return { attaches: px.attaches, got, badAcks: px.badAcks };
  } finally {
    await sb.close();
    px.current?.terminate();
    await px.close();
  }
}

/** The data items as one array, and the lost items. */
function split(got) {
  const data = got.filter((i) => i.type === "data");
  let at = 0;
  for (const d of data) {
    assert.equal(d.offset, at, "data contiguous");
    at += d.data.length;
  }
  return { data: Buffer.concat(data.map((d) => d.data)), lost: got.filter((i) => i.type === "lost") };
}

test("after a drop a command's stdout attaches again from what the consumer took; what was queued is read again, once", async () => {
  const r = await dropWithQueued((from) => from);
  assert.deepEqual(r.attaches, [CHUNK], "attached from the taken offset, not from the 4000 that had arrived");
  const { data, lost } = split(r.got);
  assert.deepEqual(lost, []);
  assert.deepEqual(data, Buffer.from(bytes(0, END)));
  assert.deepEqual(r.badAcks, [], "no ack past what the connection was sent");
});

test("when berthd no longer holds from the taken offset, what was queued is kept up to where it resumes", async () => {
  const r = await dropWithQueued(() => 2500);
  assert.deepEqual(r.attaches, [CHUNK]);
  const { data, lost } = split(r.got);
  assert.deepEqual(lost, [], "the bytes the SDK held are not lost");
  assert.deepEqual(data, Buffer.from(bytes(0, END)));
  assert.deepEqual(r.badAcks, []);
});

test("past what had arrived, what was queued comes first and only the rest is lost", async () => {
  const r = await dropWithQueued(() => 4500);
  const lost = r.got.filter((i) => i.type === "lost");
  assert.deepEqual(lost, [{ type: "lost", offset: 4 * CHUNK, bytes: 500 }]);
  const data = r.got.filter((i) => i.type === "data");
  assert.deepEqual(Buffer.concat(data.filter((d) => d.offset < 4 * CHUNK).map((d) => d.data)), Buffer.from(bytes(0, 4 * CHUNK)));
  assert.deepEqual(Buffer.concat(data.filter((d) => d.offset >= 4 * CHUNK).map((d) => d.data)), Buffer.from(bytes(4500, END)));
  assert.deepEqual(r.badAcks, []);
});
