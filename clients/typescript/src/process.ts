// process: handles of what runs in the sandbox and has output streams: a
// command (proc.*), a terminal session (pty.*), a task's stream. Each owns
// its attachment and streams.
import type { Connection } from "./connection.js";
import { BerthError } from "./errors.js";
import type { ProcAttachResult, ProcStartArgs, ProcWaitResult, PtyAttachResult, PtyOpenArgs, SignalArg, TaskAttachResult } from "./protocol.js";
import { Acker, Attachment, OutputStream } from "./streams.js";

const encoder = new TextEncoder();

function bytesOf(data: Uint8Array | string): Uint8Array {
  return typeof data === "string" ? encoder.encode(data) : data;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Largest piece of input one request carries (the protocol's 64 KiB). */
const INPUT_CHUNK = 64 * 1024;

/** Sends input in pieces, again while berthd says `unavailable` (its earlier input not read yet). */
async function sendInput(send: (piece: Uint8Array) => Promise<unknown>, data: Uint8Array): Promise<void> {
  for (let at = 0; at < data.length || (data.length === 0 && at === 0); at += INPUT_CHUNK) {
    const piece = data.subarray(at, at + INPUT_CHUNK);
    for (let delay = 10; ; delay = Math.min(delay * 2, 500)) {
      try {
        await send(piece);
        break;
      } catch (e) {
        if (!(e instanceof BerthError) || e.code !== "unavailable") throw e;
        await sleep(delay);
      }
    }
    if (data.length === 0) break;
  }
}

/** Options of `process.start` beyond the protocol's arguments. */
export interface StartOptions {
  /** Bytes of output a consumer may be behind before acks hold the command (ack pacing; default 256 KiB between acks). */
  ackEvery?: number;
}

/**
 * A command started with `sandbox.process.start`. Its `stdout` and
 * `stderr` are read from offset 0 with acknowledgement: the command is
 * paced by what the consumer has taken, so a slow consumer slows it and
 * no byte is lost; after a reconnect both are attached again from where
 * they got to.
 */
export class Process {
  readonly stdout: OutputStream;
  readonly stderr: OutputStream;
  private readonly attachment: Attachment;
  private stdinBytes = 0;
  private inputChain: Promise<void> = Promise.resolve();

  constructor(
    private readonly conn: Connection,
    readonly id: string,
    readonly pid: number,
    opts: StartOptions = {},
  ) {
    let acker: Acker | null = null;
    const taken = () => acker?.taken();
    this.stdout = new OutputStream(`proc/${id}/stdout`, taken);
    this.stderr = new OutputStream(`proc/${id}/stderr`, taken);
    acker = new Acker(conn, id, [this.stdout, this.stderr], opts.ackEvery);
    this.attachment = new Attachment(
      conn,
      [this.stdout, this.stderr],
      {
        attach: (from, onResult) =>
          conn.request(
            "proc.attach",
            { id, from_offset: { stdout: from[0] ?? 0, stderr: from[1] ?? 0 }, ack: true },
            { connectionBound: true, onResult: (r) => onResult([(r as ProcAttachResult).stdout, (r as ProcAttachResult).stderr]) },
          ),
        detach: () => conn.request("proc.detach", { id }, { connectionBound: true }),
      },
      null,
      true,
    );
  }

  /** Starts a command, attached to its output from its first byte. */
  static async start(conn: Connection, args: ProcStartArgs, opts: StartOptions = {}): Promise<Process> {
    let proc: Process | null = null;
    const a: ProcStartArgs = { ...args, attach: true, ack: true };
    const r = await conn.request("proc.start", a, {
      // Streams exist before the first data message after the answer is read.
      onResult: (res, resent) => {
        const { id, pid } = res as { id: string; pid: number };
        proc = new Process(conn, id, pid, opts);
        if (resent) proc.attachment.resume();
        else proc.attachment.markAttached();
      },
    });
    return proc ?? new Process(conn, r.id, r.pid, opts);
  }

  /** Attaches to a command started earlier (by another connection, or before a restart of the backend). */
  static attach(conn: Connection, id: string, from: { stdout: number; stderr: number } = { stdout: 0, stderr: 0 }, opts: StartOptions = {}): Process {
    const p = new Process(conn, id, 0, opts);
    p.stdout.pos = p.stdout.taken = from.stdout;
    p.stderr.pos = p.stderr.taken = from.stderr;
    p.attachment.resume();
    return p;
  }

  /**
   * Writes to the command's stdin (started with `stdin: "pipe"`), in order.
   * Each piece carries its stdin offset, so one sent again after a lost
   * answer is taken once.
   */
  write(data: Uint8Array | string): Promise<void> {
    const bytes = bytesOf(data);
    const run = this.inputChain.then(() =>
      sendInput(async (piece) => {
        const r = await this.conn.request("proc.input", { id: this.id, data: piece, offset: this.stdinBytes });
        this.stdinBytes = r.stdin_bytes;
      }, bytes),
    );
    this.inputChain = run.catch(() => {});
    return run;
  }

  /** Closes stdin once what was written is taken: the command reads end of file. */
  async closeStdin(): Promise<void> {
    await this.inputChain;
    await this.conn.request("proc.close_stdin", { id: this.id });
  }

  /** Signals the command's process group (`KILL`: its whole cgroup). */
  async signal(signal: SignalArg): Promise<void> {
    await this.conn.request("proc.signal", { id: this.id, signal });
  }

  /** Waits for the exit (and the output read to its end). */
  wait(timeoutMs?: number): Promise<ProcWaitResult> {
    return this.conn.request("proc.wait", timeoutMs === undefined ? { id: this.id } : { id: this.id, timeout_ms: timeoutMs });
  }

  /** Stops reading the output: the streams end where they are. */
  detach(): Promise<void> {
    return this.attachment.detach();
  }
}

/** Options of `pty.attach`. */
export interface AttachTerminalOptions {
  /** The offset to read from (default the current end: live output only; 0: all the ring holds). */
  fromOffset?: number;
  /** Watch only: input, resize and signal are refused. */
  readonly?: boolean;
  /**
   * Output bytes a slow consumer may be behind (4 MiB). A terminal is
   * not paced: past this the SDK detaches, attaches again from where the
   * consumer is once it has taken half, and what the ring no longer holds
   * then is a `lost` item (never skipped silently).
   */
  maxBuffered?: number;
}

/**
 * A terminal session watched by this connection: `output` is its byte
 * stream (by offset, resumed after reconnects from the last byte that
 * arrived).
 */
export class Terminal {
  readonly output: OutputStream;
  private readonly attachment: Attachment;
  /** What the first attach answered (size, state, end). */
  attached: PtyAttachResult | null = null;
  private inputChain: Promise<void> = Promise.resolve();

  private constructor(
    private readonly conn: Connection,
    readonly id: string,
    opts: AttachTerminalOptions,
  ) {
    let attachment: Attachment | null = null;
    this.output = new OutputStream(`pty/${id}`, () => attachment?.taken());
    const readonly = opts.readonly === true;
    attachment = new Attachment(
      conn,
      [this.output],
      {
        attach: (from, onResult) =>
          conn.request(
            "pty.attach",
            { id, from_offset: from[0] ?? 0, readonly },
            {
              connectionBound: true,
              onResult: (r) => {
                this.attached ??= r as PtyAttachResult;
                onResult([r as PtyAttachResult]);
              },
            },
          ),
        detach: () => conn.request("pty.detach", { id }, { connectionBound: true }),
      },
      opts.maxBuffered ?? 4 * 1024 * 1024,
    );
    this.attachment = attachment;
  }

  /** Attaches to session `id`; resolves once the attach was answered. */
  static async attach(conn: Connection, id: string, opts: AttachTerminalOptions = {}): Promise<Terminal> {
    const t = new Terminal(conn, id, opts);
    let from = opts.fromOffset;
    if (from === undefined) {
      const list = await conn.request("pty.list", {});
      const s = list.sessions.find((x) => x.id === id);
      if (s === undefined) throw new BerthError("not_found", `no terminal session ${id}`);
      from = s.bytes;
    }
    t.output.pos = t.output.taken = from;
    const first = new Promise<void>((resolve, reject) => {
      conn
        .request("pty.attach", { id, from_offset: from, readonly: opts.readonly === true }, {
          connectionBound: true,
          onResult: (r) => {
            const res = r as PtyAttachResult;
            t.attached = res;
            if (res.offset > t.output.pos) t.output.lose(t.output.pos, res.offset - t.output.pos);
            t.attachment.markAttached();
          },
        })
        .then(() => resolve(), reject);
    });
    await first;
    return t;
  }

  /** Opens a session and attaches to it from its first byte. */
  static async open(conn: Connection, args: PtyOpenArgs = {}, opts: Omit<AttachTerminalOptions, "fromOffset"> = {}): Promise<{ terminal: Terminal; id: string; pid: number; cols: number; rows: number }> {
    const r = await conn.request("pty.open", args);
    const terminal = await Terminal.attach(conn, r.id, { ...opts, fromOffset: 0 });
    return { terminal, ...r };
  }

  /** Types into the session, in order (again while berthd is `unavailable`: its earlier input not read yet). */
  input(data: Uint8Array | string): Promise<void> {
    const bytes = bytesOf(data);
    const run = this.inputChain.then(() => sendInput((piece) => this.conn.request("pty.input", { id: this.id, data: piece }), bytes));
    this.inputChain = run.catch(() => {});
    return run;
  }

  async resize(cols: number, rows: number): Promise<void> {
    await this.conn.request("pty.resize", { id: this.id, cols, rows });
  }

  async signal(signal: SignalArg): Promise<void> {
    await this.conn.request("pty.signal", { id: this.id, signal });
  }

  /** Stops watching (the session goes on). */
  detach(): Promise<void> {
    return this.attachment.detach();
  }

  /** Ends the session. */
  async close(): Promise<void> {
    await this.conn.request("pty.close", { id: this.id });
  }
}

/**
 * A task's output stream (`agent`, `stderr`, `check/N`): read back from
 * its file, so nothing is ever lost. berth has no way to pause one (no
 * acknowledgement, no detach), so its bytes are queued as they come.
 */
export class TaskStream {
  readonly output: OutputStream;
  attached: TaskAttachResult | null = null;
  private readonly attachment: Attachment;

  constructor(conn: Connection, readonly id: string, readonly stream: string, fromOffset: number) {
    let attachment: Attachment | null = null;
    this.output = new OutputStream(`task/${id}/${stream}`, () => attachment?.taken());
    this.output.pos = this.output.taken = fromOffset;
    attachment = new Attachment(
      conn,
      [this.output],
      {
        attach: (from, onResult) =>
          conn.request("task.attach", { id, stream, from_offset: from[0] ?? 0 }, {
            connectionBound: true,
            onResult: (r) => {
              this.attached ??= r as TaskAttachResult;
              onResult([{ offset: (r as TaskAttachResult).offset, lost: 0 }]);
            },
          }),
        // No task.detach: the stream goes on arriving and is dropped by offset.
        detach: async () => {},
      },
      null,
    );
    this.attachment = attachment;
    attachment.resume();
  }

  detach(): Promise<void> {
    return this.attachment.detach();
  }
}
