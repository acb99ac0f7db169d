// Runtimes and tasks through the SDK, with a runtime of the test's own
// (python3 as `nobody`, its task the prompt run as a program), and grants
// with the preview proxy on. Needs `npm run build` first.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { boot, waitFor } from "./live.mjs";
import { connect, BerthError, BerthProvider } from "../dist/index.js";
import { createServer } from "node:net";

const freePort = () =>
  new Promise((resolve) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

let box;
let sb;

const RUNTIME = `[runtime fake]
command = /usr/bin/python3
user = nobody
workspace = /tmp
tui = -q -i
task = -c {prompt}
`;

before(async () => {
  const preview = await freePort();
  box = await boot({ extra: RUNTIME, edit: (t) => t.replace(/^\[gateway\]\n/m, `[gateway]\npreview_listen = 127.0.0.1:${preview}\n`) });
  sb = await connect({ url: box.url, token: box.token });
});

after(async () => {
  await sb?.close();
  await box?.stop();
});

test("runtime: list, start (tui), its terminal, status, pause/resume, stop", async () => {
  const list = await sb.runtime.list();
  const fake = list.runtimes.find((r) => r.name === "fake");
  assert.equal(fake.state, "available", fake.reason ?? "");
  assert.match(fake.version, /^Python 3/);
  assert.deepEqual(fake.modes, ["tui"]);
  const st = await sb.runtime.start({ name: "fake", mode: "tui" });
  assert.match(st.pty, /^[0-9a-f]{8}$/);
  const t = await sb.pty.attach(st.pty, { fromOffset: 0 });
  await t.input("print(6*7)\n");
  let text = "";
  for await (const c of t.output) {
    text += Buffer.from(c).toString();
    if (text.includes("42")) break;
  }
  assert.equal((await sb.runtime.status("fake")).state, "ready");
  try {
    await sb.runtime.pause("fake");
    assert.equal((await sb.runtime.status("fake")).paused, true);
    await sb.runtime.resume("fake");
  } catch (e) {
    // Without a freezer (no cgroup here) pause is unavailable.
    assert.ok(e instanceof BerthError && e.code === "unavailable", String(e));
  }
  await sb.runtime.stop("fake");
  await assert.rejects(sb.runtime.stop("fake"), (e) => e.code === "conflict");
});

test("task: run, attach (its output whole), show, list; cancel of an ended one is a conflict", async () => {
  const r = await sb.task.run({ runtime: "fake", prompt: "import sys\nfor i in range(1000): print('task-line', i)\n" });
  assert.match(r.id, /^[0-9a-f]{16}$/);
  const out = await sb.task.attach(r.id).text();
  assert.equal(out, Array.from({ length: 1000 }, (_, i) => `task-line ${i}\n`).join(""));
  const rec = await waitFor("the task's end", async () => {
    const s = await sb.task.show(r.id);
    return s.state === "succeeded" || s.state === "failed" ? s : null;
  });
  assert.equal(rec.state, "succeeded", rec.reason ?? "");
  assert.equal(rec.agent.bytes, Buffer.byteLength(out));
  assert.ok((await sb.task.list({ runtime: "fake" })).tasks.some((x) => x.id === r.id));
  await assert.rejects(sb.task.cancel(r.id), (e) => e.code === "conflict");
  const again = await sb.task.attach(r.id, { fromOffset: 500 }).text();
  assert.equal(again, out.slice(500));
});

test("grants: a public preview link reaches an app in the sandbox; list, revoke", async () => {
  const port = await freePort();
  const app = await sb.process.start({ argv: ["python3", "-m", "http.server", "--bind", "127.0.0.1", String(port)], cwd: "/" });
  await waitFor("the app's port", async () => (await sb.ports.list()).ports.some((p) => p.port === port), 10000);
  const pv = new BerthProvider(sb);
  const link = await pv.preview.url(port, { public: true, ttlSeconds: 600 });
  assert.match(link.token, /^[0-9a-f]{40}$/);
  const res = await fetch(link.url);
  assert.equal(res.status, 200);
  assert.match(await res.text(), /Directory listing/);
  const grants = (await sb.grants.list()).grants;
  const g = grants.find((x) => x.scope === `preview:${port}`);
  assert.ok(g, JSON.stringify(grants));
  await sb.grants.revoke(g.id);
  assert.equal((await fetch(link.url)).status, 401);
  await app.signal("KILL");
});
