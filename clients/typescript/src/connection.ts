// connection: one berth.v1 WebSocket that reconnects by itself. Owns the
// socket, the request ids, the requests queued and in flight, and the
// listeners of what the server sends unasked (events, data).
import { Decoder, Encoder } from "@msgpack/msgpack";
import NodeWebSocket from "ws";

import { BerthError } from "./errors.js";
import { PROTOCOL_VERSION } from "./protocol.js";
import type { Args, HelloResult, OpName, Result } from "./protocol.js";

/** The part of a WebSocket the SDK uses: the browser's and `ws` both have it. */
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  readonly protocol: string;
  send(data: Uint8Array): void;
  close(code?: number, reason?: string): void;
  onopen: ((ev: unknown) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
}

/**
 * A WebSocket constructor. The SDK calls it as
 * `new WebSocket(url, "berth.v1", {headers: {Authorization: "Bearer ..."}})`:
 * `ws` and compatible constructors send the header; a browser's own
 * WebSocket cannot send headers, so it needs a proxy in front of berth
 * that adds it.
 */
export type WebSocketConstructor = new (url: string, protocols: string | string[], options?: { headers?: Record<string, string> }) => WebSocketLike;

/** Where a connection is. */
export type ConnectionState = "connecting" | "open" | "reconnecting" | "closed";

/** What `onStateChange` is told at each change. */
export interface StateChange {
  state: ConnectionState;
  /** Reconnects so far (successful hellos after the first). */
  reconnects: number;
  /** Why the last connection ended, for `reconnecting` and `closed`. */
  reason?: string;
  /** The WebSocket close code, when there was one. */
  closeCode?: number;
  /** The delay before the next attempt, for `reconnecting`. */
  delayMs?: number;
}

export interface ConnectOptions {
  /** `ws://HOST:PORT/v1`. */
  url: string;
  /** The sandbox's token (or a grant's). */
  token: string;
  /** Labels the sandbox must have (hello's `labels`): else `label_mismatch`. */
  labels?: Record<string, string>;
  /** The WebSocket constructor; default `ws` (Node). */
  WebSocket?: WebSocketConstructor;
  /** hello's `client`: the backend's name and version. */
  client?: string;
  /** First reconnect delay's cap (ms, 100); it doubles up to `backoffMaxMs`. */
  backoffInitialMs?: number;
  /** Largest reconnect delay's cap (ms, 10000). Each delay is uniform in [0, cap]. */
  backoffMaxMs?: number;
  /** A ping is sent after this much silence (ms, 15000); 0: never. */
  keepaliveMs?: number;
  /** A connection whose ping is not answered within this is dropped (ms, 10000). */
  keepaliveTimeoutMs?: number;
  /**
   * The first connection must be made within this (ms), else `connect`
   * rejects with `timeout` and gives up. Default: no limit (a sandbox
   * may still be booting). Later reconnects go on until `close()`.
   */
  connectTimeoutMs?: number;
  /** Called at every change of state: connecting, open, reconnecting, closed. */
  onStateChange?: (change: StateChange) => void;
}

/** How one request is sent. */
export interface RequestOptions {
  /** Reject with `timeout` if no answer came within this (ms). */
  timeoutMs?: number;
  /**
   * The request belongs to this connection (an attach, an ack, a
   * subscribe): it is never sent on another, and fails `disconnected` if
   * the connection drops first.
   */
  connectionBound?: boolean;
  /** Resend after a reconnect even if the op is not known as safe to repeat. */
  resend?: boolean;
  /**
   * Calls the request off: it rejects with `cancelled` at once, and a
   * request still in flight is cancelled on berth's side too
   * (`request.cancel`), so that a waiting op stops holding a slot of the
   * in-flight budget. Nothing it already did is undone.
   */
  signal?: AbortSignal;
  /**
   * Called with the result as the response is read, before any message
   * that follows it: what follows a subscribe or an attach is then seen
   * knowing its answer.
   */
  onResult?: (result: unknown, resent: boolean) => void;
}

/** A boot change seen on a reconnect: the sandbox rebooted; nothing of the old boot can be resumed. */
export interface BootChange {
  previous: string;
  boot_id: string;
}

/** A `data` message of an output stream. */
export interface DataMessage {
  stream: string;
  offset: number;
  data: Uint8Array;
  eof: boolean;
}

/** A raw `event` message. */
export interface EventMessage {
  seq: number;
  ts: number;
  kind: string;
  data: unknown;
}

/** What the parts of the SDK above the connection report into `stats()`. */
export interface BufferReporter {
  bytes(): number;
  events(): number;
}

/** Figures for tests and dashboards. */
export interface ConnectionStats {
  state: ConnectionState;
  reconnects: number;
  bootId: string;
  inFlight: number;
  queued: number;
  maxInFlight: number;
  /** Output bytes held for consumers that have not taken them yet. */
  bytesBuffered: number;
  /** Events held for consumers that have not taken them yet. */
  eventsBuffered: number;
  requestsSent: number;
  requestsResent: number;
}

export interface ConnectionListeners {
  event: (ev: EventMessage) => void;
  data: (d: DataMessage) => void;
  /** A new connection finished its hello (not the first one). */
  reconnect: (hello: HelloResult, boot: BootChange | null) => void;
  /** The connection dropped (a reconnect follows unless closed). */
  drop: (reason: string) => void;
  boot: (b: BootChange) => void;
  close: (err: BerthError) => void;
}

interface Pending {
  op: string;
  args: unknown;
  resolve: (v: unknown) => void;
  reject: (e: BerthError) => void;
  resend: boolean;
  onResult?: (result: unknown, resent: boolean) => void;
  /** Sent again on a later connection after the first was lost. */
  resent?: boolean;
  /** Its id on the connection it was last sent on. */
  id?: number;
  /** Sent with an idempotency key (`args.key`). */
  keyed?: boolean;
  /** The connection generation this request is bound to, if bound. */
  epoch?: number;
  timer?: ReturnType<typeof setTimeout>;
  done: boolean;
}

/**
 * Ops that read and change nothing (or set the same state again): a
 * request whose answer was lost is sent again after a reconnect.
 */
const SAFE_TO_REPEAT: ReadonlySet<string> = new Set([
  "hello", "ping", "state", "service.list", "service.status", "pty.list", "proc.list", "proc.wait",
  "fs.stat", "fs.list", "fs.read", "fs.watches", "secrets.list", "secrets.set", "secrets.unset",
  "artifact.read", "artifact.list", "runtime.list", "runtime.status", "limits.status", "task.show",
  "task.list", "grant.list", "port.list", "desktop.screenshot", "desktop.cursor", "desktop.info",
  "desktop.windows", "record.status",
]);

/**
 * Ops that create things. Each is sent with an idempotency key (the
 * caller's `key`, or a fresh one), so that after a drop it is sent again
 * with the same key and berth answers the first result instead of
 * creating a second thing; where berth does not say it keeps keys
 * (`hello`'s `features.idempotency_keys`), it fails `disconnected` instead.
 * `secrets.set` is not among them: its args are the secrets themselves,
 * and setting the same values again makes nothing new, so it is resent
 * as a repeatable op.
 */
const KEYED: ReadonlySet<string> = new Set([
  "proc.start", "pty.open", "artifact.publish", "record.start", "task.run", "grant.create",
]);

/** A fresh idempotency key: 32 hex digits, random. */
function freshKey(): string {
  return globalThis.crypto.randomUUID().replace(/-/g, "");
}

/** args with an idempotency key: the caller's, or a fresh one. */
function withKey(args: unknown): Record<string, unknown> {
  const a = { ...((args ?? {}) as Record<string, unknown>) };
  if (typeof a.key !== "string") a.key = freshKey();
  return a;
}

/**
 * One encoder and one decoder for every message: msgpack's encode() and
 * decode() make a new one (and a new 2 KiB buffer) per call, which
 * costs a ping round trip more than the rest of the SDK does. Both are
 * used synchronously, and encode() returns a copy, never the shared
 * buffer, since ws may hold a message it has not written yet. The
 * encoder keeps the largest buffer it grew to: at most max_message.
 */
const encoder = new Encoder({ ignoreUndefined: true });
const decoder = new Decoder();

const DEFAULT_MAX_IN_FLIGHT = 256;
const CLOSE_SLOW_CONSUMER = 4008;
/** WebSocket readyState OPEN. */
const OPEN = 1;

/** Whether a request whose answer was lost may be sent again. */
export function safeToRepeat(op: string, args: unknown): boolean {
  if (SAFE_TO_REPEAT.has(op)) return true;
  const a = (args ?? {}) as Record<string, unknown>;
  // proc.input with offset is taken once, however often it is sent.
  return op === "proc.input" && typeof a.offset === "number";
}

function toBytes(data: unknown): Uint8Array | null {
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (Array.isArray(data) && data.every((d) => d instanceof Uint8Array)) {
    const n = data.reduce((s: number, d: Uint8Array) => s + d.length, 0);
    const out = new Uint8Array(n);
    let at = 0;
    for (const d of data as Uint8Array[]) {
      out.set(d, at);
      at += d.length;
    }
    return out;
  }
  return null;
}

/**
 * One berth.v1 connection, kept open: it reconnects with capped
 * exponential backoff and full jitter until `close()`.
 *
 * Requests are queued and at most `limits.max_in_flight` (hello; 256 if
 * absent) are in flight. When the connection drops, a request in flight
 * whose op is safe to repeat (reads, `proc.input` with its offset, and
 * the ops that create things, sent with an idempotency key) is sent again
 * on the next connection; any other fails with `disconnected` (retryable:
 * it may or may not have been done). A keyed request is not sent again to
 * a new boot: it fails with `boot`, since what it made went with the old
 * one. A request that times out or is aborted is cancelled on berth's
 * side (`request.cancel`) when berth has that op.
 */
export class Connection {
  readonly url: string;
  private readonly opts: ConnectOptions;
  private readonly Ctor: WebSocketConstructor;
  private ws: WebSocketLike | null = null;
  private _state: ConnectionState = "connecting";
  private nextId = 1;
  private readonly inflight = new Map<number, Pending>();
  private queue: Pending[] = [];
  private _hello: HelloResult | null = null;
  private bootId = "";
  private epoch = 0;
  private attempt = 0;
  private reconnects = 0;
  private sent = 0;
  private resent = 0;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private keepTimer: ReturnType<typeof setInterval> | null = null;
  private lastHeard = 0;
  private pinging = false;
  private closedErr: BerthError | null = null;
  private readonly listeners: { [K in keyof ConnectionListeners]: Set<ConnectionListeners[K]> } = {
    event: new Set(),
    data: new Set(),
    reconnect: new Set(),
    drop: new Set(),
    boot: new Set(),
    close: new Set(),
  };
  private readonly reporters = new Set<BufferReporter>();
  private firstOpen: { resolve: () => void; reject: (e: BerthError) => void } | null = null;

  private constructor(opts: ConnectOptions) {
    this.opts = opts;
    this.url = opts.url;
    this.Ctor = opts.WebSocket ?? (NodeWebSocket as unknown as WebSocketConstructor);
  }

  /**
   * Connects and says hello; resolves once the first hello was answered.
   * Attempts are retried with backoff (a sandbox may still be booting)
   * until `close()`; a wrong token (HTTP 401) or a label mismatch rejects.
   */
  static open(opts: ConnectOptions): Promise<Connection> {
    const c = new Connection(opts);
    return new Promise((resolve, reject) => {
      c.firstOpen = { resolve: () => resolve(c), reject };
      c.setState({ state: "connecting", reconnects: 0 });
      if (opts.connectTimeoutMs !== undefined) {
        const ms = opts.connectTimeoutMs;
        setTimeout(() => {
          if (c.firstOpen !== null) c.shutdown(new BerthError("timeout", `${opts.url}: no connection within ${ms} ms`, { retryable: true }));
        }, ms);
      }
      c.dial();
    });
  }

  /** hello's answer on the current (or last) connection. */
  get hello(): HelloResult {
    if (this._hello === null) throw new BerthError("closed", "no hello yet");
    return this._hello;
  }

  /** The credential the connection presents. */
  get token(): string {
    return this.opts.token;
  }

  get state(): ConnectionState {
    return this._state;
  }

  /** The generation of the current connection: it grows at every reconnect. */
  get generation(): number {
    return this.epoch;
  }

  get maxInFlight(): number {
    return this._hello?.limits?.max_in_flight ?? DEFAULT_MAX_IN_FLIGHT;
  }

  on<K extends keyof ConnectionListeners>(what: K, fn: ConnectionListeners[K]): () => void {
    this.listeners[what].add(fn);
    return () => this.listeners[what].delete(fn);
  }

  /** Counts a consumer's buffers into `stats()`; returns its removal. */
  report(r: BufferReporter): () => void {
    this.reporters.add(r);
    return () => this.reporters.delete(r);
  }

  stats(): ConnectionStats {
    let bytes = 0;
    let events = 0;
    for (const r of this.reporters) {
      bytes += r.bytes();
      events += r.events();
    }
    return {
      state: this._state,
      reconnects: this.reconnects,
      bootId: this.bootId,
      inFlight: this.inflight.size,
      queued: this.queue.length,
      maxInFlight: this.maxInFlight,
      bytesBuffered: bytes,
      eventsBuffered: events,
      requestsSent: this.sent,
      requestsResent: this.resent,
    };
  }

  /** Sends a request and resolves with its result (rejects with a BerthError). */
  request<O extends OpName>(op: O, args: Args<O>, ro: RequestOptions = {}): Promise<Result<O>> {
    if (this.closedErr !== null) return Promise.reject(this.closedErr);
    if (ro.signal?.aborted) return Promise.reject(new BerthError("cancelled", `${op}: aborted before it was sent`, { op }));
    return new Promise<Result<O>>((resolve, reject) => {
      const keyed = KEYED.has(op);
      const p: Pending = {
        op,
        args: keyed ? withKey(args) : args,
        resolve: resolve as (v: unknown) => void,
        reject,
        resend: ro.resend ?? safeToRepeat(op, args),
        done: false,
      };
      if (keyed) p.keyed = true;
      if (ro.onResult !== undefined) p.onResult = ro.onResult;
      if (ro.connectionBound) {
        if (this._state !== "open") {
          reject(new BerthError("disconnected", `${op}: not connected`, { op }));
          return;
        }
        p.epoch = this.epoch;
      }
      if (ro.timeoutMs !== undefined) {
        p.timer = setTimeout(() => this.timedOut(p, ro.timeoutMs as number), ro.timeoutMs);
      }
      ro.signal?.addEventListener("abort", () => this.callOff(p, new BerthError("cancelled", `${op}: aborted`, { op, retryable: false })), { once: true });
      this.queue.push(p);
      this.pump();
    });
  }

  /** A request that took too long fails with `timeout`, and is called off. */
  private timedOut(p: Pending, ms: number): void {
    this.callOff(p, new BerthError("timeout", `${p.op}: no answer within ${ms} ms`, { op: p.op }));
  }

  /**
   * Fails p with err and, if it is in flight on the open connection, asks
   * berth to cancel it: its slot of the in-flight budget is freed when the
   * `cancelled` answer comes. Without `request.cancel` (an older berth)
   * the slot is held until the answer comes.
   */
  private callOff(p: Pending, err: BerthError): void {
    if (p.done) return;
    this.settle(p, err);
    const id = p.id;
    if (id === undefined || this.inflight.get(id) !== p || this._state !== "open") return;
    if (!(this._hello?.capabilities ?? []).includes("request.cancel")) return;
    this.request("request.cancel", { id }, { connectionBound: true }).catch(() => {
      /* the answer came first, or the connection dropped: nothing to call off */
    });
  }

  /** Closes for good: every request still waiting fails with `closed`. */
  close(): void {
    this.shutdown(new BerthError("closed", "the connection was closed", { retryable: false }));
  }

  // -- the socket

  private setState(change: StateChange): void {
    this._state = change.state;
    try {
      this.opts.onStateChange?.(change);
    } catch {
      // A listener's bug must not break the connection.
    }
  }

  private dial(): void {
    if (this.closedErr !== null) return;
    const headers = { Authorization: `Bearer ${this.opts.token}` };
    let ws: WebSocketLike;
    try {
      ws = new this.Ctor(this.url, "berth.v1", { headers });
    } catch (e) {
      this.shutdown(new BerthError("bad_args", `cannot open ${this.url}: ${(e as Error).message}`, { retryable: false }));
      return;
    }
    ws.binaryType = "arraybuffer";
    this.ws = ws;
    let unauthorized = false;
    const nws = ws as unknown as { on?: (ev: string, fn: (...a: unknown[]) => void) => void };
    // ws tells the HTTP status of a refused upgrade; a browser does not.
    nws.on?.("unexpected-response", (_req: unknown, res: unknown) => {
      const status = (res as { statusCode?: number }).statusCode;
      if (status === 401) unauthorized = true;
      ws.close();
    });
    ws.onopen = () => this.sayHello(ws);
    ws.onmessage = (ev) => this.receive(ws, ev.data);
    ws.onerror = () => {
      /* onclose follows and decides */
    };
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      if (unauthorized) {
        this.shutdown(new BerthError("unauthorized", `${this.url}: the token was refused (HTTP 401)`, { retryable: false }));
        return;
      }
      const reason = ev.code === CLOSE_SLOW_CONSUMER ? `slow consumer (4008): ${ev.reason}` : `closed ${ev.code}${ev.reason ? `: ${ev.reason}` : ""}`;
      this.dropped(reason, ev.code);
    };
  }

  private sayHello(ws: WebSocketLike): void {
    const args: Record<string, unknown> = { version: PROTOCOL_VERSION };
    if (this.opts.client !== undefined) args.client = this.opts.client;
    const hello: Pending = {
      op: "hello",
      args,
      resend: false,
      done: false,
      resolve: (r) => this.helloed(ws, r as HelloResult),
      reject: (e) => {
        if (e.code === "disconnected") return;
        this.shutdown(e);
      },
    };
    this.transmit(ws, hello);
  }

  private helloed(ws: WebSocketLike, h: HelloResult): void {
    if (this.ws !== ws) return;
    const want = this.opts.labels ?? {};
    for (const [k, v] of Object.entries(want)) {
      if (h.labels?.[k] !== v) {
        this.shutdown(new BerthError("label_mismatch", `label ${k} is ${JSON.stringify(h.labels?.[k] ?? null)}, not ${JSON.stringify(v)}`, { retryable: false }));
        return;
      }
    }
    const first = this._hello === null;
    const previous = this.bootId;
    this._hello = h;
    this.bootId = h.boot_id;
    this.attempt = 0;
    this.lastHeard = Date.now();
    this.startKeepalive(ws);
    if (!first) this.reconnects++;
    this.setState({ state: "open", reconnects: this.reconnects });
    if (first) {
      this.firstOpen?.resolve();
      this.firstOpen = null;
    } else {
      const boot = previous !== h.boot_id ? { previous, boot_id: h.boot_id } : null;
      if (boot !== null) this.failKeyedResends(boot);
      if (boot !== null) for (const fn of this.listeners.boot) fn(boot);
      for (const fn of this.listeners.reconnect) fn(h, boot);
    }
    this.pump();
  }

  /**
   * Notices a dead peer: after `keepaliveMs` of silence it pings, and a
   * connection silent for `keepaliveTimeoutMs` more is dropped. Where the
   * WebSocket can (ws), the ping is a WebSocket ping, which no request
   * queue or in-flight budget can hold up; elsewhere it is a `ping`
   * request, sent only while the budget has room (a full budget of
   * waiting requests is not silence of the peer's making).
   */
  private startKeepalive(ws: WebSocketLike): void {
    this.stopKeepalive();
    const every = this.opts.keepaliveMs ?? 15000;
    if (every <= 0) return;
    const timeout = this.opts.keepaliveTimeoutMs ?? 10000;
    const nws = ws as unknown as { ping?: () => void; on?: (ev: string, fn: () => void) => void };
    const native = typeof nws.ping === "function" && typeof nws.on === "function";
    if (native) nws.on?.("pong", () => (this.lastHeard = Date.now()));
    let pingedAt = 0;
    this.keepTimer = setInterval(() => {
      if (this.ws !== ws) return;
      const now = Date.now();
      // Anything heard since the ping answers it.
      if (pingedAt !== 0 && this.lastHeard >= pingedAt) pingedAt = 0;
      if (now - this.lastHeard < every) return;
      if (pingedAt !== 0) {
        if (now - pingedAt >= timeout) this.abandon(ws, `keepalive: nothing heard for ${now - this.lastHeard} ms`);
        return;
      }
      if (native) {
        pingedAt = now;
        nws.ping?.();
      } else if (!this.pinging && this.inflight.size < this.maxInFlight) {
        pingedAt = now;
        this.pinging = true;
        this.request("ping", {}, { connectionBound: true }).then(
          () => (this.pinging = false),
          () => (this.pinging = false),
        );
      }
    }, Math.min(every, timeout, 1000));
    (this.keepTimer as { unref?: () => void }).unref?.();
  }

  /**
   * Drops a connection whose peer is silent at once: a close handshake
   * would wait for that peer too (ws waits 30 s).
   */
  private abandon(ws: WebSocketLike, reason: string): void {
    if (this.ws !== ws) return;
    ws.onclose = null;
    ws.onmessage = null;
    const nws = ws as unknown as { terminate?: () => void };
    if (typeof nws.terminate === "function") nws.terminate();
    else ws.close(4000, reason);
    this.dropped(reason);
  }

  private stopKeepalive(): void {
    if (this.keepTimer !== null) clearInterval(this.keepTimer);
    this.keepTimer = null;
  }

  private dropped(reason: string, closeCode?: number): void {
    this.ws = null;
    this.stopKeepalive();
    this.epoch++;
    const lost = [...this.inflight.values()];
    this.inflight.clear();
    const again: Pending[] = [];
    const keysKept = (this._hello?.features?.idempotency_keys ?? 0) > 0;
    for (const p of lost) {
      if (p.done) continue;
      if ((p.resend || (p.keyed === true && keysKept)) && p.epoch === undefined) {
        p.resent = true;
        again.push(p);
        this.resent++;
      } else {
        this.settle(p, new BerthError("disconnected", `${p.op}: the connection dropped before the answer (${reason})`, { op: p.op }));
      }
    }
    const bound = (p: Pending) => p.epoch !== undefined;
    for (const p of this.queue) {
      if (bound(p)) this.settle(p, new BerthError("disconnected", `${p.op}: the connection it belonged to dropped (${reason})`, { op: p.op }));
    }
    this.queue = [...again, ...this.queue.filter((p) => !p.done)];
    for (const fn of this.listeners.drop) fn(reason);
    if (this.closedErr !== null) return;
    const cap = Math.min(this.opts.backoffMaxMs ?? 10000, (this.opts.backoffInitialMs ?? 100) * 2 ** Math.min(this.attempt, 30));
    const delay = Math.floor(Math.random() * cap);
    this.attempt++;
    const change: StateChange = { state: "reconnecting", reconnects: this.reconnects, reason, delayMs: delay };
    if (closeCode !== undefined) change.closeCode = closeCode;
    this.setState(change);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.dial();
    }, delay);
  }

  private shutdown(err: BerthError): void {
    if (this.closedErr !== null) return;
    this.closedErr = err;
    this.stopKeepalive();
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    const ws = this.ws;
    this.ws = null;
    if (ws !== null && ws.readyState <= OPEN) ws.close(1000, "closed by the client");
    for (const p of [...this.inflight.values(), ...this.queue]) this.settle(p, err);
    this.inflight.clear();
    this.queue = [];
    this.firstOpen?.reject(err);
    this.firstOpen = null;
    this.setState({ state: "closed", reconnects: this.reconnects, reason: err.message });
    for (const fn of this.listeners.close) fn(err);
  }

  // -- requests

  private settle(p: Pending, err: BerthError | null, result?: unknown): void {
    if (p.done) return;
    p.done = true;
    if (p.timer !== undefined) clearTimeout(p.timer);
    if (err !== null) p.reject(err);
    else p.resolve(result);
  }

  /**
   * A keyed request sent before a new boot may have made its thing on the
   * old boot, whose keys are gone: sent again it would make a second one
   * there, so it fails with `boot` instead.
   */
  private failKeyedResends(b: BootChange): void {
    for (const p of this.queue) {
      if (p.keyed === true && p.resent === true && !p.resend) {
        this.settle(p, new BerthError("boot", `${p.op}: the sandbox rebooted (boot ${b.boot_id}) before the answer came`, { op: p.op, retryable: false }));
      }
    }
  }

  /** Sends queued requests while the in-flight budget allows. */
  private pump(): void {
    const ws = this.ws;
    if (ws === null || this._state !== "open") return;
    while (this.queue.length > 0 && this.inflight.size < this.maxInFlight) {
      const p = this.queue.shift() as Pending;
      if (p.done) continue;
      if (p.epoch !== undefined && p.epoch !== this.epoch) {
        this.settle(p, new BerthError("disconnected", `${p.op}: the connection it belonged to dropped`, { op: p.op }));
        continue;
      }
      this.transmit(ws, p);
    }
  }

  private transmit(ws: WebSocketLike, p: Pending): void {
    const id = this.nextId++;
    let bytes: Uint8Array;
    try {
      bytes = encoder.encode({ type: "request", id, op: p.op, args: p.args ?? {} });
    } catch (e) {
      this.settle(p, new BerthError("bad_args", `${p.op}: cannot encode the request: ${(e as Error).message}`, { op: p.op, retryable: false }));
      return;
    }
    const max = this._hello?.limits?.max_message;
    if (max !== undefined && bytes.length > max) {
      this.settle(p, new BerthError("too_large", `${p.op}: the request is ${bytes.length} bytes, over max_message ${max}`, { op: p.op, retryable: false }));
      return;
    }
    p.id = id;
    this.inflight.set(id, p);
    this.sent++;
    ws.send(bytes);
  }

  private receive(ws: WebSocketLike, raw: unknown): void {
    if (this.ws !== ws) return;
    this.lastHeard = Date.now();
    const bytes = toBytes(raw);
    if (bytes === null) {
      ws.close(1003, "berth speaks binary frames only");
      return;
    }
    let m: Record<string, unknown>;
    try {
      m = decoder.decode(bytes) as Record<string, unknown>;
    } catch {
      ws.close(1008, "undecodable message");
      return;
    }
    if (typeof m !== "object" || m === null) return;
    switch (m.type) {
      case "response":
        this.answer(m);
        break;
      case "event":
        for (const fn of this.listeners.event) fn(m as unknown as EventMessage);
        break;
      case "data": {
        const d: DataMessage = {
          stream: String(m.stream),
          offset: Number(m.offset),
          data: m.data instanceof Uint8Array ? m.data : new Uint8Array(0),
          eof: m.eof === true,
        };
        for (const fn of this.listeners.data) fn(d);
        break;
      }
      default:
        // A message type of a newer berth: ignored, as unknown keys are.
        break;
    }
  }

  private answer(m: Record<string, unknown>): void {
    const id = typeof m.id === "number" ? m.id : 0;
    const p = this.inflight.get(id);
    if (p === undefined) return;
    this.inflight.delete(id);
    if (m.ok === true) {
      if (!p.done) p.onResult?.(m.result, p.resent === true);
      this.settle(p, null, m.result);
    }
    else this.settle(p, BerthError.fromWire(p.op, m.error));
    this.pump();
  }
}
