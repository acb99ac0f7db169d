// sandbox: the SDK's face: one connection and its namespaces of ops.
import { Connection } from "./connection.js";
import type { ConnectOptions, ConnectionStats, RequestOptions } from "./connection.js";
import { concat } from "./bytes.js";
import { BerthError } from "./errors.js";
import { EventHub } from "./events.js";
import type { EventStream, FollowItem, FollowOptions } from "./events.js";
import { Process, TaskStream, Terminal } from "./process.js";
import type { AttachTerminalOptions, StartOptions } from "./process.js";
import type * as P from "./protocol.js";

/** Largest chunk of a read or an upload (the protocol's 4 MiB). */
const MAX_CHUNK = 4 * 1024 * 1024;
/** Default upload chunk: 1 MiB keeps one request well under the gateway's queue. */
const UPLOAD_CHUNK = 1024 * 1024;
/** Times an upload picks up again from the partial's `pending` after a conflict. */
const UPLOAD_CONFLICT_RETRIES = 3;

const encoder = new TextEncoder();

/** Options of `fs.write`. */
export interface WriteOptions {
  /** Called after each chunk: bytes the partial holds, of `total`. A promise it returns is awaited before the next chunk. */
  onProgress?: (sent: number, total: number) => void | Promise<unknown>;
  /** Bytes per chunk (1 MiB; at most 4 MiB). */
  chunkSize?: number;
  mode?: number;
  user?: string | number;
  group?: string | number;
  parents?: boolean;
  as?: string;
  follow_symlinks?: boolean;
}

/** Options of `fs.read`. */
export interface ReadOptions {
  offset?: number;
  /** Bytes wanted (default: to the end of the file). */
  length?: number;
  as?: string;
  follow_symlinks?: boolean;
}

/** Whether the sandbox is ready, and why not. */
export interface Readiness {
  ready: boolean;
  /** Every check, with its verdict and reason. */
  checks: Record<string, P.CheckInfo>;
  /** `"check NAME: REASON"` for the failing ones. */
  reasons: string[];
  /** Services in state `failed`. */
  failed: string[];
}

function isDisconnect(e: unknown): boolean {
  return e instanceof BerthError && e.code === "disconnected";
}

/**
 * A sandbox, through one berth.v1 connection that reconnects by itself.
 *
 *     const sb = await connect({ url: "ws://127.0.0.1:7100/v1", token });
 *     const p = await sb.process.start({ argv: ["ls", "-l"] });
 *     for await (const chunk of p.stdout) process.stdout.write(chunk);
 *     await sb.close();
 */
export class Sandbox {
  private readonly hub: EventHub;

  private constructor(readonly connection: Connection) {
    this.hub = new EventHub(connection);
  }

  /** Connects (retrying while the sandbox is not up yet) and says hello. */
  static async connect(opts: ConnectOptions): Promise<Sandbox> {
    return new Sandbox(await Connection.open(opts));
  }

  /** Any op, typed by the protocol. */
  request<O extends P.OpName>(op: O, args: P.Args<O>, opts?: RequestOptions): Promise<P.Result<O>> {
    return this.connection.request(op, args, opts);
  }

  /** The connection's figures: reconnects, requests in flight, what consumers have not taken yet. */
  stats(): ConnectionStats {
    return this.connection.stats();
  }

  /** Closes the connection; every request still waiting fails with `closed`. */
  async close(): Promise<void> {
    this.connection.close();
  }

  get bootId(): string {
    return this.connection.hello.boot_id;
  }

  get labels(): Record<string, string> {
    return this.connection.hello.labels;
  }

  readonly process = {
    /** Runs a command; its output is read from its first byte, acknowledged as you take it. */
    start: (args: P.ProcStartArgs, opts?: StartOptions): Promise<Process> => Process.start(this.connection, args, opts),
    /** Attaches to a command started earlier, from offsets (default 0). */
    attach: (id: string, from?: { stdout: number; stderr: number }, opts?: StartOptions): Process => Process.attach(this.connection, id, from, opts),
    list: () => this.request("proc.list", {}),
  };

  readonly fs = {
    stat: (path: string, opts: Omit<P.FsStatArgs, "path"> = {}) => this.request("fs.stat", { ...opts, path }),
    list: (path: string, opts: Omit<P.FsListArgs, "path"> = {}) => this.request("fs.list", { ...opts, path }),
    /** A file's bytes, whole or a range, read in chunks of at most 4 MiB. */
    read: (path: string, opts: ReadOptions = {}) => this.readFile(path, opts),
    /** A file's bytes as UTF-8 text. */
    readText: async (path: string, opts: ReadOptions = {}) => new TextDecoder().decode(await this.readFile(path, opts)),
    /**
     * Uploads a file in chunks; it appears whole when done. Resumes after a
     * dropped connection from what the partial holds (`pending`); after a
     * conflict (another upload of the same path) it asks `pending` again
     * and goes on from there, at most 3 times, then rejects with `conflict`.
     */
    write: (path: string, data: Uint8Array | string, opts: WriteOptions = {}) => this.writeFile(path, typeof data === "string" ? encoder.encode(data) : data, opts),
    mkdir: (path: string, opts: Omit<P.FsMkdirArgs, "path"> = {}) => this.request("fs.mkdir", { ...opts, path }),
    move: (from: string, to: string, opts: Omit<P.FsMoveArgs, "from" | "to"> = {}) => this.request("fs.move", { ...opts, from, to }),
    remove: (path: string, opts: Omit<P.FsRemoveArgs, "path"> = {}) => this.request("fs.remove", { ...opts, path }),
    chmod: (path: string, mode: number, opts: Omit<P.FsChmodArgs, "path" | "mode"> = {}) => this.request("fs.chmod", { ...opts, path, mode }),
    /**
     * Watches a path: the iterator yields its `fs.changed` and
     * `fs.overflow` events (journaled, so none is lost across reconnects).
     * Closing the iterator ends the watch.
     */
    watch: async (path: string, opts: Omit<P.FsWatchArgs, "path"> = {}) => this.watch(path, opts),
    watches: () => this.request("fs.watches", {}),
    unwatch: (id: string) => this.request("fs.unwatch", { id }),
  };

  readonly pty = {
    /** Opens a terminal session and attaches to it from its first byte. */
    open: (args: P.PtyOpenArgs = {}, opts?: Omit<AttachTerminalOptions, "fromOffset">) => Terminal.open(this.connection, args, opts),
    /** Attaches to a session; `fromOffset` resumes where a viewer got to. */
    attach: (id: string, opts?: AttachTerminalOptions) => Terminal.attach(this.connection, id, opts),
    input: (id: string, data: Uint8Array | string) => this.request("pty.input", { id, data: typeof data === "string" ? encoder.encode(data) : data }),
    resize: (id: string, cols: number, rows: number) => this.request("pty.resize", { id, cols, rows }),
    signal: (id: string, signal: P.SignalArg) => this.request("pty.signal", { id, signal }),
    close: (id: string) => this.request("pty.close", { id }),
    list: () => this.request("pty.list", {}),
  };

  readonly desktop = {
    screenshot: (args: P.DesktopScreenshotArgs = {}) => this.request("desktop.screenshot", args),
    input: (actions: P.DesktopAction[]) => this.request("desktop.input", { actions }),
    /** A click at (x, y). */
    click: (x: number, y: number, button?: number | string) => this.request("desktop.input", { actions: [button === undefined ? { type: "click", x, y } : { type: "click", x, y, button }] }),
    /** Types text. */
    type: (text: string) => this.request("desktop.input", { actions: [{ type: "type", text }] }),
    cursor: () => this.request("desktop.cursor", {}),
    info: () => this.request("desktop.info", {}),
    windows: () => this.request("desktop.windows", {}),
    waitChange: (args: P.DesktopWaitChangeArgs = {}) => this.request("desktop.wait_change", args),
    /**
     * Where Playwright (`chromium.connectOverCDP(endpointURL, {headers})`)
     * reaches the sandbox's browser: the gateway's CDP relay `/v1/cdp`,
     * with the token as the bearer.
     */
    browser: (): { endpointURL: string; headers: Record<string, string> } => {
      const u = new URL(this.connection.url);
      u.pathname = "/v1/cdp";
      u.search = "";
      return { endpointURL: u.toString(), headers: { Authorization: `Bearer ${this.connection.token}` } };
    },
  };

  readonly record = {
    start: (args: P.RecordStartArgs = {}) => this.request("record.start", args),
    stop: (id: string) => this.request("record.stop", { id }),
    status: (id?: string) => this.request("record.status", id === undefined ? {} : { id }),
  };

  readonly artifacts = {
    publish: (path: string, opts: Omit<P.ArtifactPublishArgs, "path"> = {}) => this.request("artifact.publish", { ...opts, path }),
    /** An artifact's bytes, whole or a range, in chunks of at most 4 MiB. */
    read: (id: string, opts: { offset?: number; length?: number } = {}) => this.readChunks((offset, length) => this.request("artifact.read", { id, offset, length }), opts.offset ?? 0, opts.length),
    list: () => this.request("artifact.list", {}),
  };

  readonly secrets = {
    set: (values: Record<string, string | Uint8Array>) => this.request("secrets.set", values),
    unset: (names: string[]) => this.request("secrets.unset", { names }),
    list: () => this.request("secrets.list", {}),
  };

  readonly services = {
    list: () => this.request("service.list", {}),
    status: (name: string) => this.request("service.status", { name }),
    start: (name: string) => this.request("service.start", { name }),
    stop: (name: string) => this.request("service.stop", { name }),
    restart: (name: string) => this.request("service.restart", { name }),
    signal: (name: string, signal: P.SignalArg) => this.request("service.signal", { name, signal }),
  };

  readonly runtime = {
    list: () => this.request("runtime.list", {}),
    start: (args: P.RuntimeStartArgs) => this.request("runtime.start", args),
    stop: (name: string) => this.request("runtime.stop", { name }),
    status: (name: string) => this.request("runtime.status", { name }),
    pause: (name: string) => this.request("runtime.pause", { name }),
    resume: (name: string) => this.request("runtime.resume", { name }),
  };

  readonly task = {
    run: (args: P.TaskRunArgs) => this.request("task.run", args),
    show: (id: string) => this.request("task.show", { id }),
    list: (args: P.TaskListArgs = {}) => this.request("task.list", args),
    /** A task's stream (`agent` by default) from an offset, followed to its end, resumed after reconnects. */
    attach: (id: string, opts: { stream?: string; fromOffset?: number } = {}) => new TaskStream(this.connection, id, opts.stream ?? "agent", opts.fromOffset ?? 0).output,
    cancel: (id: string) => this.request("task.cancel", { id }),
    deliver: (args: P.TaskDeliverArgs) => this.request("task.deliver", args),
  };

  readonly grants = {
    create: (args: P.GrantCreateArgs) => this.request("grant.create", args),
    list: () => this.request("grant.list", {}),
    revoke: (id: string) => this.request("grant.revoke", { id }),
  };

  readonly ports = {
    list: () => this.request("port.list", {}),
  };

  readonly events = {
    /**
     * The journal as an async iterator, from `fromSeq` (default: what
     * happens from now on), resumed after every reconnect from the last
     * seq it queued + 1, without duplicates. `events.gap` (the journal no
     * longer held some) and `boot` (the sandbox rebooted: seqs start over)
     * are items of their own. Memory is bounded (`maxBuffered`, 10000
     * events): a consumer that falls behind leaves the rest in the
     * journal until it catches up.
     */
    follow: (opts?: FollowOptions): EventStream => this.hub.follow(opts),
  };

  readonly lifecycle = {
    /** berthd's liveness: a ping's round trip. */
    health: async (): Promise<{ ok: boolean; boot_id: string; rtt_ms: number }> => {
      const t0 = Date.now();
      const r = await this.request("ping", {});
      return { ok: true, boot_id: r.boot_id, rtt_ms: Date.now() - t0 };
    },
    /** Whether every readiness check passes, with each check's reason (from `state`). */
    readiness: async (): Promise<Readiness> => {
      const s = await this.request("state", {});
      const reasons = Object.entries(s.checks)
        .filter(([, c]) => !c.ok)
        .map(([name, c]) => `check ${name}: ${c.reason}`);
      const failed = s.services.filter((x) => x.state === "failed").map((x) => x.name);
      return { ready: reasons.length === 0, checks: s.checks, reasons, failed };
    },
    labels: (): Record<string, string> => this.labels,
    bootId: (): string => this.bootId,
    /**
     * What this sandbox has (hello's `features`: a desktop, recording,
     * runtimes, previews), and the ops it serves (`capabilities`).
     */
    features: (): P.Features | undefined => this.connection.hello.features,
    capabilities: (): readonly string[] => this.connection.hello.capabilities,
  };

  // -- the pieces behind the namespaces

  private async readChunks(read: (offset: number, length: number) => Promise<{ data: Uint8Array; eof: boolean }>, offset: number, length?: number): Promise<Uint8Array> {
    const parts: Uint8Array[] = [];
    let at = offset;
    let left = length ?? Infinity;
    while (left > 0) {
      const r = await read(at, Math.min(MAX_CHUNK, left));
      parts.push(r.data);
      at += r.data.length;
      left -= r.data.length;
      if (r.eof || r.data.length === 0) break;
    }
    return concat(parts);
  }

  private readFile(path: string, opts: ReadOptions): Promise<Uint8Array> {
    const extra: { as?: string; follow_symlinks?: boolean } = {};
    if (opts.as !== undefined) extra.as = opts.as;
    if (opts.follow_symlinks !== undefined) extra.follow_symlinks = opts.follow_symlinks;
    return this.readChunks((offset, length) => this.request("fs.read", { ...extra, path, offset, length }), opts.offset ?? 0, opts.length);
  }

  /** What the partial upload of path holds (0: none). */
  private async pending(path: string, common: object): Promise<number> {
    for (;;) {
      try {
        const r = await this.request("fs.write", { ...common, path });
        return r.pending ?? 0;
      } catch (e) {
        if (!isDisconnect(e)) throw e;
      }
    }
  }

  private async writeFile(path: string, data: Uint8Array, opts: WriteOptions): Promise<P.FsWriteResult> {
    const chunk = Math.max(1, Math.min(opts.chunkSize ?? UPLOAD_CHUNK, MAX_CHUNK));
    const common: { as?: string; follow_symlinks?: boolean; parents?: boolean } = {};
    if (opts.as !== undefined) common.as = opts.as;
    if (opts.follow_symlinks !== undefined) common.follow_symlinks = opts.follow_symlinks;
    if (opts.parents !== undefined) common.parents = opts.parents;
    const finish: { mode?: number; user?: string | number; group?: string | number } = {};
    if (opts.mode !== undefined) finish.mode = opts.mode;
    if (opts.user !== undefined) finish.user = opts.user;
    if (opts.group !== undefined) finish.group = opts.group;
    let offset = 0;
    let started = false;
    let conflicts = 0;
    const total = data.length;
    while (!started || offset < total) {
      const piece = data.subarray(offset, Math.min(total, offset + chunk));
      const last = offset + piece.length >= total;
      try {
        const r = await this.request("fs.write", last ? { ...common, ...finish, path, offset, data: piece, done: true } : { ...common, path, offset, data: piece });
        started = true;
        offset += piece.length;
        await opts.onProgress?.(offset, total);
        if (last) return r;
      } catch (e) {
        if (!(e instanceof BerthError)) throw e;
        if (e.code === "conflict" && started && conflicts < UPLOAD_CONFLICT_RETRIES) {
          conflicts++;
        } else if (!isDisconnect(e)) {
          throw e;
        }
        // The answer was lost, or another writer touched the partial: go on from what it holds.
        const pending = await this.pending(path, common);
        if (pending === 0 && last && started) {
          // The commit's answer was lost: the file is in place if it has our size.
          const st = await this.request("fs.stat", { ...common, path }).catch(() => null);
          if (st !== null && st.size === total) return { path, size: total };
        }
        if (pending > total) throw new BerthError("conflict", `${path}: the partial upload holds ${pending} bytes, more than the ${total} being written`, { path });
        if (pending === 0) started = false;
        offset = pending;
      }
    }
    return { path, size: total };
  }

  private async watch(path: string, opts: Omit<P.FsWatchArgs, "path">): Promise<EventStream & { id: string }> {
    const st = await this.request("state", {});
    const w = await this.request("fs.watch", { ...opts, path });
    const stream = this.hub.follow({
      fromSeq: st.last_seq + 1,
      // The watch's changes, and what says some may be missing (a gap, a reboot).
      filter: (ev: FollowItem) => (ev.kind === "fs.changed" || ev.kind === "fs.overflow" ? ev.data.watch === w.id : ev.kind === "events.gap" || ev.kind === "boot"),
    });
    const close = stream.close;
    const end = () => {
      close();
      this.request("fs.unwatch", { id: w.id }).catch(() => {});
    };
    return Object.assign(stream, {
      id: w.id,
      close: end,
      return: async () => {
        end();
        return { done: true as const, value: undefined };
      },
    });
  }
}

/** Connects to a sandbox: see {@link Sandbox.connect}. */
export function connect(opts: ConnectOptions): Promise<Sandbox> {
  return Sandbox.connect(opts);
}
