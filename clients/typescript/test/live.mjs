// A live berthd for the tests: PID 1 of a new PID namespace (with its
// gateway), in a temporary state directory, on a free port; as the
// integration harness (tests/integration/harness/sandbox.py) runs it.
import { spawn } from "node:child_process";
import { mkdtempSync, chmodSync, writeFileSync, readFileSync, readdirSync, readlinkSync, rmSync, existsSync, accessSync, constants } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, basename } from "node:path";
import { randomBytes } from "node:crypto";

const BUILDDIR = process.env.BERTH_BUILDDIR ?? process.cwd();
const SRCDIR = process.env.BERTH_SRCDIR ?? join(import.meta.dirname, "..", "..", "..");
export const BERTHD = join(BUILDDIR, "berthd");
export const GATEWAY = join(BUILDDIR, "berth-gateway");
export const MINIMAL_CONF = join(SRCDIR, "images", "minimal", "berth.conf");
export const DESKTOP_CONF = join(SRCDIR, "images", "desktop", "berth.conf");
// Sanitizer builds start slowly on a busy machine: this bounds a failure.
const START_TIMEOUT_MS = 15000;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.unref();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function children(pid) {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

function argv0(pid) {
  try {
    return basename(readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0]);
  } catch {
    return "";
  }
}

const X11_DIR = "/tmp/.X11-unix";

// Whether X display n is free: no socket file, no lock file, and its
// abstract socket name can be bound.
function displayFree(n) {
  if (existsSync(`${X11_DIR}/X${n}`) || existsSync(`/tmp/.X${n}-lock`)) return Promise.resolve(false);
  return new Promise((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen(`\0${X11_DIR}/X${n}`, () => s.close(() => resolve(true)));
  });
}

async function freeDisplay() {
  for (let i = 0; i < 200; i++) {
    const n = 150 + Math.floor(Math.random() * 750);
    if (await displayFree(n)) return n;
  }
  throw new Error("no free X display number");
}

/** What an X server killed with its namespace leaves behind. */
function forgetDisplay(n) {
  for (const p of [`${X11_DIR}/X${n}`, `/tmp/.X${n}-lock`]) rmSync(p, { force: true });
}

/**
 * The desktop image's config (as the integration harness's shipped
 * desktop runs it): its state under the sandbox's directory, a free
 * display and free DevTools ports. Fails if the config no longer has
 * what is replaced.
 */
async function desktopConfig() {
  const display = await freeDisplay();
  const cdp = await freePort();
  const relay = await freePort();
  let text = readFileSync(DESKTOP_CONF, "utf8");
  const subs = [
    ["/var/lib/berth/", "@STATE_DIR@/"],
    ["127.0.0.1:9222", `127.0.0.1:${cdp}`],
    ["BERTH_CDP_PORT=9222", `BERTH_CDP_PORT=${cdp}`],
    ["127.0.0.1:9223", `127.0.0.1:${relay}`],
    ["berth-xserver :1 ", `berth-xserver :${display} `],
    ["--display :1", `--display :${display}`],
    ["DISPLAY=:1", `DISPLAY=:${display}`],
  ];
  for (const [from, to] of subs) {
    if (!text.includes(from)) throw new Error(`the desktop config no longer has ${JSON.stringify(from)}`);
    text = text.replaceAll(from, to);
  }
  return { text, display, cdp, relay };
}

async function waitFor(what, fn, timeoutMs = START_TIMEOUT_MS, everyMs = 20) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

/**
 * Boots a berthd. opts.image: "minimal" (default) or "desktop" (the
 * desktop image on a free display and free DevTools ports, run by the
 * programs beside berthd); opts.extra: config text appended to the
 * image's; opts.edit: a function of the config's text, to change it.
 * Returns {url, token, port, dir, stateDir, display (desktop only),
 * stop(), restart({freshState}), killGateway(), berthdPid(),
 * gatewayPid(), log()}. stop() fails if the log holds a sanitizer's
 * report.
 */
export async function boot(opts = {}) {
  for (const p of [BERTHD, GATEWAY]) accessSync(p, constants.X_OK);
  const dir = mkdtempSync(join(tmpdir(), "berth-sdk-"));
  // Searchable, as the state directory's parent is in an install: the
  // gateway and the probes run as a user of their own.
  chmodSync(dir, 0o711);
  const tokenFile = join(dir, "token");
  const logPath = join(dir, "berthd.log");
  const configPath = join(dir, "berth.conf");
  let stateDir = join(dir, "state");
  const desktop = opts.image === "desktop" ? await desktopConfig() : null;
  if (opts.image !== undefined && opts.image !== "minimal" && desktop === null) throw new Error(`no image ${opts.image}`);
  let text = desktop?.text ?? readFileSync(MINIMAL_CONF, "utf8");
  if (opts.extra) text = text.replace(/\n*$/, "\n\n") + opts.extra;
  if (opts.edit) text = opts.edit(text);
  writeFileSync(configPath, text.replaceAll("@STATE_DIR@", stateDir));
  const token = randomBytes(32).toString("hex");
  writeFileSync(tokenFile, token, { mode: 0o600 });
  const port = opts.port ?? (await freePort());
  let child = null;
  let exited = null;

  const start = async () => {
    const argv = ["-p", "-f", "--mount-proc", BERTHD, "--config", configPath, "--listen", `127.0.0.1:${port}`, "--token-file", tokenFile, "--state-dir", stateDir];
    writeFileSync(logPath, `=== unshare ${argv.join(" ")}\n`, { flag: "a" });
    const { openSync, closeSync } = await import("node:fs");
    const fd = openSync(logPath, "a");
    child = spawn("unshare", argv, { stdio: ["ignore", fd, fd], detached: true });
    closeSync(fd);
    exited = new Promise((r) => child.once("exit", (code, sig) => r({ code, sig })));
    let dead = false;
    exited.then(() => (dead = true));
    await waitFor(`/healthz 200 on port ${port}`, async () => {
      if (dead) throw new Error(`berthd exited while starting:\n${readFileSync(logPath, "utf8").slice(-4000)}`);
      try {
        const r = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2000) });
        return r.status === 200;
      } catch {
        return false;
      }
    });
  };

  const berthdPid = () => children(child.pid).find((p) => argv0(p) === "berthd");

  const gatewayPid = (otherThan) => {
    const b = berthdPid();
    return b === undefined ? undefined : children(b).find((p) => argv0(p) === "berth-gateway" && p !== otherThan);
  };

  const kill = async () => {
    for (const pid of children(child.pid)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {}
    }
    await Promise.race([exited, sleep(5000)]);
  };

  const halt = async () => {
    if (child === null || child.exitCode !== null || child.signalCode !== null) return;
    const pid = berthdPid();
    if (pid !== undefined) {
      try {
        process.kill(pid, "SIGTERM");
      } catch {}
    }
    const r = await Promise.race([exited, sleep(10000).then(() => null)]);
    if (r === null) await kill();
  };

  const sanitizerReport = () => {
    const log = readFileSync(logPath, "utf8");
    return /AddressSanitizer|runtime error:|LeakSanitizer/.test(log) ? log : null;
  };

  await start();
  return {
    url: `ws://127.0.0.1:${port}/v1`,
    token,
    port,
    dir,
    display: desktop?.display,
    get stateDir() {
      return stateDir;
    },
    berthdPid,
    gatewayPid,
    log: () => readFileSync(logPath, "utf8"),
    /** Kills berthd's gateway (berthd restarts it): every WebSocket drops. */
    killGateway: () => {
      const g = gatewayPid();
      if (g !== undefined) process.kill(g, "SIGKILL");
      return g;
    },
    /** Stops berthd and starts it again on the same port; freshState: a new state directory (a new boot). */
    restart: async ({ freshState = false } = {}) => {
      await halt();
      if (freshState) {
        stateDir = join(dir, `state-${randomBytes(4).toString("hex")}`);
        writeFileSync(configPath, text.replaceAll("@STATE_DIR@", stateDir));
      }
      await start();
    },
    stop: async () => {
      await halt();
      const report = sanitizerReport();
      const log = readFileSync(logPath, "utf8");
      rmSync(dir, { recursive: true, force: true });
      if (desktop !== null) forgetDisplay(desktop.display);
      if (report !== null) throw new Error(`berthd's log holds a sanitizer report:\n${log.slice(-8000)}`);
    },
  };
}

export { sleep, waitFor };
