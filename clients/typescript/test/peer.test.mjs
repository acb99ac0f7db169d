// The connection's rules against a peer of the test's own (a WebSocket
// server speaking just enough berth.v1): hello's max_in_flight is obeyed,
// a 4008 close is reconnected, unknown message types are ignored. Needs
// `npm run build` first; no berthd.
import { test } from "node:test";
import assert from "node:assert/strict";
import { WebSocketServer } from "ws";
import { decode, encode } from "@msgpack/msgpack";

import { connect, BerthError } from "../dist/index.js";

/**
 * A server answering hello and every other request through onPing, which
 * decides when each is answered (and sees the request itself).
 */
async function peer({ maxInFlight, bootIds = ["b".repeat(32)], features, capabilities = ["hello", "ping"], onPing }) {
  const wss = new WebSocketServer({ port: 0, host: "127.0.0.1", handleProtocols: () => "berth.v1" });
  await new Promise((r) => wss.once("listening", r));
  const state = { conns: 0, outstanding: 0, maxOutstanding: 0, auth: [] };
  wss.on("connection", (ws, req) => {
    state.auth.push(req.headers.authorization);
    const boot = bootIds[Math.min(state.conns, bootIds.length - 1)];
    state.conns++;
    ws.on("message", (raw) => {
      const m = decode(raw);
      const reply = (result) => ws.send(encode({ type: "response", id: m.id, ok: true, result }));
      if (m.op === "hello") {
        const limits = { max_message: 8 << 20, max_depth: 32 };
        if (maxInFlight !== undefined) limits.max_in_flight = maxInFlight;
        const h = { version: "berth.v1", agent_version: "0", boot_id: boot, labels: { image: "peer" }, capabilities, limits, pid: 1, started_at: 0 };
        if (features !== undefined) h.features = features;
        reply(h);
        // A message type of a newer protocol: a client ignores it.
        ws.send(encode({ type: "notice", text: "hi" }));
        return;
      }
      state.outstanding++;
      state.maxOutstanding = Math.max(state.maxOutstanding, state.outstanding);
      onPing(ws, () => {
        state.outstanding--;
        reply({ ts: Date.now(), boot_id: boot });
      }, state, m, reply);
    });
  });
  const url = `ws://127.0.0.1:${wss.address().port}/v1`;
  const close = () =>
    new Promise((r) => {
      for (const c of wss.clients) c.terminate();
      wss.close(r);
    });
  return { url, state, close, wss };
}

test("hello's max_in_flight is obeyed: never more requests in flight", async () => {
  const p = await peer({ maxInFlight: 4, onPing: (_ws, answer) => setTimeout(answer, 5) });
  const sb = await connect({ url: p.url, token: "t0k" });
  assert.equal(sb.stats().maxInFlight, 4);
  await Promise.all(Array.from({ length: 50 }, () => sb.request("ping", {})));
  assert.equal(p.state.maxOutstanding, 4);
  assert.equal(p.state.auth[0], "Bearer t0k");
  await sb.close();
  await p.close();
});

test("without max_in_flight in hello, 256", async () => {
  const p = await peer({ onPing: (_ws, answer) => setTimeout(answer, 20) });
  const sb = await connect({ url: p.url, token: "t" });
  assert.equal(sb.stats().maxInFlight, 256);
  await Promise.all(Array.from({ length: 600 }, () => sb.request("ping", {})));
  assert.equal(p.state.maxOutstanding, 256);
  await sb.close();
  await p.close();
});

test("a 4008 close: reconnected, reads in flight resent; a new boot_id is a boot", async () => {
  let first = true;
  const p = await peer({
    bootIds: ["1".repeat(32), "1".repeat(32), "2".repeat(32)],
    onPing: (ws, answer, state) => {
      if (first) {
        first = false;
        state.outstanding--;
        ws.close(4008, "slow consumer: resume with from_seq");
        return;
      }
      answer();
    },
  });
  const changes = [];
  const boots = [];
  const sb = await connect({ url: p.url, token: "t", backoffInitialMs: 10, backoffMaxMs: 20, onStateChange: (c) => changes.push(c) });
  sb.connection.on("boot", (b) => boots.push(b));
  const r = await sb.request("ping", {});
  assert.equal(r.boot_id, "1".repeat(32));
  assert.ok(changes.some((c) => c.state === "reconnecting" && c.closeCode === 4008));
  assert.equal(sb.stats().reconnects, 1);
  assert.equal(sb.stats().requestsResent, 1);
  // A drop of the peer's making: the next connection is a new boot.
  for (const c of p.wss.clients) c.terminate();
  await new Promise((r) => sb.connection.on("reconnect", r));
  assert.deepEqual(boots, [{ previous: "1".repeat(32), boot_id: "2".repeat(32) }]);
  await sb.close();
  await p.close();
});

test("a request not safe to repeat fails disconnected (retryable) when the connection drops", async () => {
  const p = await peer({ onPing: (ws) => ws.terminate() });
  const sb = await connect({ url: p.url, token: "t", backoffInitialMs: 10, backoffMaxMs: 20 });
  await assert.rejects(sb.request("pty.input", { id: "00000000", data: new Uint8Array([1]) }), (e) => e instanceof BerthError && e.code === "disconnected" && e.retryable);
  await sb.close();
  await assert.rejects(sb.request("ping", {}), (e) => e.code === "closed");
  await p.close();
});

test("keepalive: a peer that stops answering is dropped and reconnected", async () => {
  const p = await peer({ onPing: (_ws, answer) => answer() });
  const sb = await connect({ url: p.url, token: "t", keepaliveMs: 200, keepaliveTimeoutMs: 300, backoffInitialMs: 10, backoffMaxMs: 20 });
  // The first connection's socket stops reading: no pong, no answer.
  const [first] = p.wss.clients;
  first._socket.pause();
  const t0 = Date.now();
  let timer;
  await Promise.race([
    new Promise((r) => sb.connection.on("reconnect", r)),
    new Promise((_, j) => (timer = setTimeout(() => j(new Error("no reconnect within 5 s")), 5000))),
  ]);
  clearTimeout(timer);
  assert.ok(Date.now() - t0 < 5000);
  assert.equal((await sb.request("ping", {})).boot_id.length, 32);
  await sb.close();
  await p.close();
});

const KEYS = { desktop: false, recording: false, runtimes: [], previews: false, idempotency_keys: 4096 };

test("a creating op is sent with a key, and after a drop sent again with the same key", async () => {
  const seen = [];
  const p = await peer({
    features: KEYS,
    onPing: (ws, _answer, state, m, reply) => {
      state.outstanding--;
      seen.push(m);
      if (seen.length === 1) ws.terminate();
      else reply({ id: "p1", pid: 42 });
    },
  });
  const sb = await connect({ url: p.url, token: "t", backoffInitialMs: 10, backoffMaxMs: 20 });
  const r = await sb.request("proc.start", { argv: ["true"] });
  assert.deepEqual(r, { id: "p1", pid: 42 });
  assert.equal(seen.length, 2);
  assert.match(seen[0].args.key, /^[0-9a-f]{32}$/);
  assert.equal(seen[1].args.key, seen[0].args.key);
  assert.notEqual(seen[1].id, undefined);
  assert.equal(sb.stats().requestsResent, 1);
  await sb.close();
  await p.close();
});

test("the caller's own key is kept; without features.idempotency_keys a creating op fails disconnected", async () => {
  const seen = [];
  const p = await peer({
    onPing: (ws, _answer, state, m) => {
      state.outstanding--;
      seen.push(m);
      ws.terminate();
    },
  });
  const sb = await connect({ url: p.url, token: "t", backoffInitialMs: 10, backoffMaxMs: 20 });
  await assert.rejects(sb.request("pty.open", { argv: ["sh"], key: "mine-1" }), (e) => e.code === "disconnected" && e.retryable);
  assert.equal(seen.length, 1);
  assert.equal(seen[0].args.key, "mine-1");
  await sb.close();
  await p.close();
});

test("a keyed request is not resent to a new boot: it fails with boot", async () => {
  const seen = [];
  const p = await peer({
    features: KEYS,
    bootIds: ["1".repeat(32), "2".repeat(32)],
    onPing: (ws, _answer, state, m, reply) => {
      state.outstanding--;
      seen.push(m);
      if (seen.length === 1) ws.terminate();
      else reply({ id: "p2", pid: 43 });
    },
  });
  const sb = await connect({ url: p.url, token: "t", backoffInitialMs: 10, backoffMaxMs: 20 });
  await assert.rejects(sb.request("proc.start", { argv: ["true"] }), (e) => e.code === "boot" && !e.retryable);
  assert.equal(seen.length, 1, "not sent to the new boot");
  await sb.close();
  await p.close();
});

test("a timed-out or aborted request is cancelled on berth's side with request.cancel", async () => {
  const held = new Map();
  const cancels = [];
  const p = await peer({
    capabilities: ["hello", "ping", "proc.wait", "request.cancel"],
    onPing: (ws, _answer, state, m, reply) => {
      state.outstanding--;
      if (m.op === "request.cancel") {
        cancels.push(m.args.id);
        const waiting = held.get(m.args.id);
        if (waiting !== undefined) {
          held.delete(m.args.id);
          ws.send(encode({ type: "response", id: m.args.id, ok: false, error: { code: "cancelled", message: "cancelled by request.cancel" } }));
        }
        reply({ cancelled: waiting !== undefined });
        return;
      }
      held.set(m.id, m);
    },
  });
  const sb = await connect({ url: p.url, token: "t" });
  await assert.rejects(sb.request("proc.wait", { id: "x" }, { timeoutMs: 50 }), (e) => e.code === "timeout");
  const ac = new AbortController();
  const aborted = sb.request("proc.wait", { id: "y" }, { signal: ac.signal });
  await new Promise((r) => setTimeout(r, 50));
  ac.abort();
  await assert.rejects(aborted, (e) => e.code === "cancelled" && !e.retryable);
  const deadline = Date.now() + 2000;
  while ((held.size > 0 || sb.stats().inFlight > 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  assert.equal(cancels.length, 2);
  assert.equal(held.size, 0, "both waits were cancelled at the peer");
  assert.equal(sb.stats().inFlight, 0, "their slots are free again");
  await assert.rejects(sb.request("ping", {}, { signal: AbortSignal.abort() }), (e) => e.code === "cancelled");
  await sb.close();
  await p.close();
});

test("without request.cancel in capabilities, a timeout sends nothing more", async () => {
  const ops = [];
  const p = await peer({
    onPing: (_ws, _answer, state, m) => {
      state.outstanding--;
      ops.push(m.op);
    },
  });
  const sb = await connect({ url: p.url, token: "t" });
  await assert.rejects(sb.request("proc.wait", { id: "x" }, { timeoutMs: 30 }), (e) => e.code === "timeout");
  await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(ops, ["proc.wait"]);
  assert.equal(sb.stats().inFlight, 1, "its slot is held until an answer comes");
  await sb.close();
  await p.close();
});
