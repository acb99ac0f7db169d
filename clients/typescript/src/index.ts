// The SDK's public names.
export { connect, Sandbox } from "./sandbox.js";
export type { Readiness, ReadOptions, WriteOptions } from "./sandbox.js";
export { Connection, safeToRepeat } from "./connection.js";
export type {
  BootChange,
  BufferReporter,
  ConnectionListeners,
  ConnectionState,
  ConnectionStats,
  ConnectOptions,
  DataMessage,
  EventMessage,
  RequestOptions,
  StateChange,
  WebSocketConstructor,
  WebSocketLike,
} from "./connection.js";
export { BerthError } from "./errors.js";
export type { BerthErrorCode, LocalErrorCode } from "./errors.js";
export type { BootEvent, EventStream, FollowItem, FollowOptions, GapEvent } from "./events.js";
export { OutputStream } from "./streams.js";
export type { StreamItem } from "./streams.js";
export { Process, TaskStream, Terminal } from "./process.js";
export type { AttachTerminalOptions, StartOptions } from "./process.js";
export { BerthProvider } from "./adapter.js";
export type { ExecOptions, ExecResult, ExecStream, FileInfo, PtyHandle, SandboxProvider } from "./adapter.js";
export * from "./protocol.js";
