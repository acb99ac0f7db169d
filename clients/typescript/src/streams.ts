// streams: output streams (a command's stdout and stderr, a terminal's
// output, a task's streams) as async iterators that resume by offset.
// Owns each stream's queue of chunks and its places: what arrived, what
// the consumer took.
import type { Connection, DataMessage } from "./connection.js";
import { concat } from "./bytes.js";
import { BerthError } from "./errors.js";
import { Wakeup } from "./wakeup.js";

/** One item of a stream, in order: bytes at an offset, or bytes that are gone. */
export type StreamItem =
  | { type: "data"; offset: number; data: Uint8Array }
  /** `bytes` bytes from `offset` were overwritten in berthd's ring before they could be read. */
  | { type: "lost"; offset: number; bytes: number };


/**
 * An output stream, by absolute byte offset. Iterate it for its chunks:
 *
 *     for await (const chunk of p.stdout) process.stdout.write(chunk);
 *
 * Chunks come in order, each byte once, across reconnects. Bytes that
 * berthd no longer held when they were asked for (a ring overrun) are
 * never skipped silently: the iterator throws a `BerthError` with code
 * `lost` (`details.offset`, `details.bytes`) at that place, after every
 * byte before it; iterating again goes on after the gap. `items()`
 * yields the same as `StreamItem`s, lost ranges included, without throwing.
 */
export class OutputStream implements AsyncIterable<Uint8Array> {
  /** The offset of the next byte expected from berth. */
  pos = 0;
  /** The offset after the last byte the consumer took. */
  taken = 0;
  /** Bytes queued for the consumer. */
  bytes = 0;
  private readonly items_: StreamItem[] = [];
  private ended = false;
  private failure: BerthError | null = null;
  private readonly wakeup = new Wakeup();

  constructor(
    /** The stream id, as in `data` messages: `proc/ID/stdout`, `pty/ID`, `task/ID/agent`. */
    readonly name: string,
    private readonly onTake: (s: OutputStream) => void = () => {},
  ) {}

  /** Whether the stream has ended (its eof came, or it failed). */
  get done(): boolean {
    return this.ended || this.failure !== null;
  }

  /** Takes a `data` message: duplicates (by offset) are dropped, a jump is lost bytes. */
  accept(d: DataMessage): void {
    if (this.done) return;
    const end = d.offset + d.data.length;
    if (d.offset > this.pos) this.lose(this.pos, d.offset - this.pos);
    if (end > this.pos) {
      const data = d.offset < this.pos ? d.data.subarray(this.pos - d.offset) : d.data;
      this.items_.push({ type: "data", offset: this.pos, data });
      this.bytes += data.length;
      this.pos = end;
    }
    if (d.eof && this.pos >= d.offset) this.ended = true;
    this.wakeup.notify();
  }

  /** Records that bytes [offset, offset + n) are gone. */
  lose(offset: number, n: number): void {
    if (n <= 0) return;
    this.items_.push({ type: "lost", offset, bytes: n });
    this.pos = offset + n;
    this.wakeup.notify();
  }

  /** Ends the stream with an error (after what is queued). */
  fail(err: BerthError): void {
    if (this.done) return;
    this.failure = err;
    this.wakeup.notify();
  }

  /**
   * Hands back what is queued and not taken, and moves the place back to
   * what the consumer took, to be read again from there.
   */
  rewind(): StreamItem[] {
    const held = this.items_.splice(0);
    this.bytes = 0;
    this.pos = this.taken;
    return held;
  }

  /** Queues again what `rewind()` handed back, up to offset `until`. */
  restore(held: StreamItem[], until: number): void {
    for (const it of held) {
      if (it.offset >= until) break;
      const n = Math.min(it.type === "data" ? it.data.length : it.bytes, until - it.offset);
      if (it.type === "data") {
        this.items_.push({ type: "data", offset: it.offset, data: it.data.subarray(0, n) });
        this.bytes += n;
      } else {
        this.items_.push({ type: "lost", offset: it.offset, bytes: n });
      }
      this.pos = it.offset + n;
    }
    this.wakeup.notify();
  }

  /** Ends the stream without error (after what is queued). */
  finish(): void {
    this.ended = true;
    this.wakeup.notify();
  }


  /** The next item; null at the end. */
  async nextItem(): Promise<StreamItem | null> {
    for (;;) {
      const it = this.items_.shift();
      if (it !== undefined) {
        if (it.type === "data") {
          this.bytes -= it.data.length;
          this.taken = it.offset + it.data.length;
        } else {
          this.taken = it.offset + it.bytes;
        }
        this.onTake(this);
        return it;
      }
      if (this.failure !== null) throw this.failure;
      if (this.ended) return null;
      await this.wakeup.wait();
    }
  }

  /** The stream as items, lost ranges included. */
  async *items(): AsyncGenerator<StreamItem> {
    for (;;) {
      const it = await this.nextItem();
      if (it === null) return;
      yield it;
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return {
      next: async () => {
        const it = await this.nextItem();
        if (it === null) return { done: true, value: undefined };
        if (it.type === "lost") {
          throw new BerthError("lost", `${this.name}: ${it.bytes} bytes at offset ${it.offset} were no longer held`, {
            retryable: false,
            details: { offset: it.offset, bytes: it.bytes },
          });
        }
        return { done: false, value: it.data };
      },
    };
  }

  /** Every byte to the end, as one array (throws `lost` if any were). */
  async bytesAll(): Promise<Uint8Array> {
    const parts: Uint8Array[] = [];
    for await (const c of this) parts.push(c);
    return concat(parts);
  }

  /** Every byte to the end, as UTF-8 text. */
  async text(): Promise<string> {
    return new TextDecoder().decode(await this.bytesAll());
  }
}

/**
 * What an attachment needs of its op: attach from offsets (answering,
 * as the response is read, where each stream starts) and detach.
 */
interface AttachOps {
  attach(from: number[], onResult: (starts: { offset: number; lost: number }[]) => void): Promise<unknown>;
  detach(): Promise<unknown>;
}

/**
 * Streams read through one attach (a command's two, a terminal's one, a
 * task stream): routes their `data` messages, attaches again from where
 * each stream got to after every reconnect, and, for streams without
 * acknowledgement, lets go while the consumer is `maxBuffered` behind and
 * attaches again once it has caught up halfway.
 *
 * Streams read with ack (`fromTaken`) are attached again from what the
 * consumer took, not from what had arrived: an attach sets berthd's place,
 * and from the arrived end it would let the command run half a ring past
 * bytes still queued here, at every reconnect of a stalled consumer, so
 * memory would grow without bound. What was queued is dropped and read
 * again, unless berthd no longer holds it: then it is queued back.
 */
export class Attachment {
  private attached = false;
  private paused = false;
  private busy = false;
  private closed = false;
  private readonly offs: (() => void)[] = [];

  constructor(
    private readonly conn: Connection,
    readonly streams: OutputStream[],
    private readonly ops: AttachOps,
    private readonly maxBuffered: number | null,
    private readonly fromTaken = false,
  ) {
    const byName = new Map(streams.map((s) => [s.name, s]));
    this.offs.push(
      conn.on("data", (d) => {
        const s = byName.get(d.stream);
        if (s === undefined) return;
        s.accept(d);
        this.checkPressure();
        if (this.streams.every((x) => x.done)) this.dispose();
      }),
      conn.on("drop", () => (this.attached = false)),
      conn.on("reconnect", (_h, boot) => {
        if (boot !== null) {
          const err = new BerthError("boot", `the sandbox rebooted (boot ${boot.boot_id}): ${streams.map((s) => s.name).join(", ")} cannot be resumed`, {
            retryable: false,
            details: { ...boot },
          });
          for (const s of streams) s.fail(err);
          this.dispose();
          return;
        }
        this.resume();
      }),
      conn.on("close", (err) => {
        for (const s of streams) s.fail(err);
        this.dispose();
      }),
      conn.report({ bytes: () => this.streams.reduce((n, s) => n + s.bytes, 0), events: () => 0 }),
    );
  }

  /** The attach came with the request that started the streams. */
  markAttached(): void {
    this.attached = true;
  }

  /** Attaches from where each stream got to (after a drop, or a pause). */
  resume(): void {
    if (this.closed || this.busy || this.paused || this.attached || this.conn.state !== "open") return;
    this.busy = true;
    let held = this.streams.map((s) => (this.fromTaken && !s.done ? s.rewind() : []));
    const giveBack = (until: (i: number) => number) => {
      held.forEach((h, i) => this.streams[i]?.restore(h, until(i)));
      held = [];
    };
    const from = this.streams.map((s) => s.pos);
    this.ops
      .attach(from, (starts) => {
        this.attached = true;
        giveBack((i) => Math.max(from[i] ?? 0, starts[i]?.offset ?? 0));
        starts.forEach((st, i) => {
          const s = this.streams[i];
          if (s !== undefined && st.offset > s.pos) s.lose(s.pos, st.offset - s.pos);
        });
      })
      .catch((e: BerthError) => {
        giveBack(() => Infinity);
        if (e.code === "disconnected" || e.code === "closed") return;
        for (const s of this.streams) s.fail(e);
        this.dispose();
      })
      .finally(() => {
        this.busy = false;
      });
  }

  private buffered(): number {
    return this.streams.reduce((n, s) => n + s.bytes, 0);
  }

  private checkPressure(): void {
    if (this.maxBuffered === null || this.paused || !this.attached) return;
    if (this.buffered() <= this.maxBuffered) return;
    this.paused = true;
    this.attached = false;
    this.ops.detach().catch(() => {});
  }

  /** The consumer took bytes: a paused attachment may come back. */
  taken(): void {
    if (this.paused && this.maxBuffered !== null && this.buffered() <= this.maxBuffered / 2) {
      this.paused = false;
      this.resume();
    }
  }

  /** Stops reading: the streams end where they are. */
  async detach(): Promise<void> {
    if (this.closed) return;
    this.dispose();
    for (const s of this.streams) s.finish();
    if (this.conn.state === "open") await this.ops.detach().catch(() => {});
  }

  private dispose(): void {
    if (this.closed) return;
    this.closed = true;
    for (const off of this.offs) off();
  }
}

/**
 * Acknowledges a command's output as its consumer takes it: berthd
 * paces the command half a ring after the last acknowledged byte, so a
 * slow consumer slows the command and nothing is lost. An ack goes when
 * the consumer has taken `every` bytes since the last one, or has taken
 * everything queued.
 */
export class Acker {
  private sent: number[];
  private pending = false;

  constructor(
    private readonly conn: Connection,
    private readonly id: string,
    private readonly streams: OutputStream[],
    private readonly every = 256 * 1024,
  ) {
    this.sent = streams.map(() => 0);
    conn.on("reconnect", () => (this.sent = this.streams.map(() => 0)));
  }

  taken(): void {
    const due = this.streams.some((s, i) => {
      const ahead = s.taken - (this.sent[i] ?? 0);
      return ahead >= this.every || (ahead > 0 && s.bytes === 0);
    });
    if (!due || this.pending || this.conn.state !== "open") return;
    this.pending = true;
    queueMicrotask(() => this.flush());
  }

  private flush(): void {
    this.pending = false;
    const [out, err] = this.streams;
    if (out === undefined || err === undefined) return;
    const args = { id: this.id, stdout: out.taken, stderr: err.taken };
    const at = [out.taken, err.taken];
    this.conn.request("proc.ack", args, { connectionBound: true }).then(
      () => {
        this.sent = this.sent.map((v, i) => Math.max(v, at[i] ?? 0));
      },
      () => {
        // Not attached with ack on this connection (yet): the next attach sets the place.
      },
    );
    this.sent = at;
  }
}
