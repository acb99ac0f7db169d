// events: the journal as async iterators. One subscription per connection
// (the protocol has one), shared by every follower; owns each follower's
// bounded queue and its place (the last seq it was given).
import type { BootChange, Connection, EventMessage } from "./connection.js";
import { BerthError } from "./errors.js";
import type { BerthEvent, EventsGapData } from "./protocol.js";
import { Wakeup } from "./wakeup.js";

/** `events.gap`: the journal no longer held the seqs asked for; `lost` of them are gone. */
export interface GapEvent {
  kind: "events.gap";
  seq: 0;
  ts: number;
  data: EventsGapData;
}

/** The sandbox rebooted (a new `boot_id`): seqs start again at 1, and what the old boot journaled is gone. */
export interface BootEvent {
  kind: "boot";
  seq: 0;
  ts: number;
  data: BootChange;
}

/** What `events.follow()` yields, discriminated on `kind`. */
export type FollowItem = BerthEvent | GapEvent | BootEvent;

export interface FollowOptions {
  /** The first seq wanted (1: the whole journal of this boot). Default: only events after now. */
  fromSeq?: number;
  /**
   * Events held for a consumer that has not taken them (10000). When the
   * queue is full the follower lets go of its share of the subscription
   * and resubscribes from its last seq + 1 once the consumer has taken
   * half of them: the journal holds them meanwhile, so nothing is lost
   * and memory stays bounded.
   */
  maxBuffered?: number;
  /** Only events for which this holds are queued (the place moves on for all). */
  filter?: (ev: FollowItem) => boolean;
}

/** A follower's iterator, with its place. */
export interface EventStream extends AsyncIterableIterator<FollowItem> {
  /** The seq of the last event queued for the consumer (0: none yet). */
  readonly lastSeq: number;
  /** Events queued and not yet taken. */
  readonly buffered: number;
  /** Ends the iteration (as `break` in `for await` does). */
  close(): void;
}

class Follower {
  last = 0;
  covered = false;
  paused = false;
  ended = false;
  ready: Promise<void>;
  readonly queue: FollowItem[] = [];
  private readonly wakeup = new Wakeup();
  private failure: BerthError | null = null;
  private markReady!: () => void;

  constructor(
    readonly hub: EventHub,
    readonly max: number,
    readonly filter: ((ev: FollowItem) => boolean) | undefined,
  ) {
    this.ready = new Promise((r) => (this.markReady = r));
  }

  /** Whether it takes events now. */
  get active(): boolean {
    return !this.ended && !this.paused && this.last >= 0;
  }

  setReady(): void {
    this.markReady();
  }

  /** Queues an event the stream delivered; with no room, pauses the follower (it resubscribes once its queue is half drained). */
  offer(ev: FollowItem): void {
    if (ev.seq !== 0 && ev.seq <= this.last) return;
    if (this.queue.length >= this.max) {
      this.paused = true;
      this.covered = false;
      return;
    }
    if (ev.seq !== 0) this.last = ev.seq;
    if (this.filter === undefined || this.filter(ev)) this.push(ev);
  }

  push(ev: FollowItem): void {
    this.queue.push(ev);
    this.wakeup.notify();
  }

  fail(err: BerthError): void {
    this.failure = err;
    this.wakeup.notify();
  }


  async next(): Promise<IteratorResult<FollowItem>> {
    await this.ready;
    for (;;) {
      if (this.ended) return { done: true, value: undefined };
      const ev = this.queue.shift();
      if (ev !== undefined) {
        if (this.paused && this.queue.length <= this.max / 2) {
          this.paused = false;
          this.hub.sync();
        }
        return { done: false, value: ev };
      }
      if (this.failure !== null) throw this.failure;
      await this.wakeup.wait();
    }
  }

  end(): void {
    this.ended = true;
    this.wakeup.notify();
    this.hub.remove(this);
  }
}

/**
 * The connection's one `events.subscribe`, shared by every follower.
 * Each follower keeps its own place; the subscription starts at the
 * lowest place + 1 of the followers it does not cover yet, and every
 * follower drops what it already had (seq ≤ its last), so a new follower,
 * a resumed one and a reconnect all come down to one rule.
 */
export class EventHub {
  private readonly followers = new Set<Follower>();
  private subscribed = false;
  private syncing = false;
  private again = false;

  constructor(private readonly conn: Connection) {
    conn.on("event", (m) => this.deliver(m));
    conn.on("drop", () => {
      this.subscribed = false;
      for (const f of this.followers) f.covered = false;
    });
    conn.on("reconnect", (_h, boot) => {
      if (boot !== null) this.rebooted(boot);
      this.sync();
    });
    conn.on("close", (err) => {
      for (const f of this.followers) f.fail(err);
    });
    conn.report({ bytes: () => 0, events: () => this.buffered() });
  }

  buffered(): number {
    let n = 0;
    for (const f of this.followers) n += f.queue.length;
    return n;
  }

  follow(opts: FollowOptions = {}): EventStream {
    const f = new Follower(this, Math.max(2, opts.maxBuffered ?? 10000), opts.filter);
    this.followers.add(f);
    if (opts.fromSeq !== undefined) {
      f.last = Math.max(0, opts.fromSeq - 1);
      f.setReady();
      this.sync();
    } else {
      // Only events after now: the place is the journal's last seq.
      f.last = -1;
      this.conn.request("state", {}).then(
        (s) => {
          f.last = s.last_seq;
          f.setReady();
          this.sync();
        },
        (e: BerthError) => {
          f.setReady();
          f.fail(e);
        },
      );
    }
    const it: EventStream = {
      get lastSeq() {
        return Math.max(0, f.last);
      },
      get buffered() {
        return f.queue.length;
      },
      next: () => f.next(),
      return: async () => {
        f.end();
        return { done: true, value: undefined };
      },
      close: () => f.end(),
      [Symbol.asyncIterator]() {
        return it;
      },
    };
    return it;
  }

  remove(f: Follower): void {
    this.followers.delete(f);
    this.sync();
  }

  private rebooted(boot: BootChange): void {
    for (const f of this.followers) {
      f.push({ kind: "boot", seq: 0, ts: Date.now(), data: boot });
      f.last = 0;
      f.covered = false;
    }
  }

  private deliver(m: EventMessage): void {
    const ev = m as unknown as FollowItem;
    for (const f of this.followers) {
      if (!f.covered || !f.active) continue;
      if (ev.kind === "events.gap") {
        const gap = ev.data as EventsGapData;
        if (f.last + 1 < gap.first_seq) {
          const requested = f.last + 1;
          f.push({ kind: "events.gap", seq: 0, ts: ev.ts, data: { requested, first_seq: gap.first_seq, lost: gap.first_seq - requested } });
          f.last = gap.first_seq - 1;
        }
        continue;
      }
      f.offer(ev);
      if (f.paused) this.sync();
    }
  }

  /** Subscribes for the followers not covered yet, or unsubscribes when none follows. */
  sync(): void {
    if (this.syncing) {
      this.again = true;
      return;
    }
    if (this.conn.state !== "open") return;
    const active = [...this.followers].filter((f) => f.active);
    const uncovered = active.filter((f) => !f.covered);
    if (active.length === 0) {
      if (this.subscribed) this.run(() => this.unsubscribe());
      return;
    }
    if (uncovered.length === 0) return;
    const from = Math.min(...active.map((f) => f.last)) + 1;
    this.run(() => this.subscribe(from, active));
  }

  private run(step: () => Promise<void>): void {
    this.syncing = true;
    step()
      .catch((e: BerthError) => {
        // A drop: the reconnect syncs again. Anything else the followers
        // waiting for this subscription are told, rather than wait forever.
        if (e.code === "disconnected" || e.code === "closed") return;
        for (const f of this.followers) if (f.active && !f.covered) f.fail(e);
      })
      .finally(() => {
        this.syncing = false;
        if (this.again) {
          this.again = false;
          this.sync();
        }
      });
  }

  private async subscribe(from: number, covering: Follower[]): Promise<void> {
    await this.conn.request(
      "events.subscribe",
      { from_seq: from },
      {
        connectionBound: true,
        onResult: () => {
          this.subscribed = true;
          for (const f of covering) if (f.active) f.covered = true;
        },
      },
    );
    // Followers that joined or came back meanwhile.
    this.again = true;
  }

  private async unsubscribe(): Promise<void> {
    this.subscribed = false;
    await this.conn.request("events.unsubscribe", {}, { connectionBound: true });
  }
}
