// generated from protocol/berth.v1.json by protocol/gen_ts.py; do not edit

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
  | "unknown_type"
  | "bad_id"
  | "duplicate_id"
  | "cancelled";

export const ERROR_CODES: readonly ErrorCode[] = [
  "bad_message",
  "too_large",
  "unsupported_version",
  "hello_required",
  "unknown_op",
  "bad_args",
  "forbidden",
  "unauthorized",
  "not_found",
  "conflict",
  "unavailable",
  "git_failed",
  "internal",
  "permission_denied",
  "exists",
  "not_a_directory",
  "is_a_directory",
  "not_empty",
  "no_space",
  "io_error",
  "symlink",
  "unknown_type",
  "bad_id",
  "duplicate_id",
  "cancelled",
];

export type Empty = Record<string, never>;
/** how a process ended: its exit status, or the signal that killed it */
export type Exit = { code: number; } | { signal: number; core: boolean; };
export interface Region {
  x: number;
  y: number;
  width: number;
  height: number;
}
export interface Point {
  x: number;
  y: number;
}
export interface LimitsArg {
  cpu_millis?: number;
  memory_bytes?: number;
  max_processes?: number;
  disk_bytes?: number;
  open_files?: number;
}
/** limits.status's answer without target */
export interface LimitsReport {
  cgroup: string | null;
  frozen: boolean;
  limits: Record<string, { value: number; enforced: boolean; how: string; }>;
  usage: Record<string, number>;
  oom_kills: number;
}
/** a signal's name, with or without SIG, or its number */
export type SignalArg = string | number;
export type SecretsArg = "all" | string[] | null;
export interface ServiceInfo {
  name: string;
  kind: "service" | "check";
  state: "waiting" | "starting" | "ready" | "unready" | "backoff" | "stopping" | "stopped" | "failed";
  reason: string;
  pid: number;
  since: number;
  uptime_ms: number;
  restarts: number;
  required: boolean;
  last_exit: Exit | null;
}
export interface ServiceDetail extends ServiceInfo {
  command: string[];
  after: string[];
  requires: string[];
  probe: string;
  restart_policy: string;
  main: boolean;
}
export interface CheckInfo {
  ok: boolean;
  reason: string;
  since: number;
}
export interface PtySession {
  id: string;
  command: string[];
  pid: number;
  cols: number;
  rows: number;
  viewers: number;
  bytes: number;
  state: "running" | "exited";
  exit: Exit | null;
  created: number;
  ttl_detached: number;
  limits: LimitsReport;
}
export interface StreamPlace {
  offset: number;
  lost: number;
  end: number;
}
export interface ProcInfo {
  id: string;
  pid: number;
  command: string[];
  tag: string;
  stdin_bytes: number;
  state: "running" | "exited";
  exit: Exit | null;
  timed_out: boolean;
  started: number;
  stdout_bytes: number;
  stderr_bytes: number;
  limits: LimitsReport;
}
export interface FsCommon {
  as?: string;
  follow_symlinks?: boolean;
}
export type FileType = "file" | "dir" | "symlink" | "other";
export interface FsEntry {
  path: string;
  name: string;
  type: FileType;
  size: number;
  mode: number;
  mtime: number;
  target?: string;
}
export interface FsChange {
  path: string;
  kind: "created" | "modified" | "deleted" | "moved";
  from?: string;
}
export interface FsWatchInfo {
  id: string;
  path: string;
  recursive: boolean;
  dirs: number;
}
export interface ArtifactRef {
  id: string;
  sha256: string;
  size: number;
  media_type: string;
  name: string;
}
export interface ArtifactEntry extends ArtifactRef {
  created: number;
}
export interface ArtifactPublished extends ArtifactRef {
  created: number;
  preview: Uint8Array | null;
}
export type RuntimeMode = "tui" | "server" | "rpc";
export interface RuntimeStatus {
  name: string;
  mode?: RuntimeMode;
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
  limits?: LimitsReport;
}
export interface RuntimeInfo {
  name: string;
  state: "available" | "unavailable";
  reason: string | null;
  version: string | null;
  program: string | null;
  modes: RuntimeMode[];
  resume: string;
  tasks: boolean;
  busy: string;
  user: string;
  workspace: string;
  running: RuntimeStatus | null;
}
export interface TaskCheck {
  argv: string[];
  ran: boolean;
  exit: Exit | null;
  started: number | null;
  finished: number | null;
  bytes: number;
}
export interface TaskRecord {
  id: string;
  runtime: string;
  prompt: string;
  checks: TaskCheck[];
  env: string[];
  timeout_s: number;
  state: string;
  reason: string | null;
  failed_check: number | null;
  cancelled_by: string | null;
  created: number;
  started: number | null;
  finished: number | null;
  agent: { exit: Exit | null; bytes: number; stderr_bytes: number; };
  delivery: unknown;
  position: number | null;
}
export interface Credential {
  username?: string;
  password: string;
}
export type Visibility = "private" | "public";
export interface GrantInfo {
  id: string;
  scope: string;
  label: string;
  visibility: Visibility;
  created: number;
  expires_at: number;
  redeemed: boolean;
}
export interface PortInfo {
  port: number;
  address: string;
  pid: number;
  command: string;
  user: string;
  since: number;
}
export type Button = number | string;
export type DesktopAction = { type: "move"; x: number; y: number; } | { type: "down" | "up"; button?: Button; } | { type: "click"; button?: Button; x?: number; y?: number; count?: number; } | { type: "drag"; from: Point; to: Point; button?: Button; steps?: number; } | { type: "scroll"; dx?: number; dy?: number; x?: number; y?: number; } | { type: "key"; combo: string; } | { type: "key_down" | "key_up"; key: string; } | { type: "type"; text: string; delay_ms?: number; };
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
/** why a recording ended */
export type RecordingEnd = "stop" | "max_seconds" | "max_bytes" | "x_lost" | "capture_failed" | "error";
export interface Features {
  desktop: boolean;
  recording: boolean;
  runtimes: string[];
  previews: boolean;
  idempotency_keys: number;
}
/** 1..128 bytes of printable ASCII (0x21..0x7e): a repeat within a boot is answered the first's result */
export type IdempotencyKey = string;

/** handshake: version, boot id, labels, capabilities */
export interface HelloArgs {
  version: string;
  client?: string;
}
export interface HelloResult {
  version: string;
  agent_version: string;
  boot_id: string;
  labels: Record<string, string>;
  capabilities: string[];
  limits: { max_message: number; max_depth: number; max_in_flight?: number; };
  pid: number;
  started_at: number;
  features?: Features;
}
/** liveness round trip */
export type PingArgs = Empty;
export interface PingResult {
  ts: number;
  boot_id: string;
}
/** what runs: services with pids, states and uptimes; checks */
export type StateArgs = Empty;
export interface StateResult {
  boot_id: string;
  version: string;
  agent_version?: string;
  pid: number;
  started_at: number;
  uptime_ms: number;
  first_seq: number;
  last_seq: number;
  services: ServiceInfo[];
  checks: Record<string, CheckInfo>;
}
/** replay the journal from a seq, then follow live */
export interface EventsSubscribeArgs {
  from_seq?: number;
}
export interface EventsSubscribeResult {
  first_seq: number;
  last_seq: number;
  from_seq: number;
}
/** stop the event stream of this connection */
export type EventsUnsubscribeArgs = Empty;
export type EventsUnsubscribeResult = Empty;
/** cancel a waiting request of this connection */
export interface RequestCancelArgs {
  id: number;
}
export interface RequestCancelResult {
  cancelled: boolean;
}
/** every service with its state */
export type ServiceListArgs = Empty;
export interface ServiceListResult {
  services: ServiceInfo[];
}
/** one service in detail */
export interface ServiceStatusArgs {
  name: string;
}
export type ServiceStatusResult = ServiceDetail;
/** start a stopped or failed service */
export interface ServiceStartArgs {
  name: string;
}
export type ServiceStartResult = ServiceDetail;
/** stop a service; it stays stopped */
export interface ServiceStopArgs {
  name: string;
}
export type ServiceStopResult = ServiceDetail;
/** stop a service and start it again */
export interface ServiceRestartArgs {
  name: string;
}
export type ServiceRestartResult = ServiceDetail;
/** send a signal to a service's process group */
export interface ServiceSignalArgs {
  name: string;
  signal: SignalArg;
}
export interface ServiceSignalResult {
  name: string;
  signal: number;
}
/** a berth program reports a service's readiness */
export interface CheckReportArgs {
  name: string;
  ok: boolean;
  reason?: string;
}
export type CheckReportResult = Empty;
/** start a program on a new terminal session */
export interface PtyOpenArgs {
  argv?: string[];
  cwd?: string;
  env?: Record<string, string>;
  user?: string;
  cols?: number;
  rows?: number;
  ttl_detached?: number;
  ring?: number;
  secrets?: SecretsArg;
  redact?: boolean;
  limits?: LimitsArg;
  key?: IdempotencyKey;
}
export interface PtyOpenResult {
  id: string;
  pid: number;
  cols: number;
  rows: number;
}
/** watch a session's output from an offset, or its redrawn screen */
export interface PtyAttachArgs {
  id: string;
  from_offset?: number;
  mode?: "bytes" | "screen";
  readonly?: boolean;
}
export interface PtyAttachResult {
  offset: number;
  lost: number;
  end: number;
  cols: number;
  rows: number;
  state: "running" | "exited";
  screen?: Uint8Array;
}
/** stop watching a session */
export interface PtyDetachArgs {
  id: string;
}
export type PtyDetachResult = Empty;
/** type into a session */
export interface PtyInputArgs {
  id: string;
  data: Uint8Array;
}
export type PtyInputResult = Empty;
/** set a session's terminal size */
export interface PtyResizeArgs {
  id: string;
  cols: number;
  rows: number;
}
export type PtyResizeResult = Empty;
/** signal a session's foreground process group */
export interface PtySignalArgs {
  id: string;
  signal: SignalArg;
}
export type PtySignalResult = Empty;
/** end a session and forget it */
export interface PtyCloseArgs {
  id: string;
}
export type PtyCloseResult = Empty;
/** every session with its state */
export type PtyListArgs = Empty;
export interface PtyListResult {
  sessions: PtySession[];
}
/** run a command; its stdout and stderr are kept by offset */
export interface ProcStartArgs {
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
  secrets?: SecretsArg;
  redact?: boolean;
  limits?: LimitsArg;
  key?: IdempotencyKey;
}
export interface ProcStartResult {
  id: string;
  pid: number;
}
/** read a command's stdout and stderr from offsets */
export interface ProcAttachArgs {
  id: string;
  from_offset?: number | { stdout: number; stderr: number; };
  ack?: boolean;
}
export interface ProcAttachResult {
  id: string;
  state: "running" | "exited";
  stdout: StreamPlace;
  stderr: StreamPlace;
}
/** say how much output this connection has, so none is lost */
export interface ProcAckArgs {
  id: string;
  stdout?: number;
  stderr?: number;
}
export type ProcAckResult = Empty;
/** stop reading a command's output */
export interface ProcDetachArgs {
  id: string;
}
export type ProcDetachResult = Empty;
/** write to a command's stdin */
export interface ProcInputArgs {
  id: string;
  data: Uint8Array;
  offset?: number;
}
export interface ProcInputResult {
  stdin_bytes: number;
}
/** close a command's stdin (it reads end of file) */
export interface ProcCloseStdinArgs {
  id: string;
}
export type ProcCloseStdinResult = Empty;
/** signal a command's process group */
export interface ProcSignalArgs {
  id: string;
  signal: SignalArg;
}
export type ProcSignalResult = Empty;
/** answer when a command has exited */
export interface ProcWaitArgs {
  id: string;
  timeout_ms?: number;
}
export interface ProcWaitResult {
  id: string;
  state: "running" | "exited";
  exit: Exit | null;
  timed_out: boolean;
  oom_killed: boolean;
  stdout_bytes: number;
  stderr_bytes: number;
}
/** every command with its state */
export type ProcListArgs = Empty;
export interface ProcListResult {
  procs: ProcInfo[];
}
/** a file's type, size, mode, owner and times */
export interface FsStatArgs extends FsCommon {
  path: string;
  follow?: boolean;
}
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
/** a directory's entries, to a depth */
export interface FsListArgs extends FsCommon {
  path: string;
  depth?: number;
  limit?: number;
}
export interface FsListResult {
  path: string;
  entries: FsEntry[];
  truncated: boolean;
  skipped: number;
}
/** a range of a file's bytes */
export interface FsReadArgs extends FsCommon {
  path: string;
  offset?: number;
  length?: number;
}
export interface FsReadResult {
  data: Uint8Array;
  offset: number;
  size: number;
  eof: boolean;
}
/** upload a file in chunks; it appears whole when done */
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
export interface FsWriteResult {
  path: string;
  pending?: number;
  size?: number;
}
/** make a directory */
export interface FsMkdirArgs extends FsCommon {
  path: string;
  parents?: boolean;
  mode?: number;
}
export interface FsMkdirResult {
  path: string;
}
/** rename a file or directory */
export interface FsMoveArgs extends FsCommon {
  from: string;
  to: string;
  overwrite?: boolean;
}
export interface FsMoveResult {
  from: string;
  to: string;
}
/** remove a file, or a directory tree */
export interface FsRemoveArgs extends FsCommon {
  path: string;
  recursive?: boolean;
}
export interface FsRemoveResult {
  path: string;
  removed: number;
}
/** change a file's permission bits */
export interface FsChmodArgs extends FsCommon {
  path: string;
  mode: number;
}
export interface FsChmodResult {
  path: string;
  mode: number;
}
/** journal the changes under a path as fs.changed events */
export interface FsWatchArgs extends FsCommon {
  path: string;
  recursive?: boolean;
}
export interface FsWatchResult {
  id: string;
  path: string;
}
/** end a watch */
export interface FsUnwatchArgs {
  id: string;
}
export type FsUnwatchResult = Empty;
/** every watch */
export type FsWatchesArgs = Empty;
export interface FsWatchesResult {
  watches: FsWatchInfo[];
}
/** give berthd named secret values (never returned) */
export type SecretsSetArgs = { key?: IdempotencyKey; } & Record<string, string | Uint8Array>;
export interface SecretsSetResult {
  names: string[];
}
/** forget named secrets */
export interface SecretsUnsetArgs {
  names: string[];
}
export interface SecretsUnsetResult {
  unset: string[];
}
/** the names of the secrets held */
export type SecretsListArgs = Empty;
export interface SecretsListResult {
  names: string[];
}
/** store a file by content; answer with a reference */
export interface ArtifactPublishArgs extends FsCommon {
  path: string;
  name?: string;
  media_type?: string;
  key?: IdempotencyKey;
}
export type ArtifactPublishResult = ArtifactPublished;
/** a range of a published artifact's bytes */
export interface ArtifactReadArgs {
  id: string;
  offset?: number;
  length?: number;
}
export interface ArtifactReadResult {
  data: Uint8Array;
  offset: number;
  size: number;
  eof: boolean;
}
/** every published artifact */
export type ArtifactListArgs = Empty;
export interface ArtifactListResult {
  artifacts: ArtifactEntry[];
  truncated: boolean;
}
/** the agent runtimes of this image, each with its detected version */
export type RuntimeListArgs = Empty;
export interface RuntimeListResult {
  runtimes: RuntimeInfo[];
}
/** start a runtime in a mode (tui, server, rpc) in its workspace */
export interface RuntimeStartArgs {
  name: string;
  mode: RuntimeMode;
  workspace?: string;
  resume?: boolean;
  port?: number;
  env?: Record<string, string>;
  cols?: number;
  rows?: number;
  limits?: LimitsArg;
}
export type RuntimeStartResult = RuntimeStatus;
/** stop a runtime; answer once it has exited */
export interface RuntimeStopArgs {
  name: string;
}
export type RuntimeStopResult = Empty;
/** a runtime's instance: mode, state, pid, its pty or proc, port */
export interface RuntimeStatusArgs {
  name: string;
}
export type RuntimeStatusResult = RuntimeStatus;
/** freeze every process of a running runtime */
export interface RuntimePauseArgs {
  name: string;
}
export interface RuntimePauseResult {
  frozen: boolean;
}
/** thaw a paused runtime */
export interface RuntimeResumeArgs {
  name: string;
}
export type RuntimeResumeResult = Empty;
/** what bounds a runtime, command, session or task, by which mechanism, and its usage */
export interface LimitsStatusArgs {
  target: string;
}
export interface LimitsStatusResult extends LimitsReport {
  target: string;
}
/** clone or update a runtime's workspace from an https repository */
export interface WorkspacePrepareArgs {
  runtime: string;
  repo: string;
  branch?: string;
  dir?: string;
  credential?: Credential;
}
export interface WorkspacePrepareResult {
  dir: string;
  repo: string;
  branch: string;
  commit: string;
  cloned: boolean;
  duration_ms: number;
}
/** run a prompt through a runtime, then its checks, as a task kept on disk */
export interface TaskRunArgs {
  runtime: string;
  prompt: string;
  checks?: (string[])[];
  timeout_s?: number;
  env?: Record<string, string>;
  limits?: LimitsArg;
  key?: IdempotencyKey;
}
export interface TaskRunResult {
  id: string;
  state: string;
  position?: number;
}
/** one task's record: request, state, times, outputs, result */
export interface TaskShowArgs {
  id: string;
}
export type TaskShowResult = TaskRecord;
/** every task kept, newest first */
export interface TaskListArgs {
  runtime?: string;
  state?: string;
}
export interface TaskListResult {
  tasks: TaskRecord[];
  truncated: boolean;
}
/** read a task's output stream from an offset, and follow it */
export interface TaskAttachArgs {
  id: string;
  stream?: string;
  from_offset?: number;
}
export interface TaskAttachResult {
  id: string;
  state: string;
  stream: string;
  offset: number;
  end: number;
  ended: boolean;
}
/** end a task: its whole process tree, or its place in the queue */
export interface TaskCancelArgs {
  id: string;
}
export type TaskCancelResult = Empty;
/** commit a task's workspace on a new branch, push it if asked, publish the diff */
export interface TaskDeliverArgs {
  id: string;
  branch: string;
  commit_message: string;
  author?: { name: string; email: string; };
  push?: boolean;
  repo?: string;
  credential?: Credential;
  force?: boolean;
}
export interface TaskDeliverResult {
  id: string;
  branch: string;
  commit: string;
  base: string;
  pushed: boolean;
  stat: { files: number; insertions: number; deletions: number; };
  diffstat: string;
  diff: ArtifactPublished;
}
/** a scoped, expiring credential and its link: a viewer, a port, a runtime */
export interface GrantCreateArgs {
  scope: string;
  ttl_s?: number;
  expires_at?: number;
  label?: string;
  visibility?: Visibility;
  key?: IdempotencyKey;
}
export interface GrantCreateResult extends GrantInfo {
  token: string;
  url: string;
}
/** the live grants, without their tokens */
export type GrantListArgs = Empty;
export interface GrantListResult {
  grants: GrantInfo[];
}
/** end a grant now, and what it opened */
export interface GrantRevokeArgs {
  id: string;
}
export type GrantRevokeResult = Empty;
/** the TCP ports listened on in the sandbox, by whom, since when */
export type PortListArgs = Empty;
export interface PortListResult {
  ports: PortInfo[];
  mechanism: string;
}
/** berth-desktop serves the desktop ops on this connection */
export type DesktopProvideArgs = Empty;
export type DesktopProvideResult = Empty;
/** berth-desktop journals a recording's event */
export interface DesktopEmitArgs {
  kind: "record.started" | "record.published" | "record.failed";
  data: Record<string, unknown>;
}
export type DesktopEmitResult = Empty;
/** the screen, or a region, as PNG or JPEG */
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
  timing: { capture_ms: number; encode_ms: number; };
}
/** mouse, keys and text, through XTest */
export interface DesktopInputArgs {
  actions: DesktopAction[];
}
export interface DesktopInputResult {
  done: number;
}
/** where the pointer is */
export type DesktopCursorArgs = Empty;
export type DesktopCursorResult = Point;
/** the screen's size, depth and screens */
export type DesktopInfoArgs = Empty;
export interface DesktopInfoResult {
  display: string;
  width: number;
  height: number;
  depth: number;
  screens: Region[];
  shm: boolean;
}
/** the windows the window manager lists */
export type DesktopWindowsArgs = Empty;
export interface DesktopWindowsResult {
  windows: DesktopWindow[];
}
/** answer when the screen (or a region) changes */
export interface DesktopWaitChangeArgs {
  region?: Region;
  timeout_ms?: number;
}
export interface DesktopWaitChangeResult {
  changed: boolean;
  waited_ms: number;
  area?: Region;
}
/** start recording the screen (or a region) to MP4 */
export interface RecordStartArgs {
  fps?: number;
  region?: Region;
  max_seconds?: number;
  max_bytes?: number;
  quality?: number;
  key?: IdempotencyKey;
}
export interface RecordStartResult {
  id: string;
  started: number;
  fps: number;
  region: Region;
  encoder: string;
}
/** end a recording; answer once it is published as an artifact */
export interface RecordStopArgs {
  id: string;
}
export interface RecordStopResult {
  id: string;
  artifact: ArtifactRef;
  duration_ms: number;
  frames: number;
  dropped: number;
  started: number;
}
/** the recordings, running and ended, with their counts */
export interface RecordStatusArgs {
  id?: string;
}
export interface RecordStatusResult {
  recordings: RecordingInfo[];
}
/** mark this connection as carrying a remote WebSocket client */
export interface GatewayAttachArgs {
  peer: string;
  door?: "v1" | "pty";
  credential?: string;
}
export type GatewayAttachResult = Empty;
/** record a refused WebSocket upgrade */
export interface GatewayAuthFailedArgs {
  peer: string;
  reason: string;
  count?: number;
}
export type GatewayAuthFailedResult = Empty;
/** whether a credential opens one of the gateway's doors */
export interface GatewayCheckArgs {
  door: "v1" | "novnc" | "cdp" | "cdp-relay" | "pty" | "preview" | "runtime";
  peer: string;
  credential: string;
  key?: string;
}
export interface GatewayCheckResult {
  grant?: string;
  expires_at?: number;
  scope?: string;
  control?: boolean;
  port?: number;
  authorization?: string;
  pty?: string;
  write?: boolean;
}
/** a private grant's one-time link, exchanged for its cookie */
export interface GatewayRedeemArgs {
  grant: string;
  code: string;
}
export interface GatewayRedeemResult {
  token: string;
}

export interface Ops {
  "hello": { args: HelloArgs; result: HelloResult };
  "ping": { args: PingArgs; result: PingResult };
  "state": { args: StateArgs; result: StateResult };
  "events.subscribe": { args: EventsSubscribeArgs; result: EventsSubscribeResult };
  "events.unsubscribe": { args: EventsUnsubscribeArgs; result: EventsUnsubscribeResult };
  "request.cancel": { args: RequestCancelArgs; result: RequestCancelResult };
  "service.list": { args: ServiceListArgs; result: ServiceListResult };
  "service.status": { args: ServiceStatusArgs; result: ServiceStatusResult };
  "service.start": { args: ServiceStartArgs; result: ServiceStartResult };
  "service.stop": { args: ServiceStopArgs; result: ServiceStopResult };
  "service.restart": { args: ServiceRestartArgs; result: ServiceRestartResult };
  "service.signal": { args: ServiceSignalArgs; result: ServiceSignalResult };
  "check.report": { args: CheckReportArgs; result: CheckReportResult };
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
  "limits.status": { args: LimitsStatusArgs; result: LimitsStatusResult };
  "workspace.prepare": { args: WorkspacePrepareArgs; result: WorkspacePrepareResult };
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
  "desktop.provide": { args: DesktopProvideArgs; result: DesktopProvideResult };
  "desktop.emit": { args: DesktopEmitArgs; result: DesktopEmitResult };
  "desktop.screenshot": { args: DesktopScreenshotArgs; result: DesktopScreenshotResult };
  "desktop.input": { args: DesktopInputArgs; result: DesktopInputResult };
  "desktop.cursor": { args: DesktopCursorArgs; result: DesktopCursorResult };
  "desktop.info": { args: DesktopInfoArgs; result: DesktopInfoResult };
  "desktop.windows": { args: DesktopWindowsArgs; result: DesktopWindowsResult };
  "desktop.wait_change": { args: DesktopWaitChangeArgs; result: DesktopWaitChangeResult };
  "record.start": { args: RecordStartArgs; result: RecordStartResult };
  "record.stop": { args: RecordStopArgs; result: RecordStopResult };
  "record.status": { args: RecordStatusArgs; result: RecordStatusResult };
  "gateway.attach": { args: GatewayAttachArgs; result: GatewayAttachResult };
  "gateway.auth_failed": { args: GatewayAuthFailedArgs; result: GatewayAuthFailedResult };
  "gateway.check": { args: GatewayCheckArgs; result: GatewayCheckResult };
  "gateway.redeem": { args: GatewayRedeemArgs; result: GatewayRedeemResult };
}
export type OpName = keyof Ops;
export type Args<O extends OpName> = Ops[O]["args"];
export type Result<O extends OpName> = Ops[O]["result"];

export interface OpInfo {
  server: "berthd" | "desktop";
  access: "any" | "local";
  waits: boolean;
}

export const OPS: { readonly [O in OpName]: OpInfo } = {
  "hello": { server: "berthd", access: "any", waits: false },
  "ping": { server: "berthd", access: "any", waits: false },
  "state": { server: "berthd", access: "any", waits: false },
  "events.subscribe": { server: "berthd", access: "any", waits: false },
  "events.unsubscribe": { server: "berthd", access: "any", waits: false },
  "request.cancel": { server: "berthd", access: "any", waits: false },
  "service.list": { server: "berthd", access: "any", waits: false },
  "service.status": { server: "berthd", access: "any", waits: false },
  "service.start": { server: "berthd", access: "any", waits: false },
  "service.stop": { server: "berthd", access: "any", waits: false },
  "service.restart": { server: "berthd", access: "any", waits: false },
  "service.signal": { server: "berthd", access: "any", waits: false },
  "check.report": { server: "berthd", access: "local", waits: false },
  "pty.open": { server: "berthd", access: "any", waits: false },
  "pty.attach": { server: "berthd", access: "any", waits: false },
  "pty.detach": { server: "berthd", access: "any", waits: false },
  "pty.input": { server: "berthd", access: "any", waits: false },
  "pty.resize": { server: "berthd", access: "any", waits: false },
  "pty.signal": { server: "berthd", access: "any", waits: false },
  "pty.close": { server: "berthd", access: "any", waits: false },
  "pty.list": { server: "berthd", access: "any", waits: false },
  "proc.start": { server: "berthd", access: "any", waits: false },
  "proc.attach": { server: "berthd", access: "any", waits: false },
  "proc.ack": { server: "berthd", access: "any", waits: false },
  "proc.detach": { server: "berthd", access: "any", waits: false },
  "proc.input": { server: "berthd", access: "any", waits: false },
  "proc.close_stdin": { server: "berthd", access: "any", waits: false },
  "proc.signal": { server: "berthd", access: "any", waits: false },
  "proc.wait": { server: "berthd", access: "any", waits: true },
  "proc.list": { server: "berthd", access: "any", waits: false },
  "fs.stat": { server: "berthd", access: "any", waits: false },
  "fs.list": { server: "berthd", access: "any", waits: false },
  "fs.read": { server: "berthd", access: "any", waits: false },
  "fs.write": { server: "berthd", access: "any", waits: false },
  "fs.mkdir": { server: "berthd", access: "any", waits: false },
  "fs.move": { server: "berthd", access: "any", waits: false },
  "fs.remove": { server: "berthd", access: "any", waits: false },
  "fs.chmod": { server: "berthd", access: "any", waits: false },
  "fs.watch": { server: "berthd", access: "any", waits: false },
  "fs.unwatch": { server: "berthd", access: "any", waits: false },
  "fs.watches": { server: "berthd", access: "any", waits: false },
  "secrets.set": { server: "berthd", access: "any", waits: false },
  "secrets.unset": { server: "berthd", access: "any", waits: false },
  "secrets.list": { server: "berthd", access: "any", waits: false },
  "artifact.publish": { server: "berthd", access: "any", waits: true },
  "artifact.read": { server: "berthd", access: "any", waits: false },
  "artifact.list": { server: "berthd", access: "any", waits: false },
  "runtime.list": { server: "berthd", access: "any", waits: true },
  "runtime.start": { server: "berthd", access: "any", waits: true },
  "runtime.stop": { server: "berthd", access: "any", waits: true },
  "runtime.status": { server: "berthd", access: "any", waits: false },
  "runtime.pause": { server: "berthd", access: "any", waits: true },
  "runtime.resume": { server: "berthd", access: "any", waits: false },
  "limits.status": { server: "berthd", access: "any", waits: false },
  "workspace.prepare": { server: "berthd", access: "any", waits: true },
  "task.run": { server: "berthd", access: "any", waits: false },
  "task.show": { server: "berthd", access: "any", waits: false },
  "task.list": { server: "berthd", access: "any", waits: false },
  "task.attach": { server: "berthd", access: "any", waits: false },
  "task.cancel": { server: "berthd", access: "any", waits: false },
  "task.deliver": { server: "berthd", access: "any", waits: true },
  "grant.create": { server: "berthd", access: "any", waits: false },
  "grant.list": { server: "berthd", access: "any", waits: false },
  "grant.revoke": { server: "berthd", access: "any", waits: false },
  "port.list": { server: "berthd", access: "any", waits: false },
  "desktop.provide": { server: "berthd", access: "local", waits: false },
  "desktop.emit": { server: "berthd", access: "local", waits: false },
  "desktop.screenshot": { server: "desktop", access: "any", waits: true },
  "desktop.input": { server: "desktop", access: "any", waits: true },
  "desktop.cursor": { server: "desktop", access: "any", waits: true },
  "desktop.info": { server: "desktop", access: "any", waits: true },
  "desktop.windows": { server: "desktop", access: "any", waits: true },
  "desktop.wait_change": { server: "desktop", access: "any", waits: true },
  "record.start": { server: "desktop", access: "any", waits: true },
  "record.stop": { server: "desktop", access: "any", waits: true },
  "record.status": { server: "desktop", access: "any", waits: true },
  "gateway.attach": { server: "berthd", access: "local", waits: false },
  "gateway.auth_failed": { server: "berthd", access: "local", waits: false },
  "gateway.check": { server: "berthd", access: "local", waits: false },
  "gateway.redeem": { server: "berthd", access: "local", waits: false },
};

/** The ops whose answer waits for something besides the request (request.cancel can end the wait). */
export const WAITING_OPS: readonly OpName[] = [
  "proc.wait",
  "artifact.publish",
  "runtime.list",
  "runtime.start",
  "runtime.stop",
  "runtime.pause",
  "workspace.prepare",
  "task.deliver",
  "desktop.screenshot",
  "desktop.input",
  "desktop.cursor",
  "desktop.info",
  "desktop.windows",
  "desktop.wait_change",
  "record.start",
  "record.stop",
  "record.status",
];

export interface BerthdStartedData {
  boot_id: string;
  pid: number;
  version: string;
}
export interface BerthdStoppingData {
  signal: number;
  reason: string;
}
export interface ServiceStartingData {
  name: string;
}
export interface ServiceStartedData {
  name: string;
  pid: number;
}
export interface ServiceReadyData {
  name: string;
}
export interface ServiceUnreadyData {
  name: string;
  reason: string;
}
export interface ServiceExitedData {
  name: string;
  pid: number;
  code?: number;
  signal?: number;
  core?: boolean;
}
export interface ServiceRestartingData {
  name: string;
  delay_ms: number;
  restarts: number;
  dependency?: string;
  retry?: boolean;
}
export interface ServiceKilledData {
  name: string;
  count: number;
}
export interface ServiceFailedData {
  name: string;
  reason: string;
  retry_ms: number;
}
export interface CheckChangedData {
  name: string;
  ok: boolean;
  reason: string;
}
export interface AuthFailedData {
  peer: string;
  reason: "missing" | "invalid" | "malformed" | "origin";
  count: number;
}
export interface PtyOpenedData {
  id: string;
  pid: number;
  command: string[];
}
export interface PtyAttachedData {
  id: string;
  viewers: number;
}
export interface PtyDetachedData {
  id: string;
  viewers: number;
}
export interface PtyExitedData {
  id: string;
  pid: number;
  code?: number;
  signal?: number;
  core?: boolean;
}
export interface PtyClosedData {
  id: string;
  reason: "closed" | "ttl";
}
export interface ProcStartedData {
  id: string;
  pid: number;
  command: string[];
  tag: string;
}
export interface ProcExitedData {
  id: string;
  pid: number;
  code?: number;
  signal?: number;
  core?: boolean;
  timed_out: boolean;
  oom_killed: boolean;
  stdout_bytes: number;
  stderr_bytes: number;
  duration_ms: number;
}
export interface FsChangedData {
  watch: string;
  changes: FsChange[];
}
export interface FsOverflowData {
  watch: string;
  reason: "burst" | "kernel" | "limit";
  lost?: number;
}
export interface ArtifactPublishedData {
  id: string;
  sha256: string;
  size: number;
  media_type: string;
  name: string;
}
export interface SecretsChangedData {
  set?: string[];
  unset?: string[];
}
export interface SecretsInjectedData {
  target: string;
  names: string[];
}
export interface RecordStartedData {
  id: string;
  started: number;
  fps: number;
  region: Region;
  encoder: string;
}
export interface RecordPublishedData {
  id: string;
  artifact: ArtifactRef;
  duration_ms: number;
  frames: number;
  dropped: number;
  started: number;
}
export interface RecordFailedData {
  id: string;
  reason: string;
}
export interface RuntimeStartedData {
  name: string;
  mode: RuntimeMode;
  pid: number;
  pty?: string;
  proc?: string;
  port?: number;
  workspace: string;
}
export interface RuntimeReadyData {
  name: string;
  mode: RuntimeMode;
  port?: number;
  ready_ms: number;
}
export interface RuntimeExitedData {
  name: string;
  mode: RuntimeMode;
  pid: number;
  code?: number;
  signal?: number;
  core?: boolean;
}
export interface RuntimeUnreadyData {
  name: string;
  mode: RuntimeMode;
  reason: string;
}
export interface RuntimeFailedData {
  name: string;
  mode: RuntimeMode;
  reason: string;
}
export interface RuntimeRestartingData {
  name: string;
  delay_ms: number;
  restarts: number;
}
export interface RuntimeStoppedData {
  name: string;
}
export interface RuntimePausedData {
  name: string;
}
export interface RuntimeResumedData {
  name: string;
}
export interface LimitsOomKillData {
  target: string;
  memory_bytes: number;
  oom_kills: number;
}
export interface WorkspaceProgressData {
  dir: string;
  phase: string;
  objects: number;
  total: number;
  bytes: number;
}
export interface WorkspacePreparedData {
  dir: string;
  repo: string;
  branch: string;
  commit: string;
  cloned: boolean;
  duration_ms: number;
}
export interface WorkspaceFailedData {
  dir: string;
  reason: string;
}
export interface TaskQueuedData {
  id: string;
  runtime: string;
  position: number;
}
export interface TaskStartedData {
  id: string;
  runtime: string;
  pid: number;
  proc: string;
}
export interface TaskCheckingData {
  id: string;
  check: number;
  argv: string[];
}
export interface TaskFinishedData {
  id: string;
  runtime: string;
  state: string;
  reason: string | null;
  failed_check: number | null;
  cancelled_by: string | null;
  duration_ms: number;
}
export interface TaskDeliveredData {
  id: string;
  branch: string;
  commit: string;
  pushed: boolean;
  diff: string;
}
export interface GrantCreatedData {
  id: string;
  scope: string;
  label: string;
  visibility: Visibility;
  expires_at: number;
}
export interface GrantRevokedData {
  id: string;
  scope: string;
  label: string;
}
export interface GrantExpiredData {
  id: string;
  scope: string;
  label: string;
}
export interface PortOpenedData {
  port: number;
  address: string;
  pid: number;
  command: string;
  user: string;
}
export interface PortClosedData {
  port: number;
  address: string;
}
export interface EventsGapData {
  requested: number;
  first_seq: number;
  lost: number;
}

export interface Events {
  "berthd.started": BerthdStartedData;
  "berthd.stopping": BerthdStoppingData;
  "service.starting": ServiceStartingData;
  "service.started": ServiceStartedData;
  "service.ready": ServiceReadyData;
  "service.unready": ServiceUnreadyData;
  "service.exited": ServiceExitedData;
  "service.restarting": ServiceRestartingData;
  "service.killed": ServiceKilledData;
  "service.failed": ServiceFailedData;
  "check.changed": CheckChangedData;
  "auth.failed": AuthFailedData;
  "pty.opened": PtyOpenedData;
  "pty.attached": PtyAttachedData;
  "pty.detached": PtyDetachedData;
  "pty.exited": PtyExitedData;
  "pty.closed": PtyClosedData;
  "proc.started": ProcStartedData;
  "proc.exited": ProcExitedData;
  "fs.changed": FsChangedData;
  "fs.overflow": FsOverflowData;
  "artifact.published": ArtifactPublishedData;
  "secrets.changed": SecretsChangedData;
  "secrets.injected": SecretsInjectedData;
  "record.started": RecordStartedData;
  "record.published": RecordPublishedData;
  "record.failed": RecordFailedData;
  "runtime.started": RuntimeStartedData;
  "runtime.ready": RuntimeReadyData;
  "runtime.exited": RuntimeExitedData;
  "runtime.unready": RuntimeUnreadyData;
  "runtime.failed": RuntimeFailedData;
  "runtime.restarting": RuntimeRestartingData;
  "runtime.stopped": RuntimeStoppedData;
  "runtime.paused": RuntimePausedData;
  "runtime.resumed": RuntimeResumedData;
  "limits.oom_kill": LimitsOomKillData;
  "workspace.progress": WorkspaceProgressData;
  "workspace.prepared": WorkspacePreparedData;
  "workspace.failed": WorkspaceFailedData;
  "task.queued": TaskQueuedData;
  "task.started": TaskStartedData;
  "task.checking": TaskCheckingData;
  "task.finished": TaskFinishedData;
  "task.delivered": TaskDeliveredData;
  "grant.created": GrantCreatedData;
  "grant.revoked": GrantRevokedData;
  "grant.expired": GrantExpiredData;
  "port.opened": PortOpenedData;
  "port.closed": PortClosedData;
  "events.gap": EventsGapData;
}
export type EventKind = keyof Events;
export type BerthEvent = { [K in EventKind]: { seq: number; ts: number; kind: K; data: Events[K] } }[EventKind];
