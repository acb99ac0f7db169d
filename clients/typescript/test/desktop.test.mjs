// The SDK's desktop and recording namespaces against a live berthd of the
// desktop image (Xvnc, XFCE, Chromium, noVNC, berth-desktop), booted once
// for the file. What input does is read back from Chromium over CDP with
// Playwright's client, taken from $BERTH_NODE_MODULES (./dev test sets
// it); without it that part is skipped, and says so.
// Needs `npm run build` first (the tests use dist/).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { inflateSync, crc32 } from "node:zlib";

import { boot, waitFor, sleep } from "./live.mjs";
import { connect } from "../dist/index.js";

// What "ready" means for the desktop image (images/desktop/berth.conf).
const CHECKS = ["cdp", "cdp-relay", "cdp-ws", "novnc", "rfb", "xfce"];
// Under ASan on a busy machine the desktop takes a while to come up.
const READY_TIMEOUT_MS = 90000;
const MODULES = process.env.BERTH_NODE_MODULES || null;

let box;
let sb;
let info;

before(async () => {
  box = await boot({ image: "desktop" });
  sb = await connect({ url: box.url, token: box.token, labels: { image: "desktop" } });
});

after(async () => {
  await sb?.close();
  await box?.stop();
});

/** The first event of stream for which pred holds, within ms. */
async function nextEvent(stream, pred, ms, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
  });
  const find = (async () => {
    for (;;) {
      const { value, done } = await stream.next();
      if (done) throw new Error(`the event stream ended before ${what}`);
      if (pred(value)) return value;
    }
  })();
  try {
    return await Promise.race([find, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** {width, height} of a PNG, checked as it is read: signature, chunk CRCs, IHDR, the inflated size. */
function pngSize(data) {
  const b = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  assert.deepEqual([...b.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], "the PNG signature");
  let pos = 8;
  let ihdr = null;
  const idat = [];
  for (;;) {
    assert.ok(pos + 12 <= b.length, "the PNG ends before IEND");
    const n = b.readUInt32BE(pos);
    const kind = b.toString("latin1", pos + 4, pos + 8);
    assert.equal(b.readUInt32BE(pos + 8 + n), crc32(b.subarray(pos + 4, pos + 8 + n)), `the CRC of chunk ${kind}`);
    const body = b.subarray(pos + 8, pos + 8 + n);
    if (kind === "IHDR") ihdr = { width: body.readUInt32BE(0), height: body.readUInt32BE(4), depth: body[8], colour: body[9], interlace: body[12] };
    else if (kind === "IDAT") idat.push(body);
    else if (kind === "IEND") break;
    pos += 12 + n;
  }
  assert.ok(ihdr !== null, "no IHDR");
  assert.deepEqual([ihdr.depth, ihdr.colour, ihdr.interlace], [8, 2, 0], "bit depth, colour type (RGB), interlace");
  assert.equal(inflateSync(Buffer.concat(idat)).length, ihdr.height * (ihdr.width * 3 + 1), "the inflated size");
  return { width: ihdr.width, height: ihdr.height };
}

/** Chromium's window, from desktop.windows. */
async function chromiumWindow() {
  const { windows } = await sb.desktop.windows();
  return windows.find((w) => w.class === "Chromium");
}

/**
 * Clicks the middle of Chromium's window (its page) and waits until the
 * window manager says it is the active window: what is typed next goes
 * to Chromium, whatever took the focus while the desktop came up.
 */
async function focusChromium() {
  const w = await chromiumWindow();
  assert.ok(w !== undefined, "no Chromium window");
  assert.deepEqual(await sb.desktop.click(w.x + Math.floor(w.width / 2), w.y + Math.floor(w.height / 2)), { done: 1 });
  return waitFor("Chromium's window active", async () => {
    const c = await chromiumWindow();
    return c?.active ? c : null;
  }, 10000, 50).catch(async (e) => {
    throw new Error(`${e.message}: ${JSON.stringify(await sb.desktop.windows())}`);
  });
}

/** Waits until nothing is drawn in region for 300 ms. */
async function settle(region) {
  for (let i = 0; i < 30; i++) {
    if (!(await sb.desktop.waitChange({ region, timeout_ms: 300 })).changed) return;
  }
  throw new Error(`${JSON.stringify(region)} is drawn in without a pause`);
}

/** Types into the omnibox and leaves it as it was: the screen changes, whatever page is shown. */
async function drawSomething(text, delayMs = 0) {
  await sb.desktop.input([
    { type: "key", combo: "ctrl+l" },
    { type: "type", text, delay_ms: delayMs },
    { type: "key", combo: "Escape" },
    { type: "key", combo: "Escape" },
  ]);
}

function ffprobe(path) {
  return new Promise((resolve) => {
    execFile("ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries", "stream=codec_type,codec_name,width,height,nb_read_frames", "-of", "json", path], (err, stdout, stderr) => {
      if (err?.code === "ENOENT") resolve(null);
      else if (err) resolve({ error: `${err.message}: ${stderr}` });
      else resolve(JSON.parse(stdout));
    });
  });
}

test("lifecycle.readiness: every check of the desktop image passes, as /readyz says", async () => {
  let r;
  await waitFor(
    "every desktop check",
    async () => {
      r = await sb.lifecycle.readiness();
      return r.ready;
    },
    READY_TIMEOUT_MS,
    250,
  ).catch((e) => {
    throw new Error(`${e.message}: ${JSON.stringify(r)}`);
  });
  assert.deepEqual(Object.keys(r.checks).sort(), CHECKS);
  assert.deepEqual(r.reasons, []);
  assert.deepEqual(r.failed, []);
  const readyz = await fetch(`http://127.0.0.1:${box.port}/readyz`);
  assert.equal(readyz.status, 200);
  const body = await readyz.json();
  for (const name of CHECKS) {
    const c = r.checks[name];
    assert.equal(c.ok, true, `check ${name}: ${c.reason}`);
    assert.equal(typeof c.reason, "string", `check ${name}'s reason`);
    assert.ok(c.since > 0, `check ${name}'s since`);
    assert.equal(body.checks[name].ok, true, `/readyz's ${name}`);
    assert.equal(body.checks[name].reason, c.reason, `/readyz's reason for ${name}`);
  }
});

test("desktop.info and desktop.screenshot: a PNG of the screen's size", async () => {
  info = await sb.desktop.info();
  assert.equal(info.display, `:${box.display}`);
  assert.deepEqual([info.width, info.height, info.depth], [1280, 800, 24], "the image's geometry (berth.conf)");
  const s = await sb.desktop.screenshot();
  assert.equal(s.format, "png");
  assert.ok(s.data instanceof Uint8Array, "data is bytes");
  assert.deepEqual(pngSize(s.data), { width: info.width, height: info.height }, "the PNG's IHDR");
  assert.deepEqual([s.width, s.height], [info.width, info.height]);
  assert.deepEqual(s.region, { x: 0, y: 0, width: info.width, height: info.height });
  // A region at half scale: the PNG says what the result says.
  const half = await sb.desktop.screenshot({ region: { x: 0, y: 0, width: 640, height: 400 }, scale: 0.5 });
  assert.deepEqual(pngSize(half.data), { width: 320, height: 200 });
  assert.deepEqual([half.width, half.height], [320, 200]);
});

test("desktop.windows: Chromium's window is there, on the screen", async () => {
  const w = await waitFor("Chromium's window", chromiumWindow, 20000, 250);
  assert.match(w.title ?? "", /Chromium/);
  assert.ok(w.width > 0 && w.height > 0, `size ${w.width}x${w.height}`);
  assert.ok(w.x >= 0 && w.y >= 0 && w.x + w.width <= info.width && w.y + w.height <= info.height, `at ${JSON.stringify(w)}`);
  assert.equal(typeof w.id, "number");
});

test("desktop.cursor: where desktop.input moved the pointer", async () => {
  for (const [x, y] of [
    [123, 456],
    [1000, 700],
  ]) {
    assert.deepEqual(await sb.desktop.input([{ type: "move", x, y }]), { done: 1 });
    assert.deepEqual(await sb.desktop.cursor(), { x, y });
  }
});

test("desktop.wait_change: answered with a region once input draws, not before", async (t) => {
  const w = await focusChromium();
  // The tabs and the toolbar, where the omnibox draws what is typed.
  const region = { x: w.x, y: w.y, width: w.width, height: 140 };
  // The middle of the window: a blank page (below the toolbar, above
  // where the dock slides in), where nothing draws, not even the pointer
  // moving over it.
  const blank = { x: w.x, y: w.y + 150, width: w.width, height: Math.min(400, w.height - 300) };
  // Once what the click on the page drew is done.
  await settle(blank);
  const quiet = sb.desktop.waitChange({ region: blank, timeout_ms: 500 });
  await sb.desktop.input([{ type: "move", x: blank.x + 10, y: blank.y + 10 }, { type: "move", x: blank.x + 200, y: blank.y + 100 }]);
  const q = await quiet;
  t.diagnostic(`quiet: ${JSON.stringify(q)}`);
  assert.equal(q.changed, false, JSON.stringify(q));
  assert.ok(q.waited_ms >= 500, `waited ${q.waited_ms} ms`);
  assert.equal(q.area, undefined);

  await settle(region);
  const pending = sb.desktop.waitChange({ region, timeout_ms: 10000 });
  // berth-desktop serves its requests in order: once this is answered the wait is taken.
  await sb.desktop.cursor();
  await drawSomething("berth waits");
  const r = await pending;
  t.diagnostic(`after input: ${JSON.stringify(r)}`);
  assert.equal(r.changed, true, JSON.stringify(r));
  assert.ok(r.waited_ms < 10000, `waited ${r.waited_ms} ms`);
  const a = r.area;
  assert.ok(a !== undefined, "a change has an area");
  assert.ok(a.width >= 1 && a.height >= 1, JSON.stringify(a));
  assert.ok(a.x >= region.x && a.y >= region.y && a.x + a.width <= region.x + region.width && a.y + a.height <= region.y + region.height, `${JSON.stringify(a)} within ${JSON.stringify(region)}`);
});

test("desktop.input: keys and typing reach Chromium: a data: URL typed in its omnibox loads, its window's title says so", async () => {
  const title = `berth typed ${randomBytes(4).toString("hex")}`;
  const c = await focusChromium();
  // Chromium runs ctrl+l once the page has let it pass: keys typed
  // before the omnibox has the focus go to the page. It has it when it
  // draws its text selected, once the toolbar has settled after the click.
  const toolbar = { x: c.x, y: c.y, width: c.width, height: 140 };
  await settle(toolbar);
  const focused = sb.desktop.waitChange({ region: toolbar, timeout_ms: 10000 });
  await sb.desktop.cursor();
  assert.deepEqual(await sb.desktop.input([{ type: "key", combo: "ctrl+l" }]), { done: 1 });
  assert.equal((await focused).changed, true, "the omnibox drew nothing after ctrl+l");
  // The omnibox's inline completion (the selected rest of a URL it
  // guesses) deleted before Return, lest it be taken instead of the text.
  assert.deepEqual(
    await sb.desktop.input([
      { type: "type", text: `data:text/html,<title>${title}</title>` },
      { type: "key", combo: "Delete" },
      { type: "key", combo: "Return" },
    ]),
    { done: 3 },
  );
  const w = await waitFor(`Chromium's window titled ${title}`, async () => {
    const c = await chromiumWindow();
    return c?.title?.startsWith(title) ? c : null;
  }, 20000, 100).catch(async (e) => {
    throw new Error(`${e.message}: ${JSON.stringify(await sb.desktop.windows())}`);
  });
  assert.match(w.title, / - Chromium$/);
});

test("desktop.input: a click and typing reach a page's input box (read back over CDP)", async (t) => {
  if (MODULES === null) {
    t.skip("BERTH_NODE_MODULES is unset: no Playwright client to read the page back with (./dev test sets it)");
    return;
  }
  const { chromium } = createRequire(join(MODULES, "noop.js"))("playwright-core");
  const { endpointURL, headers } = sb.desktop.browser();
  const browser = await chromium.connectOverCDP(endpointURL, { headers, timeout: 20000 });
  const context = browser.contexts()[0];
  assert.ok(context !== undefined, "the desktop's browser has a context");
  // A page of its own (not browser.close() at the end: that may close the desktop's browser).
  const page = await context.newPage();
  try {
    const html =
      "<title>berth input</title><input id=box style='position:fixed;left:0;top:0;width:100vw;height:100vh;font-size:40px;border:0'>" +
      "<script>window.clicks=[];addEventListener('mousedown',e=>clicks.push({x:e.screenX,y:e.screenY,trusted:e.isTrusted}))</script>";
    await page.goto(`data:text/html,${encodeURIComponent(html)}`);
    await page.bringToFront();
    const w = await waitFor("Chromium's window titled berth input", async () => {
      const c = await chromiumWindow();
      return c !== undefined && /berth input/.test(c.title ?? "") ? c : null;
    }, 20000, 100);
    const focused = () => page.evaluate(() => document.activeElement === document.getElementById("box"));
    assert.equal(await focused(), false, "the box has no focus before the click");
    // Well inside the page, below the tabs and the toolbar.
    const x = w.x + Math.floor(w.width / 2);
    const y = w.y + Math.floor(w.height * 0.6);
    assert.deepEqual(await sb.desktop.click(x, y), { done: 1 });
    const clicks = await waitFor("the page's mousedown", async () => {
      const c = await page.evaluate(() => window.clicks);
      return c.length > 0 ? c : null;
    }, 10000, 50);
    assert.deepEqual(clicks, [{ x, y, trusted: true }], "the click, where it was sent, from the X server");
    assert.equal(await focused(), true, "the click focused the box");
    const text = "berth typed this: 42 + é";
    assert.deepEqual(await sb.desktop.type(text), { done: 1 });
    const value = await waitFor("the box's value", async () => {
      const v = await page.evaluate(() => document.getElementById("box").value);
      return v === text ? v : null;
    }, 10000, 50).catch(async (e) => {
      throw new Error(`${e.message}: ${JSON.stringify(await page.evaluate(() => document.getElementById("box").value))}`);
    });
    assert.equal(value, text);
  } finally {
    await page.close();
  }
});

test("record.start, record.status, record.stop: an MP4 artifact read back, the record.* events on sb.events", async (t) => {
  const st = await sb.request("state", {});
  const events = sb.events.follow({ fromSeq: st.last_seq + 1, filter: (e) => e.kind.startsWith("record.") || e.kind === "artifact.published" });
  try {
    const rec = await sb.record.start({ fps: 10 });
    assert.match(rec.id, /^[0-9a-f]{8}$/);
    assert.deepEqual(rec.region, { x: 0, y: 0, width: info.width, height: info.height });
    assert.equal(rec.fps, 10);
    const started = await nextEvent(events, (e) => e.kind === "record.started" && e.data.id === rec.id, 10000, "record.started");
    assert.equal(started.data.started, rec.started);
    await focusChromium();
    await drawSomething("berth records", 30);
    await sleep(500);
    const running = await sb.record.status(rec.id);
    assert.equal(running.recordings.length, 1);
    assert.equal(running.recordings[0].id, rec.id);
    assert.equal(running.recordings[0].state, "recording");
    assert.equal(running.recordings[0].end, null);
    assert.ok((await sb.record.status()).recordings.some((r) => r.id === rec.id), "record.status without an id lists it");

    const stop = await sb.record.stop(rec.id);
    assert.equal(stop.id, rec.id);
    assert.equal(stop.artifact.media_type, "video/mp4");
    assert.equal(stop.artifact.name, `recording-${rec.id}.mp4`);
    assert.ok(stop.frames >= 1, `frames ${stop.frames}`);
    assert.ok(stop.duration_ms >= 500, `duration ${stop.duration_ms} ms`);
    const done = (await sb.record.status(rec.id)).recordings[0];
    assert.equal(done.state, "published");
    assert.equal(done.end, "stop");
    assert.deepEqual(done.artifact, stop.artifact);

    const bytes = await sb.artifacts.read(stop.artifact.id);
    assert.equal(bytes.length, stop.artifact.size);
    assert.equal(createHash("sha256").update(bytes).digest("hex"), stop.artifact.sha256);
    assert.equal(Buffer.from(bytes.subarray(4, 8)).toString("latin1"), "ftyp", "the MP4 starts with an ftyp box");

    const path = join(box.dir, "recording.mp4");
    writeFileSync(path, bytes);
    const probe = await ffprobe(path);
    if (probe === null) {
      t.diagnostic("ffprobe is not on PATH: the MP4 is not decoded");
    } else {
      assert.equal(probe.error, undefined, probe.error);
      const [v] = probe.streams;
      assert.equal(v?.codec_type, "video", JSON.stringify(probe));
      assert.deepEqual([v.width, v.height], [rec.region.width, rec.region.height]);
      assert.equal(Number(v.nb_read_frames), stop.frames, "frames decoded against record.stop's");
    }

    const published = await nextEvent(events, (e) => e.kind === "artifact.published" && e.data.id === stop.artifact.id, 10000, "artifact.published");
    assert.deepEqual(published.data, stop.artifact);
    const rp = await nextEvent(events, (e) => e.kind === "record.published" && e.data.id === rec.id, 10000, "record.published");
    assert.ok(rp.seq > published.seq, "record.published comes after the artifact.published of its reference");
    assert.deepEqual(rp.data.artifact, stop.artifact);
    assert.equal(rp.data.frames, stop.frames);
    assert.equal(rp.data.duration_ms, stop.duration_ms);
  } finally {
    events.close();
  }
});
