import type { ErrorCode } from "./protocol.js";

/** Codes of errors the SDK makes itself, beside the protocol's. */
export type LocalErrorCode = "disconnected" | "closed" | "label_mismatch" | "timeout" | "lost" | "boot";

/** Every error a call of the SDK rejects with. */
export type BerthErrorCode = ErrorCode | LocalErrorCode;

/** Codes that mean "try again later": nothing was done, or the answer was lost. */
const RETRYABLE: ReadonlySet<BerthErrorCode> = new Set<BerthErrorCode>(["unavailable", "disconnected", "timeout"]);

/**
 * An error of berth (a response with `ok: false`) or of the SDK.
 *
 * `code` is stable and machine-readable; `message` is for people.
 * `retryable` says whether the same request may succeed if sent again.
 * `disconnected` is retryable: the connection dropped before the answer
 * came, so the request may or may not have been done.
 */
export class BerthError extends Error {
  readonly code: BerthErrorCode;
  readonly path?: string;
  readonly retryable: boolean;
  /** The op of the request that failed, when there was one. */
  readonly op?: string;
  /** Fields of the error map other than code, message and path (e.g. `task`). */
  readonly details: Record<string, unknown>;

  constructor(code: BerthErrorCode, message: string, opts: { path?: string; op?: string; retryable?: boolean; details?: Record<string, unknown> } = {}) {
    super(message);
    this.name = "BerthError";
    this.code = code;
    if (opts.path !== undefined) this.path = opts.path;
    if (opts.op !== undefined) this.op = opts.op;
    this.retryable = opts.retryable ?? RETRYABLE.has(code);
    this.details = opts.details ?? {};
  }

  /** The error of a response's `error` map. */
  static fromWire(op: string | undefined, e: unknown): BerthError {
    const m = (typeof e === "object" && e !== null ? e : {}) as Record<string, unknown>;
    const code = typeof m.code === "string" ? (m.code as ErrorCode) : "internal";
    const message = typeof m.message === "string" ? m.message : String(code);
    const details: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(m)) if (k !== "code" && k !== "message" && k !== "path") details[k] = v;
    const opts: { path?: string; op?: string; details: Record<string, unknown> } = { details };
    if (typeof m.path === "string") opts.path = m.path;
    if (op !== undefined) opts.op = op;
    return new BerthError(code, message, opts);
  }
}
