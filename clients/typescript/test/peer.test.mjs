// The connection's rules against a peer of the test's own (a WebSocket
// server speaking just enough berth.v1): hello's max_in_flight is obeyed,
// a 4008 close is reconnected, unknown message types are ignored. Needs
// `npm run build` first; no berthd.
import { test } from "node:test";
import assert from "node:assert/strict";
import { WebSocketServer } from "ws";
import { decode, encode } from "@msgpack/msgpack";

import { connect, BerthError } from "../dist/index.js";

/** A server answering hello and ping; onPing decides when each ping is answered. */
async function peer({ maxInFlight, bootIds = ["b".repeat(32)], onPing }) {
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
        reply({ version: "berth.v1", agent_version: "0", boot_id: boot, labels: { image: "peer" }, capabilities: ["hello", "ping"], limits, pid: 1, started_at: 0 });
        // A message type of a newer protocol: a client ignores it.
        ws.send(encode({ type: "notice", text: "hi" }));
        return;
      }
      state.outstanding++;
      state.maxOutstanding = Math.max(state.maxOutstanding, state.outstanding);
      onPing(ws, () => {
        state.outstanding--;
        reply({ ts: Date.now(), boot_id: boot });
      }, state);
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
