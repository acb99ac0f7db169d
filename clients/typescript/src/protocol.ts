// The types of berth.v1, written from docs/protocol.md, for the ops the
// SDK uses.

export const PROTOCOL_VERSION = "berth.v1";

export type ErrorCode =
  | "bad_message"
  | "too_large"
  | "unsupported_version"
  | "hello_required"
  | "unknown_op"
  | "bad_args"
  | "forbidden"
  | "unauthorized"
  | "not_found"
  | "conflict"
  | "unavailable"
  | "git_failed"
  | "internal"
  | "permission_denied"
  | "exists"
  | "not_a_directory"
  | "is_a_directory"
  | "not_empty"
  | "no_space"
  | "io_error"
  | "symlink"
  | "unknown_type";

export const ERROR_CODES: readonly ErrorCode[] = [
  "bad_message", "too_large", "unsupported_version", "hello_required",
  "unknown_op", "bad_args", "forbidden", "unauthorized", "not_found",
  "conflict", "unavailable", "git_failed", "internal", "permission_denied",
  "exists", "not_a_directory", "is_a_directory", "not_empty", "no_space",
  "io_error", "symlink", "unknown_type",
];

type Empty = Record<string, never>;
export type Exit = { code: number } | { signal: number; core: boolean };
export interface Region { x: number; y: number; width: number; height: number }
export interface LimitsArg {
  cpu_millis?: number;
  memory_bytes?: number;
  max_processes?: number;
  disk_bytes?: number;
  open_files?: number;
}
export type SignalArg = string | number;

export interface HelloArgs { version: string; client?: string }
export interface HelloResult {
  version: string;
  agent_version: string;
  boot_id: string;
  labels: Record<string, string>;
  capabilities: string[];
  limits: { max_message: number; max_depth: number; max_in_flight?: number };
  pid: number;
  started_at: number;
}
export type PingArgs = Empty;
export interface PingResult { ts: number; boot_id: string }
export type StateArgs = Empty;
export interface ServiceInfo {
  name: string;
  kind: string;
  state: string;
  reason: string;
  pid: number;
  since: number;
  uptime_ms: number;
  restarts: number;
  required: boolean;
  last_exit: Exit | null;
}
export interface CheckInfo { ok: boolean; reason: string; since: number }
export interface StateResult {
  boot_id: string;
  version: string;
  pid: number;
  started_at: number;
  uptime_ms: number;
  first_seq: number;
  last_seq: number;
  services: ServiceInfo[];
  checks: Record<string, CheckInfo>;
}
export interface EventsSubscribeArgs { from_seq?: number }
export interface EventsSubscribeResult { first_seq: number; last_seq: number; from_seq: number }
export type EventsUnsubscribeArgs = Empty;
export type EventsUnsubscribeResult = Empty;

export type ServiceListArgs = Empty;
export interface ServiceListResult { services: ServiceInfo[] }
export interface ServiceStatusArgs { name: string }
export interface ServiceStatusResult extends ServiceInfo {
  command: string[];
  after: string[];
  requires: string[];
  probe: string;
  restart_policy: string;
  main: boolean;
}
export type ServiceStartArgs = ServiceStatusArgs;
export type ServiceStartResult = ServiceStatusResult;
export type ServiceStopArgs = ServiceStatusArgs;
export type ServiceStopResult = ServiceStatusResult;
export type ServiceRestartArgs = ServiceStatusArgs;
export type ServiceRestartResult = ServiceStatusResult;
export interface ServiceSignalArgs { name: string; signal: SignalArg }
export interface ServiceSignalResult { name: string; signal: number }

interface SecretsAndLimits {
  secrets?: "all" | string[] | null;
  redact?: boolean;
  limits?: LimitsArg;
}
export interface PtyOpenArgs extends SecretsAndLimits {
  argv?: string[];
  cwd?: string;
  env?: Record<string, string>;
  user?: string;
  cols?: number;
  rows?: number;
  ttl_detached?: number;
  ring?: number;
}
export interface PtyOpenResult { id: string; pid: number; cols: number; rows: number }
export interface PtyAttachArgs { id: string; from_offset?: number; mode?: "bytes" | "screen"; readonly?: boolean }
export interface PtyAttachResult {
  offset: number;
  lost: number;
  end: number;
  cols: number;
  rows: number;
  state: "running" | "exited";
  screen?: Uint8Array;
}
export interface PtyDetachArgs { id: string }
export type PtyDetachResult = Empty;
export interface PtyInputArgs { id: string; data: Uint8Array }
export type PtyInputResult = Empty;
export interface PtyResizeArgs { id: string; cols: number; rows: number }
export type PtyResizeResult = Empty;
export interface PtySignalArgs { id: string; signal: SignalArg }
export type PtySignalResult = Empty;
export interface PtyCloseArgs { id: string }
export type PtyCloseResult = Empty;
export type PtyListArgs = Empty;
export interface PtySession {
  id: string;
  command: string[];
  pid: number;
  cols: number;
  rows: number;
  viewers: number;
  bytes: number;
  state: string;
  exit: Exit | null;
  created: number;
  ttl_detached: number;
  limits: unknown;
}
export interface PtyListResult { sessions: PtySession[] }

export interface ProcStartArgs extends SecretsAndLimits {
  argv?: string[];
  shell?: string;
  cwd?: string;
  env?: Record<string, string>;
  user?: string;
  stdin?: "closed" | "pipe";
  timeout_ms?: number;
  tag?: string;
  ring?: number;
  ttl?: number;
  attach?: boolean;
  ack?: boolean;
}
export interface ProcStartResult { id: string; pid: number }
export interface StreamPlace { offset: number; lost: number; end: number }
export interface ProcAttachArgs {
  id: string;
  from_offset?: number | { stdout: number; stderr: number };
  ack?: boolean;
}
export interface ProcAttachResult { id: string; state: "running" | "exited"; stdout: StreamPlace; stderr: StreamPlace }
export interface ProcAckArgs { id: string; stdout?: number; stderr?: number }
export type ProcAckResult = Empty;
export interface ProcDetachArgs { id: string }
export type ProcDetachResult = Empty;
export interface ProcInputArgs { id: string; data: Uint8Array; offset?: number }
export interface ProcInputResult { stdin_bytes: number }
export interface ProcCloseStdinArgs { id: string }
export type ProcCloseStdinResult = Empty;
export interface ProcSignalArgs { id: string; signal: SignalArg }
export type ProcSignalResult = Empty;
export interface ProcWaitArgs { id: string; timeout_ms?: number }
export interface ProcWaitResult {
  id: string;
  state: "running" | "exited";
  exit: Exit | null;
  timed_out: boolean;
  oom_killed: boolean;
  stdout_bytes: number;
  stderr_bytes: number;
}
export type ProcListArgs = Empty;
export interface ProcInfo {
  id: string;
  pid: number;
  command: string[];
  tag: string;
  stdin_bytes: number;
  state: string;
  exit: Exit | null;
  timed_out: boolean;
  started: number;
  stdout_bytes: number;
  stderr_bytes: number;
  limits: unknown;
}
export interface ProcListResult { procs: ProcInfo[] }

interface FsCommon { as?: string; follow_symlinks?: boolean }
export type FileType = "file" | "dir" | "symlink" | "other";
export interface FsStatArgs extends FsCommon { path: string; follow?: boolean }
export interface FsStatResult {
  path: string;
  type: FileType;
  size: number;
  mode: number;
  uid: number;
  gid: number;
  user: string | null;
  group: string | null;
  mtime: number;
  target?: string;
}
export interface FsListArgs extends FsCommon { path: string; depth?: number; limit?: number }
export interface FsEntry { path: string; name: string; type: FileType; size: number; mode: number; mtime: number; target?: string }
export interface FsListResult { path: string; entries: FsEntry[]; truncated: boolean; skipped: number }
export interface FsReadArgs extends FsCommon { path: string; offset?: number; length?: number }
export interface FsReadResult { data: Uint8Array; offset: number; size: number; eof: boolean }
export interface FsWriteArgs extends FsCommon {
  path: string;
  offset?: number;
  data?: Uint8Array;
  done?: boolean;
  mode?: number;
  user?: string | number;
  group?: string | number;
  parents?: boolean;
}
export interface FsWriteResult { path: string; pending?: number; size?: number }
export interface FsMkdirArgs extends FsCommon { path: string; parents?: boolean; mode?: number }
export interface FsMkdirResult { path: string }
export interface FsMoveArgs extends FsCommon { from: string; to: string; overwrite?: boolean }
export interface FsMoveResult { from: string; to: string }
export interface FsRemoveArgs extends FsCommon { path: string; recursive?: boolean }
export interface FsRemoveResult { path: string; removed: number }
export interface FsChmodArgs extends FsCommon { path: string; mode: number }
export interface FsChmodResult { path: string; mode: number }
export interface FsWatchArgs extends FsCommon { path: string; recursive?: boolean }
export interface FsWatchResult { id: string; path: string }
export interface FsUnwatchArgs { id: string }
export type FsUnwatchResult = Empty;
export type FsWatchesArgs = Empty;
export interface FsWatchesResult { watches: { id: string; path: string; recursive: boolean; dirs: number }[] }

export type SecretsSetArgs = Record<string, string | Uint8Array>;
export interface SecretsSetResult { names: string[] }
export interface SecretsUnsetArgs { names: string[] }
export interface SecretsUnsetResult { unset: string[] }
export type SecretsListArgs = Empty;
export interface SecretsListResult { names: string[] }

export interface ArtifactRef { id: string; sha256: string; size: number; media_type: string; name: string }
export interface ArtifactPublishArgs {
  path: string;
  as?: string;
  follow_symlinks?: boolean;
  name?: string;
  media_type?: string;
}
export interface ArtifactPublishResult extends ArtifactRef { created: number; preview: Uint8Array | null }
export interface ArtifactReadArgs { id: string; offset?: number; length?: number }
export interface ArtifactReadResult { data: Uint8Array; offset: number; size: number; eof: boolean }
export type ArtifactListArgs = Empty;
export interface ArtifactListResult { artifacts: (ArtifactRef & { created: number })[]; truncated: boolean }

export type RuntimeListArgs = Empty;
export interface RuntimeStatus {
  name: string;
  mode?: string;
  workspace?: string;
  state: string;
  reason?: string;
  pid?: number;
  pty?: string;
  proc?: string;
  port?: number;
  password?: string;
  started?: number;
  ready_ms?: number | null;
  exit?: Exit | null;
  restarts?: number;
  paused?: boolean;
  limits?: unknown;
}
export interface RuntimeInfo {
  name: string;
  state: "available" | "unavailable";
  reason: string | null;
  version: string | null;
  program: string | null;
  modes: string[];
  resume: string;
  tasks: boolean;
  busy: string;
  user: string;
  workspace: string;
  running: RuntimeStatus | null;
}
export interface RuntimeListResult { runtimes: RuntimeInfo[] }
export interface RuntimeStartArgs {
  name: string;
  mode: "tui" | "server" | "rpc";
  workspace?: string;
  resume?: boolean;
  port?: number;
  env?: Record<string, string>;
  cols?: number;
  rows?: number;
  limits?: LimitsArg;
}
export type RuntimeStartResult = RuntimeStatus;
export interface RuntimeStopArgs { name: string }
export type RuntimeStopResult = Empty;
export interface RuntimeStatusArgs { name: string }
export type RuntimeStatusResult = RuntimeStatus;
export interface RuntimePauseArgs { name: string }
export interface RuntimePauseResult { frozen: boolean }
export interface RuntimeResumeArgs { name: string }
export type RuntimeResumeResult = Empty;

export interface TaskRunArgs {
  runtime: string;
  prompt: string;
  checks?: string[][];
  timeout_s?: number;
  env?: Record<string, string>;
  limits?: LimitsArg;
}
export interface TaskRunResult { id: string; state: string; position?: number }
export interface TaskShowArgs { id: string }
export interface TaskRecord {
  id: string;
  runtime: string;
  prompt: string;
  checks: { argv: string[]; ran: boolean; exit: Exit | null; started: number | null; finished: number | null; bytes: number }[];
  env: string[];
  timeout_s: number;
  state: string;
  reason: string | null;
  failed_check: number | null;
  cancelled_by: string | null;
  created: number;
  started: number | null;
  finished: number | null;
  agent: { exit: Exit | null; bytes: number; stderr_bytes: number };
  delivery: unknown;
  position: number | null;
}
export type TaskShowResult = TaskRecord;
export interface TaskListArgs { runtime?: string; state?: string }
export interface TaskListResult { tasks: TaskRecord[]; truncated: boolean }
export interface TaskAttachArgs { id: string; stream?: string; from_offset?: number }
export interface TaskAttachResult { id: string; state: string; stream: string; offset: number; end: number; ended: boolean }
export interface TaskCancelArgs { id: string }
export type TaskCancelResult = Empty;
export interface TaskDeliverArgs {
  id: string;
  branch: string;
  commit_message: string;
  author?: { name: string; email: string };
  push?: boolean;
  repo?: string;
  credential?: { username?: string; password: string };
  force?: boolean;
}
export interface TaskDeliverResult {
  id: string;
  branch: string;
  commit: string;
  base: string;
  pushed: boolean;
  stat: { files: number; insertions: number; deletions: number };
  diffstat: string;
  diff: ArtifactPublishResult;
}

export interface GrantInfo {
  id: string;
  scope: string;
  label: string;
  visibility: "private" | "public";
  created: number;
  expires_at: number;
  redeemed: boolean;
}
export interface GrantCreateArgs {
  scope: string;
  ttl_s?: number;
  expires_at?: number;
  label?: string;
  visibility?: "private" | "public";
}
export interface GrantCreateResult extends GrantInfo { token: string; url: string }
export type GrantListArgs = Empty;
export interface GrantListResult { grants: GrantInfo[] }
export interface GrantRevokeArgs { id: string }
export type GrantRevokeResult = Empty;

export type PortListArgs = Empty;
export interface PortInfo { port: number; address: string; pid: number; command: string; user: string; since: number }
export interface PortListResult { ports: PortInfo[]; mechanism: string }

export interface DesktopScreenshotArgs {
  region?: Region;
  scale?: number;
  format?: "png" | "jpeg";
  quality?: number;
  cursor?: boolean;
}
export interface DesktopScreenshotResult {
  format: "png" | "jpeg";
  width: number;
  height: number;
  region: Region;
  scale: number;
  data: Uint8Array;
  taken: number;
  timing: { capture_ms: number; encode_ms: number };
}
export type DesktopAction =
  | { type: "move"; x: number; y: number }
  | { type: "down" | "up"; button?: number | string }
  | { type: "click"; button?: number | string; x?: number; y?: number; count?: number }
  | { type: "drag"; from: { x: number; y: number }; to: { x: number; y: number }; button?: number | string; steps?: number }
  | { type: "scroll"; dx?: number; dy?: number; x?: number; y?: number }
  | { type: "key"; combo: string }
  | { type: "key_down" | "key_up"; key: string }
  | { type: "type"; text: string; delay_ms?: number };
export interface DesktopInputArgs { actions: DesktopAction[] }
export interface DesktopInputResult { done: number }
export type DesktopCursorArgs = Empty;
export interface DesktopCursorResult { x: number; y: number }
export type DesktopInfoArgs = Empty;
export interface DesktopInfoResult { display: string; width: number; height: number; depth: number; screens: Region[]; shm: boolean }
export type DesktopWindowsArgs = Empty;
export interface DesktopWindow {
  id: number;
  title: string | null;
  class: string | null;
  instance: string | null;
  x: number;
  y: number;
  width: number;
  height: number;
  active: boolean;
  desktop: number | null;
}
export interface DesktopWindowsResult { windows: DesktopWindow[] }
export interface DesktopWaitChangeArgs { region?: Region; timeout_ms?: number }
export interface DesktopWaitChangeResult { changed: boolean; waited_ms: number; area?: Region }

export interface RecordStartArgs {
  fps?: number;
  region?: Region;
  max_seconds?: number;
  max_bytes?: number;
  quality?: number;
}
export interface RecordStartResult { id: string; started: number; fps: number; region: Region; encoder: string }
export interface RecordStopArgs { id: string }
export interface RecordStopResult {
  id: string;
  artifact: ArtifactRef;
  duration_ms: number;
  frames: number;
  dropped: number;
  started: number;
}
export interface RecordStatusArgs { id?: string }
/** Why a recording ended. */
export type RecordingEnd = "stop" | "max_seconds" | "max_bytes" | "x_lost" | "capture_failed" | "error";
export interface RecordingInfo {
  id: string;
  state: "recording" | "finishing" | "published" | "failed";
  started: number;
  fps: number;
  region: Region;
  encoder: string;
  frames: number;
  dropped: number;
  bytes: number;
  duration_ms: number;
  end: RecordingEnd | null;
  max_bytes: number;
  artifact: ArtifactRef | null;
  reason?: string;
}
export interface RecordStatusResult { recordings: RecordingInfo[] }

export interface Ops {
  "hello": { args: HelloArgs; result: HelloResult };
  "ping": { args: PingArgs; result: PingResult };
  "state": { args: StateArgs; result: StateResult };
  "events.subscribe": { args: EventsSubscribeArgs; result: EventsSubscribeResult };
  "events.unsubscribe": { args: EventsUnsubscribeArgs; result: EventsUnsubscribeResult };
  "service.list": { args: ServiceListArgs; result: ServiceListResult };
  "service.status": { args: ServiceStatusArgs; result: ServiceStatusResult };
  "service.start": { args: ServiceStartArgs; result: ServiceStartResult };
  "service.stop": { args: ServiceStopArgs; result: ServiceStopResult };
  "service.restart": { args: ServiceRestartArgs; result: ServiceRestartResult };
  "service.signal": { args: ServiceSignalArgs; result: ServiceSignalResult };
  "pty.open": { args: PtyOpenArgs; result: PtyOpenResult };
  "pty.attach": { args: PtyAttachArgs; result: PtyAttachResult };
  "pty.detach": { args: PtyDetachArgs; result: PtyDetachResult };
  "pty.input": { args: PtyInputArgs; result: PtyInputResult };
  "pty.resize": { args: PtyResizeArgs; result: PtyResizeResult };
  "pty.signal": { args: PtySignalArgs; result: PtySignalResult };
  "pty.close": { args: PtyCloseArgs; result: PtyCloseResult };
  "pty.list": { args: PtyListArgs; result: PtyListResult };
  "proc.start": { args: ProcStartArgs; result: ProcStartResult };
  "proc.attach": { args: ProcAttachArgs; result: ProcAttachResult };
  "proc.ack": { args: ProcAckArgs; result: ProcAckResult };
  "proc.detach": { args: ProcDetachArgs; result: ProcDetachResult };
  "proc.input": { args: ProcInputArgs; result: ProcInputResult };
  "proc.close_stdin": { args: ProcCloseStdinArgs; result: ProcCloseStdinResult };
  "proc.signal": { args: ProcSignalArgs; result: ProcSignalResult };
  "proc.wait": { args: ProcWaitArgs; result: ProcWaitResult };
  "proc.list": { args: ProcListArgs; result: ProcListResult };
  "fs.stat": { args: FsStatArgs; result: FsStatResult };
  "fs.list": { args: FsListArgs; result: FsListResult };
  "fs.read": { args: FsReadArgs; result: FsReadResult };
  "fs.write": { args: FsWriteArgs; result: FsWriteResult };
  "fs.mkdir": { args: FsMkdirArgs; result: FsMkdirResult };
  "fs.move": { args: FsMoveArgs; result: FsMoveResult };
  "fs.remove": { args: FsRemoveArgs; result: FsRemoveResult };
  "fs.chmod": { args: FsChmodArgs; result: FsChmodResult };
  "fs.watch": { args: FsWatchArgs; result: FsWatchResult };
  "fs.unwatch": { args: FsUnwatchArgs; result: FsUnwatchResult };
  "fs.watches": { args: FsWatchesArgs; result: FsWatchesResult };
  "secrets.set": { args: SecretsSetArgs; result: SecretsSetResult };
  "secrets.unset": { args: SecretsUnsetArgs; result: SecretsUnsetResult };
  "secrets.list": { args: SecretsListArgs; result: SecretsListResult };
  "artifact.publish": { args: ArtifactPublishArgs; result: ArtifactPublishResult };
  "artifact.read": { args: ArtifactReadArgs; result: ArtifactReadResult };
  "artifact.list": { args: ArtifactListArgs; result: ArtifactListResult };
  "runtime.list": { args: RuntimeListArgs; result: RuntimeListResult };
  "runtime.start": { args: RuntimeStartArgs; result: RuntimeStartResult };
  "runtime.stop": { args: RuntimeStopArgs; result: RuntimeStopResult };
  "runtime.status": { args: RuntimeStatusArgs; result: RuntimeStatusResult };
  "runtime.pause": { args: RuntimePauseArgs; result: RuntimePauseResult };
  "runtime.resume": { args: RuntimeResumeArgs; result: RuntimeResumeResult };
  "task.run": { args: TaskRunArgs; result: TaskRunResult };
  "task.show": { args: TaskShowArgs; result: TaskShowResult };
  "task.list": { args: TaskListArgs; result: TaskListResult };
  "task.attach": { args: TaskAttachArgs; result: TaskAttachResult };
  "task.cancel": { args: TaskCancelArgs; result: TaskCancelResult };
  "task.deliver": { args: TaskDeliverArgs; result: TaskDeliverResult };
  "grant.create": { args: GrantCreateArgs; result: GrantCreateResult };
  "grant.list": { args: GrantListArgs; result: GrantListResult };
  "grant.revoke": { args: GrantRevokeArgs; result: GrantRevokeResult };
  "port.list": { args: PortListArgs; result: PortListResult };
  "desktop.screenshot": { args: DesktopScreenshotArgs; result: DesktopScreenshotResult };
  "desktop.input": { args: DesktopInputArgs; result: DesktopInputResult };
  "desktop.cursor": { args: DesktopCursorArgs; result: DesktopCursorResult };
  "desktop.info": { args: DesktopInfoArgs; result: DesktopInfoResult };
  "desktop.windows": { args: DesktopWindowsArgs; result: DesktopWindowsResult };
  "desktop.wait_change": { args: DesktopWaitChangeArgs; result: DesktopWaitChangeResult };
  "record.start": { args: RecordStartArgs; result: RecordStartResult };
  "record.stop": { args: RecordStopArgs; result: RecordStopResult };
  "record.status": { args: RecordStatusArgs; result: RecordStatusResult };
}
export type OpName = keyof Ops;
export type Args<O extends OpName> = Ops[O]["args"];
export type Result<O extends OpName> = Ops[O]["result"];

export interface OpInfo {
  server: "berthd" | "berth-desktop";
  access: "any" | "local";
  waits: boolean;
}

const B = (waits = false): OpInfo => ({ server: "berthd", access: "any", waits });
const D = (waits = false): OpInfo => ({ server: "berth-desktop", access: "any", waits });

export const OPS: { readonly [O in OpName]: OpInfo } = {
  "hello": B(),
  "ping": B(),
  "state": B(),
  "events.subscribe": B(),
  "events.unsubscribe": B(),
  "service.list": B(),
  "service.status": B(),
  "service.start": B(),
  "service.stop": B(),
  "service.restart": B(),
  "service.signal": B(),
  "pty.open": B(),
  "pty.attach": B(),
  "pty.detach": B(),
  "pty.input": B(),
  "pty.resize": B(),
  "pty.signal": B(),
  "pty.close": B(),
  "pty.list": B(),
  "proc.start": B(),
  "proc.attach": B(),
  "proc.ack": B(),
  "proc.detach": B(),
  "proc.input": B(),
  "proc.close_stdin": B(),
  "proc.signal": B(),
  "proc.wait": B(true),
  "proc.list": B(),
  "fs.stat": B(),
  "fs.list": B(),
  "fs.read": B(),
  "fs.write": B(),
  "fs.mkdir": B(),
  "fs.move": B(),
  "fs.remove": B(),
  "fs.chmod": B(),
  "fs.watch": B(),
  "fs.unwatch": B(),
  "fs.watches": B(),
  "secrets.set": B(),
  "secrets.unset": B(),
  "secrets.list": B(),
  "artifact.publish": B(true),
  "artifact.read": B(),
  "artifact.list": B(),
  "runtime.list": B(),
  "runtime.start": B(),
  "runtime.stop": B(true),
  "runtime.status": B(),
  "runtime.pause": B(),
  "runtime.resume": B(),
  "task.run": B(),
  "task.show": B(),
  "task.list": B(),
  "task.attach": B(),
  "task.cancel": B(),
  "task.deliver": B(true),
  "grant.create": B(),
  "grant.list": B(),
  "grant.revoke": B(),
  "port.list": B(),
  "desktop.screenshot": D(),
  "desktop.input": D(),
  "desktop.cursor": D(),
  "desktop.info": D(),
  "desktop.windows": D(),
  "desktop.wait_change": D(true),
  "record.start": D(),
  "record.stop": D(true),
  "record.status": D(),
};

interface ExitData { code?: number; signal?: number; core?: boolean }
export interface BerthdStartedData { boot_id: string; pid: number; version: string }
export interface ServiceReadyData { name: string }
export interface ServiceStartedData { name: string; pid: number }
export interface CheckChangedData { name: string; ok: boolean; reason: string }
export interface PtyOpenedData { id: string; pid: number; command: string[] }
export interface PtyExitedData extends ExitData { id: string; pid: number }
export interface PtyClosedData { id: string; reason: string }
export interface ProcStartedData { id: string; pid: number; command: string[]; tag: string }
export interface ProcExitedData extends ExitData {
  id: string;
  pid: number;
  timed_out: boolean;
  oom_killed: boolean;
  stdout_bytes: number;
  stderr_bytes: number;
  duration_ms: number;
}
export interface FsChange { path: string; kind: "created" | "modified" | "deleted" | "moved"; from?: string }
export interface FsChangedData { watch: string; changes: FsChange[] }
export interface FsOverflowData { watch: string; reason: "burst" | "kernel" | "limit"; lost?: number }
export type ArtifactPublishedData = ArtifactRef;
export interface SecretsChangedData { set?: string[]; unset?: string[] }
export interface GrantCreatedData { id: string; scope: string; label: string; visibility: string; expires_at: number }
export interface GrantRevokedData { id: string; scope: string; label: string }
export interface PortOpenedData { port: number; address: string; pid: number; command: string; user: string }
export interface PortClosedData { port: number; address: string }
export type RecordStartedData = RecordStartResult;
export type RecordPublishedData = RecordStopResult;
export interface RecordFailedData { id: string; reason: string }
export interface EventsGapData { requested: number; first_seq: number; lost: number }

export interface Events {
  "berthd.started": BerthdStartedData;
  "service.started": ServiceStartedData;
  "service.ready": ServiceReadyData;
  "check.changed": CheckChangedData;
  "pty.opened": PtyOpenedData;
  "pty.exited": PtyExitedData;
  "pty.closed": PtyClosedData;
  "proc.started": ProcStartedData;
  "proc.exited": ProcExitedData;
  "fs.changed": FsChangedData;
  "fs.overflow": FsOverflowData;
  "artifact.published": ArtifactPublishedData;
  "secrets.changed": SecretsChangedData;
  "grant.created": GrantCreatedData;
  "grant.revoked": GrantRevokedData;
  "port.opened": PortOpenedData;
  "port.closed": PortClosedData;
  "record.started": RecordStartedData;
  "record.published": RecordPublishedData;
  "record.failed": RecordFailedData;
  "events.gap": EventsGapData;
}
export type EventKind = keyof Events;
export type BerthEvent = { [K in EventKind]: { seq: number; ts: number; kind: K; data: Events[K] } }[EventKind];
