// The SDK's namespaces against a live berthd of the minimal image.
// Needs `npm run build` first (the tests use dist/).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomBytes, createHash } from "node:crypto";

import { boot, waitFor } from "./live.mjs";
import { connect, BerthError, BerthProvider } from "../dist/index.js";

let sb;
let box;

before(async () => {
  box = await boot();
  sb = await connect({ url: box.url, token: box.token, labels: { image: "minimal" } });
});

after(async () => {
  await sb?.close();
  await box?.stop();
});

test("hello: boot id, labels; a label that differs refuses the connection", async () => {
  assert.match(sb.bootId, /^[0-9a-f]{32}$/);
  assert.equal(sb.labels.image, "minimal");
  await assert.rejects(connect({ url: box.url, token: box.token, labels: { image: "desktop" } }), (e) => e instanceof BerthError && e.code === "label_mismatch" && !e.retryable);
});

test("a wrong token is refused, not retried", async () => {
  await assert.rejects(connect({ url: box.url, token: "0".repeat(64) }), (e) => e instanceof BerthError && e.code === "unauthorized");
});

test("requests beyond max_in_flight wait in the queue, and all are answered", async () => {
  const max = sb.stats().maxInFlight;
  const n = max * 3;
  const all = Array.from({ length: n }, () => sb.request("ping", {}));
  const s = sb.stats();
  assert.ok(s.inFlight <= max, `in flight ${s.inFlight} > ${max}`);
  assert.ok(s.queued >= n - max, `queued ${s.queued}`);
  const rs = await Promise.all(all);
  assert.equal(rs.length, n);
  for (const r of rs) assert.equal(r.boot_id, sb.bootId);
});

test("process: stdout and stderr in order, exit status, stdin", async () => {
  const p = await sb.process.start({ argv: ["sh", "-c", "echo out1; echo err1 >&2; cat; echo out2; exit 3"], stdin: "pipe" });
  await p.write("from stdin\n");
  await p.closeStdin();
  const [out, err, w] = await Promise.all([p.stdout.text(), p.stderr.text(), p.wait()]);
  assert.equal(out, "out1\nfrom stdin\nout2\n");
  assert.equal(err, "err1\n");
  assert.deepEqual(w.exit, { code: 3 });
  assert.equal(w.stdout_bytes, Buffer.byteLength(out));
});

test("process: a slow consumer of a small ring loses nothing (acks pace the command)", async () => {
  // 64 KiB ring, ~2.4 MB of output: without pacing by what was taken the ring would overrun.
  const p = await sb.process.start({ argv: ["seq", "1", "400000"], ring: 65536 });
  const parts = [];
  let n = 0;
  for await (const c of p.stdout) {
    parts.push(Buffer.from(c));
    if (++n % 8 === 0) await new Promise((r) => setTimeout(r, 5));
  }
  const got = Buffer.concat(parts).toString();
  const want = Array.from({ length: 400000 }, (_, i) => `${i + 1}\n`).join("");
  assert.equal(got.length, want.length);
  assert.ok(got === want, "output differs");
  assert.deepEqual((await p.wait()).exit, { code: 0 });
});

test("process: signal ends a command", async () => {
  const p = await sb.process.start({ argv: ["sleep", "100"] });
  await p.signal("KILL");
  const w = await p.wait();
  assert.equal(w.exit.signal, 9);
  assert.ok((await sb.process.list()).procs.some((x) => x.id === p.id));
});

test("fs: write (chunked, progress), read whole and a range, stat, list, mkdir, move, chmod, remove", async () => {
  const dir = `/tmp/sdk-fs-${randomBytes(4).toString("hex")}`;
  await sb.fs.mkdir(dir);
  const data = randomBytes(5 * 1024 * 1024 + 123);
  const progress = [];
  const r = await sb.fs.write(`${dir}/a.bin`, data, { chunkSize: 1 << 20, onProgress: (s, t) => progress.push([s, t]), mode: 0o600 });
  assert.equal(r.size, data.length);
  assert.equal(progress.length, 6);
  assert.deepEqual(progress.at(-1), [data.length, data.length]);
  const back = await sb.fs.read(`${dir}/a.bin`);
  assert.equal(createHash("sha256").update(back).digest("hex"), createHash("sha256").update(data).digest("hex"));
  const range = await sb.fs.read(`${dir}/a.bin`, { offset: 4 * 1024 * 1024 - 10, length: 20 });
  assert.deepEqual(Buffer.from(range), data.subarray(4 * 1024 * 1024 - 10, 4 * 1024 * 1024 + 10));
  const st = await sb.fs.stat(`${dir}/a.bin`);
  assert.equal(st.type, "file");
  assert.equal(st.size, data.length);
  assert.equal(st.mode, 0o600);
  await sb.fs.write(`${dir}/empty`, "");
  assert.equal((await sb.fs.stat(`${dir}/empty`)).size, 0);
  await sb.fs.mkdir(`${dir}/sub/deeper`, { parents: true });
  await sb.fs.move(`${dir}/a.bin`, `${dir}/sub/b.bin`);
  await sb.fs.chmod(`${dir}/sub/b.bin`, 0o640);
  assert.equal((await sb.fs.stat(`${dir}/sub/b.bin`)).mode, 0o640);
  const list = await sb.fs.list(dir, { depth: 3 });
  assert.deepEqual(list.entries.map((e) => e.path), [`${dir}/empty`, `${dir}/sub`, `${dir}/sub/b.bin`, `${dir}/sub/deeper`]);
  await assert.rejects(sb.fs.stat(`${dir}/a.bin`), (e) => e.code === "not_found" && e.path === `${dir}/a.bin`);
  await assert.rejects(sb.fs.remove(dir), (e) => e.code === "not_empty");
  const rm = await sb.fs.remove(dir, { recursive: true });
  assert.equal(rm.removed, 5);
});

test("fs: an upload picks up from what the partial holds after another writer's chunk (conflict rule)", async () => {
  const path = `/tmp/sdk-conflict-${randomBytes(4).toString("hex")}`;
  const data = Buffer.alloc(3 * 65536, 7);
  let meddled = false;
  const other = await connect({ url: box.url, token: box.token });
  try {
    const r = await sb.fs.write(path, data, {
      chunkSize: 65536,
      onProgress: (s) => {
        if (s === 65536 && !meddled) {
          meddled = true;
          // Another connection appends the same bytes the first would send next.
          return other.request("fs.write", { path, offset: 65536, data: data.subarray(65536, 131072) });
        }
      },
    });
    assert.equal(r.size, data.length);
  } finally {
    await other.close();
  }
  assert.deepEqual(Buffer.from(await sb.fs.read(path)), data);
});

test("fs.watch: changes arrive as fs.changed events of that watch", async () => {
  const dir = `/tmp/sdk-watch-${randomBytes(4).toString("hex")}`;
  await sb.fs.mkdir(dir);
  const w = await sb.fs.watch(dir);
  assert.match(w.id, /^[0-9a-f]{8}$/);
  await sb.fs.write(`${dir}/f`, "x");
  const seen = [];
  for await (const ev of w) {
    assert.equal(ev.kind, "fs.changed");
    seen.push(...ev.data.changes.map((c) => `${c.kind} ${c.path}`));
    if (seen.includes(`created ${dir}/f`)) break;
  }
  assert.ok(!(await sb.fs.watches()).watches.some((x) => x.id === w.id), "closing the iterator ends the watch");
});

test("pty: open, input, output, resize, attach again from an offset, close", async () => {
  const { terminal: t, id } = await sb.pty.open({ argv: ["/bin/sh"], cols: 100, rows: 30 });
  assert.match(id, /^[0-9a-f]{8}$/);
  await t.input("echo one-$((40+2))\n");
  let text = "";
  for await (const c of t.output) {
    text += Buffer.from(c).toString();
    if (text.includes("one-42")) break;
  }
  const at = t.output.taken;
  await t.resize(120, 40);
  assert.equal((await sb.pty.list()).sessions.find((s) => s.id === id).cols, 120);
  await t.detach();
  await sb.pty.input(id, "echo two-$((40+3))\n");
  const t2 = await sb.pty.attach(id, { fromOffset: at });
  let more = "";
  for await (const c of t2.output) {
    more += Buffer.from(c).toString();
    if (more.includes("two-43")) break;
  }
  assert.equal(t2.attached.lost, 0);
  await t2.close();
});

test("events.follow: from seq 1, in order, without gaps; live events follow", async () => {
  const ev = sb.events.follow({ fromSeq: 1 });
  const first = await ev.next();
  assert.equal(first.value.seq, 1);
  assert.equal(first.value.kind, "berthd.started");
  const p = await sb.process.start({ argv: ["true"], tag: "follow-me" });
  let last = 1;
  for await (const e of ev) {
    assert.equal(e.seq, last + 1);
    last = e.seq;
    if (e.kind === "proc.exited" && e.data.id === p.id) break;
  }
});

test("events.follow: a slow consumer with a small queue still gets every event, once", async () => {
  const s = await sb.request("state", {});
  const from = s.last_seq + 1;
  const ev = sb.events.follow({ fromSeq: from, maxBuffered: 4 });
  for (let i = 0; i < 30; i++) await sb.secrets.set({ [`S${i}`]: "v" });
  const seqs = [];
  for await (const e of ev) {
    seqs.push(e.seq);
    assert.ok(ev.buffered <= 4);
    await new Promise((r) => setTimeout(r, 5));
    if (e.kind === "secrets.changed" && e.data.set?.[0] === "S29") break;
  }
  assert.deepEqual(seqs, Array.from({ length: seqs.length }, (_, i) => from + i));
  await sb.secrets.unset(Array.from({ length: 30 }, (_, i) => `S${i}`));
});

test("secrets: set, list, unset; values never come back", async () => {
  const r = await sb.secrets.set({ SDK_A: "alpha", SDK_B: new Uint8Array([1, 2, 3]) });
  assert.ok(r.names.includes("SDK_A") && r.names.includes("SDK_B"));
  assert.deepEqual((await sb.secrets.list()).names.filter((n) => n.startsWith("SDK_")), ["SDK_A", "SDK_B"]);
  const p = await sb.process.start({ argv: ["sh", "-c", "echo $SDK_A"], secrets: ["SDK_A"], redact: true });
  assert.equal(await p.stdout.text(), "[redacted:SDK_A]\n");
  assert.deepEqual((await sb.secrets.unset(["SDK_A", "SDK_B", "NOPE"])).unset, ["SDK_A", "SDK_B"]);
});

test("artifacts: publish, list, read whole and a range", async () => {
  const path = `/tmp/sdk-art-${randomBytes(4).toString("hex")}.txt`;
  const body = "line\n".repeat(1000);
  await sb.fs.write(path, body);
  const a = await sb.artifacts.publish(path);
  assert.equal(a.id, createHash("sha256").update(body).digest("hex"));
  assert.equal(a.media_type, "text/plain");
  assert.ok((await sb.artifacts.list()).artifacts.some((x) => x.id === a.id));
  assert.equal(Buffer.from(await sb.artifacts.read(a.id)).toString(), body);
  assert.equal(Buffer.from(await sb.artifacts.read(a.id, { offset: 5, length: 4 })).toString(), "line");
});

test("services, runtimes, tasks, ports, grants: what the minimal image has", async () => {
  const svcs = await sb.services.list();
  assert.ok(svcs.services.some((s) => s.name === "gateway"));
  assert.equal((await sb.services.status("gateway")).name, "gateway");
  await assert.rejects(sb.services.stop("gateway"), (e) => e.code === "forbidden");
  await assert.rejects(sb.services.status("nope"), (e) => e.code === "not_found");
  assert.deepEqual((await sb.runtime.list()).runtimes, []);
  await assert.rejects(sb.runtime.status("nope"), (e) => e.code === "not_found");
  assert.ok(Array.isArray((await sb.task.list()).tasks));
  await assert.rejects(sb.task.run({ runtime: "nope", prompt: "x" }), (e) => e.code === "not_found");
  // The gateway is a service: its listener is found by a poll (every second).
  await waitFor("the gateway's port in port.list", async () => (await sb.ports.list()).ports.some((p) => p.port === box.port), 5000);
  await assert.rejects(sb.grants.create({ scope: "preview:3000" }), (e) => e.code === "unavailable");
  assert.deepEqual((await sb.grants.list()).grants, []);
});

test("lifecycle: health, readiness with reasons, labels, boot id", async () => {
  const h = await sb.lifecycle.health();
  assert.equal(h.ok, true);
  assert.equal(h.boot_id, sb.bootId);
  const r = await sb.lifecycle.readiness();
  assert.equal(r.ready, true);
  assert.deepEqual(r.reasons, []);
  assert.equal(sb.lifecycle.labels().image, "minimal");
  assert.equal(sb.lifecycle.bootId(), sb.bootId);
});

test("lifecycle: the minimal image's features and capabilities say it has no desktop", async () => {
  const f = sb.lifecycle.features();
  assert.equal(f.desktop, false);
  assert.equal(f.recording, false);
  assert.equal(f.idempotency_keys, 4096);
  const caps = sb.lifecycle.capabilities();
  assert.ok(caps.includes("proc.start") && caps.includes("request.cancel"), caps.join(" "));
  assert.deepEqual(caps.filter((c) => c.startsWith("desktop.") || c.startsWith("record.")), []);
  await assert.rejects(sb.desktop.screenshot(), (e) => e instanceof BerthError && e.code === "unavailable");
});

test("desktop.browser: the CDP relay's URL and bearer", () => {
  const b = sb.desktop.browser();
  assert.equal(b.endpointURL, `ws://127.0.0.1:${box.port}/v1/cdp`);
  assert.equal(b.headers.Authorization, `Bearer ${box.token}`);
});

test("adapter: exec, execStream, files, pty, preview, lifecycle", async () => {
  const pv = new BerthProvider(sb);
  const r = await pv.exec("echo hi; echo no >&2; exit 4");
  assert.deepEqual(r, { exitCode: 4, stdout: "hi\n", stderr: "no\n", timedOut: false });
  const k = await pv.exec(["sh", "-c", "kill -9 $$"]);
  assert.equal(k.exitCode, 137);
  const s = await pv.execStream(["cat"], { stdin: true });
  await s.write("piped");
  await s.closeStdin();
  let out = "";
  for await (const c of s.stdout) out += Buffer.from(c).toString();
  assert.equal(out, "piped");
  assert.equal((await s.wait()).exitCode, 0);
  const dir = `/tmp/sdk-adapter-${randomBytes(4).toString("hex")}`;
  await pv.files.mkdir(`${dir}/a`, { parents: true });
  await pv.files.write(`${dir}/a/f.txt`, "content");
  assert.equal(Buffer.from(await pv.files.read(`${dir}/a/f.txt`)).toString(), "content");
  assert.deepEqual((await pv.files.list(`${dir}/a`)).map((f) => [f.name, f.isDir, f.size]), [["f.txt", false, 7]]);
  await pv.files.remove(dir, { recursive: true });
  await assert.rejects(pv.files.list(dir), (e) => e.code === "not_found");
  const t = await pv.pty.create({ cmd: ["/bin/sh"] });
  await pv.pty.input(t.id, "echo adapter-$((1+1))\n");
  let text = "";
  for await (const c of t.output) {
    text += Buffer.from(c).toString();
    if (text.includes("adapter-2")) break;
  }
  assert.ok(t.offset > 0);
  await pv.pty.resize(t.id, 90, 20);
  await pv.pty.kill(t.id);
  await assert.rejects(pv.preview.url(8080), (e) => e.code === "unavailable");
  assert.equal(await pv.lifecycle.health(), true);
  assert.deepEqual(await pv.lifecycle.ready(), { ready: true, reasons: [] });
});

test("lost output is told, never skipped: a command's ring overrun before anyone read it", async () => {
  const r = await sb.request("proc.start", { argv: ["seq", "1", "100000"], ring: 65536 });
  await sb.request("proc.wait", { id: r.id });
  const p = sb.process.attach(r.id);
  const it = p.stdout[Symbol.asyncIterator]();
  await assert.rejects(it.next(), (e) => e instanceof BerthError && e.code === "lost" && e.details.offset === 0 && e.details.bytes > 0);
  const total = (await sb.process.list()).procs.find((x) => x.id === r.id).stdout_bytes;
  let rest = 0;
  for (let c = await it.next(); !c.done; c = await it.next()) rest += c.value.length;
  assert.ok(rest > 0 && rest <= 65536, `rest ${rest}`);
  assert.equal(p.stdout.taken, total);
});

test("a terminal's slow consumer: the SDK lets go past maxBuffered, and what the ring lost is a lost item", async () => {
  const { terminal: t } = await sb.pty.open({ argv: ["sh", "-c", "seq 1 300000; sleep 30"], ring: 65536 }, { maxBuffered: 16384 });
  await new Promise((r) => setTimeout(r, 1500));
  assert.ok(sb.stats().bytesBuffered < 16384 + 2 * 65536, `buffered ${sb.stats().bytesBuffered}`);
  let lost = 0;
  let at = 0;
  let tail = "";
  for await (const item of t.output.items()) {
    // Items tile the stream: each starts where the one before ended.
    assert.equal(item.offset, at);
    if (item.type === "lost") {
      assert.ok(item.bytes > 0);
      lost += item.bytes;
      at += item.bytes;
    } else {
      at += item.data.length;
      tail = (tail + Buffer.from(item.data).toString()).slice(-64);
      if (tail.includes("300000")) break;
    }
  }
  assert.ok(lost > 0, "lost items");
  await t.close();
});

test("a request's timeout: timeout error, the connection goes on", async () => {
  const p = await sb.process.start({ argv: ["sleep", "100"] });
  const t0 = Date.now();
  await assert.rejects(sb.request("proc.wait", { id: p.id }, { timeoutMs: 200 }), (e) => e instanceof BerthError && e.code === "timeout" && e.retryable);
  assert.ok(Date.now() - t0 >= 190);
  assert.equal((await sb.lifecycle.health()).ok, true);
  await p.signal("KILL");
  assert.equal((await p.wait()).exit.signal, 9);
});

test("connectTimeoutMs: nothing listening gives up with timeout", async () => {
  const t0 = Date.now();
  await assert.rejects(connect({ url: "ws://127.0.0.1:9/v1", token: box.token, connectTimeoutMs: 500 }), (e) => e instanceof BerthError && e.code === "timeout");
  assert.ok(Date.now() - t0 < 5000);
});
