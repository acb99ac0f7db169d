// adapter: a provider-neutral sandbox contract (the shape Daytona's and
// Cube's sandboxes expose) and berth's implementation of it over Sandbox.
import type { Sandbox } from "./sandbox.js";
import type { OutputStream } from "./streams.js";
import type { Process, Terminal } from "./process.js";

export interface ExecOptions {
  cwd?: string;
  env?: Record<string, string>;
  /** Run as this user of the sandbox. */
  user?: string;
  /** Kill the command after this long (ms). */
  timeoutMs?: number;
}

export interface ExecResult {
  /** The exit status; 128 + N when killed by signal N. */
  exitCode: number;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

export interface ExecStream {
  id: string;
  stdout: AsyncIterable<Uint8Array>;
  stderr: AsyncIterable<Uint8Array>;
  write(data: Uint8Array | string): Promise<void>;
  closeStdin(): Promise<void>;
  wait(): Promise<{ exitCode: number; timedOut: boolean }>;
  kill(): Promise<void>;
}

export interface FileInfo {
  path: string;
  name: string;
  isDir: boolean;
  size: number;
  mode: number;
  mtime: number;
}

export interface PtyHandle {
  id: string;
  /** The terminal's output, resumed by offset after reconnects. */
  output: AsyncIterable<Uint8Array>;
  /** The offset after the last byte taken: attach from it to resume. */
  readonly offset: number;
}

/** What a backend needs of a sandbox, whoever provides it. */
export interface SandboxProvider {
  exec(cmd: string | string[], opts?: ExecOptions): Promise<ExecResult>;
  execStream(cmd: string | string[], opts?: ExecOptions & { stdin?: boolean }): Promise<ExecStream>;
  files: {
    read(path: string): Promise<Uint8Array>;
    write(path: string, data: Uint8Array | string, opts?: { mode?: number; onProgress?: (sent: number, total: number) => void | Promise<unknown> }): Promise<void>;
    list(path: string): Promise<FileInfo[]>;
    remove(path: string, opts?: { recursive?: boolean }): Promise<void>;
    mkdir(path: string, opts?: { parents?: boolean }): Promise<void>;
  };
  pty: {
    create(opts?: { cmd?: string[]; cwd?: string; env?: Record<string, string>; cols?: number; rows?: number }): Promise<PtyHandle>;
    attach(id: string, opts?: { fromOffset?: number }): Promise<PtyHandle>;
    input(id: string, data: Uint8Array | string): Promise<void>;
    resize(id: string, cols: number, rows: number): Promise<void>;
    kill(id: string): Promise<void>;
  };
  preview: {
    /** A link to the app listening on the sandbox's port. */
    url(port: number, opts?: { ttlSeconds?: number; public?: boolean }): Promise<{ url: string; token: string; expiresAt: number }>;
  };
  lifecycle: {
    health(): Promise<boolean>;
    ready(): Promise<{ ready: boolean; reasons: string[] }>;
  };
}

function exitCode(exit: { code?: number; signal?: number } | null | undefined): number {
  if (exit == null) return -1;
  if (typeof exit.code === "number") return exit.code;
  return 128 + (exit.signal ?? 0);
}

function command(cmd: string | string[]): { argv: string[] } | { shell: string } {
  return typeof cmd === "string" ? { shell: cmd } : { argv: cmd };
}

function ptyHandle(t: Terminal): PtyHandle {
  const out: OutputStream = t.output;
  return {
    id: t.id,
    output: out,
    get offset() {
      return out.taken;
    },
  };
}

/** {@link SandboxProvider} over a berth {@link Sandbox}: see the README's table for what each method maps to. */
export class BerthProvider implements SandboxProvider {
  private readonly terminals = new Map<string, Terminal>();

  constructor(readonly sandbox: Sandbox) {}

  async exec(cmd: string | string[], opts: ExecOptions = {}): Promise<ExecResult> {
    const p = await this.start(cmd, opts);
    const [stdout, stderr, w] = await Promise.all([p.stdout.text(), p.stderr.text(), p.wait()]);
    return { exitCode: exitCode(w.exit as { code?: number; signal?: number } | null), stdout, stderr, timedOut: w.timed_out };
  }

  private start(cmd: string | string[], opts: ExecOptions & { stdin?: boolean }): Promise<Process> {
    const args: Parameters<Sandbox["process"]["start"]>[0] = { ...command(cmd) };
    if (opts.cwd !== undefined) args.cwd = opts.cwd;
    if (opts.env !== undefined) args.env = opts.env;
    if (opts.user !== undefined) args.user = opts.user;
    if (opts.timeoutMs !== undefined) args.timeout_ms = opts.timeoutMs;
    if (opts.stdin === true) args.stdin = "pipe";
    return this.sandbox.process.start(args);
  }

  async execStream(cmd: string | string[], opts: ExecOptions & { stdin?: boolean } = {}): Promise<ExecStream> {
    const p = await this.start(cmd, opts);
    return {
      id: p.id,
      stdout: p.stdout,
      stderr: p.stderr,
      write: (d) => p.write(d),
      closeStdin: () => p.closeStdin(),
      wait: async () => {
        const w = await p.wait();
        return { exitCode: exitCode(w.exit as { code?: number; signal?: number } | null), timedOut: w.timed_out };
      },
      kill: () => p.signal("KILL"),
    };
  }

  readonly files: SandboxProvider["files"] = {
    read: (path) => this.sandbox.fs.read(path),
    write: async (path, data, opts = {}) => {
      const w: Parameters<Sandbox["fs"]["write"]>[2] = { parents: true };
      if (opts.mode !== undefined) w.mode = opts.mode;
      if (opts.onProgress !== undefined) w.onProgress = opts.onProgress;
      await this.sandbox.fs.write(path, data, w);
    },
    list: async (path) => {
      const r = await this.sandbox.fs.list(path);
      return r.entries.map((e) => ({ path: e.path, name: e.name, isDir: e.type === "dir", size: e.size, mode: e.mode, mtime: e.mtime }));
    },
    remove: async (path, opts = {}) => {
      await this.sandbox.fs.remove(path, { recursive: opts.recursive === true });
    },
    mkdir: async (path, opts = {}) => {
      await this.sandbox.fs.mkdir(path, { parents: opts.parents === true });
    },
  };

  readonly pty: SandboxProvider["pty"] = {
    create: async (opts = {}) => {
      const args: Parameters<Sandbox["pty"]["open"]>[0] = {};
      if (opts.cmd !== undefined) args.argv = opts.cmd;
      if (opts.cwd !== undefined) args.cwd = opts.cwd;
      if (opts.env !== undefined) args.env = opts.env;
      if (opts.cols !== undefined) args.cols = opts.cols;
      if (opts.rows !== undefined) args.rows = opts.rows;
      const { terminal } = await this.sandbox.pty.open(args);
      this.terminals.set(terminal.id, terminal);
      return ptyHandle(terminal);
    },
    attach: async (id, opts = {}) => {
      const a: { fromOffset?: number } = {};
      if (opts.fromOffset !== undefined) a.fromOffset = opts.fromOffset;
      const t = await this.sandbox.pty.attach(id, a);
      await this.terminals.get(id)?.detach();
      this.terminals.set(id, t);
      return ptyHandle(t);
    },
    input: async (id, data) => {
      const t = this.terminals.get(id);
      if (t !== undefined) await t.input(data);
      else await this.sandbox.pty.input(id, data);
    },
    resize: async (id, cols, rows) => {
      await this.sandbox.pty.resize(id, cols, rows);
    },
    kill: async (id) => {
      await this.terminals.get(id)?.detach();
      this.terminals.delete(id);
      await this.sandbox.pty.close(id);
    },
  };

  readonly preview: SandboxProvider["preview"] = {
    url: async (port, opts = {}) => {
      const g = await this.sandbox.grants.create({
        scope: `preview:${port}`,
        ttl_s: opts.ttlSeconds ?? 3600,
        visibility: opts.public === true ? "public" : "private",
        label: `preview of port ${port}`,
      });
      return { url: g.url, token: g.token, expiresAt: g.expires_at };
    },
  };

  readonly lifecycle: SandboxProvider["lifecycle"] = {
    health: async () => {
      try {
        return (await this.sandbox.lifecycle.health()).ok;
      } catch {
        return false;
      }
    },
    ready: async () => {
      const r = await this.sandbox.lifecycle.readiness();
      return { ready: r.ready, reasons: r.reasons };
    },
  };
}
