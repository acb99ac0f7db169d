/* catalog: the one table of ops and the one table of event kinds. */
#include <string.h>

#include "catalog.h"

/* clang-format off */
const struct catalog_op catalog_ops[] = {
	[CATALOG_OP_HELLO] = { "hello", CATALOG_BERTHD, CATALOG_ANY,
	    "handshake: version, boot id, labels, capabilities" },
	[CATALOG_OP_PING] = { "ping", CATALOG_BERTHD, CATALOG_ANY,
	    "liveness round trip" },
	[CATALOG_OP_STATE] = { "state", CATALOG_BERTHD, CATALOG_ANY,
	    "what runs: services with pids, states and uptimes; checks" },
	[CATALOG_OP_EVENTS_SUBSCRIBE] =
	    { "events.subscribe", CATALOG_BERTHD, CATALOG_ANY,
	    "replay the journal from a seq, then follow live" },
	[CATALOG_OP_EVENTS_UNSUBSCRIBE] =
	    { "events.unsubscribe", CATALOG_BERTHD, CATALOG_ANY,
	    "stop the event stream of this connection" },
	[CATALOG_OP_SERVICE_LIST] =
	    { "service.list", CATALOG_BERTHD, CATALOG_ANY,
	    "every service with its state" },
	[CATALOG_OP_SERVICE_STATUS] =
	    { "service.status", CATALOG_BERTHD, CATALOG_ANY,
	    "one service in detail" },
	[CATALOG_OP_SERVICE_START] =
	    { "service.start", CATALOG_BERTHD, CATALOG_ANY,
	    "start a stopped or failed service" },
	[CATALOG_OP_SERVICE_STOP] =
	    { "service.stop", CATALOG_BERTHD, CATALOG_ANY,
	    "stop a service; it stays stopped" },
	[CATALOG_OP_SERVICE_RESTART] =
	    { "service.restart", CATALOG_BERTHD, CATALOG_ANY,
	    "stop a service and start it again" },
	[CATALOG_OP_CHECK_REPORT] =
	    { "check.report", CATALOG_BERTHD, CATALOG_LOCAL,
	    "a berth program reports a service's readiness" },
	[CATALOG_OP_PTY_OPEN] = { "pty.open", CATALOG_BERTHD, CATALOG_ANY,
	    "start a program on a new terminal session" },
	[CATALOG_OP_PTY_ATTACH] = { "pty.attach", CATALOG_BERTHD, CATALOG_ANY,
	    "watch a session's output from an offset, or its redrawn screen" },
	[CATALOG_OP_PTY_DETACH] = { "pty.detach", CATALOG_BERTHD, CATALOG_ANY,
	    "stop watching a session" },
	[CATALOG_OP_PTY_INPUT] = { "pty.input", CATALOG_BERTHD, CATALOG_ANY,
	    "type into a session" },
	[CATALOG_OP_PTY_RESIZE] = { "pty.resize", CATALOG_BERTHD, CATALOG_ANY,
	    "set a session's terminal size" },
	[CATALOG_OP_PTY_SIGNAL] = { "pty.signal", CATALOG_BERTHD, CATALOG_ANY,
	    "signal a session's foreground process group" },
	[CATALOG_OP_PTY_CLOSE] = { "pty.close", CATALOG_BERTHD, CATALOG_ANY,
	    "end a session and forget it" },
	[CATALOG_OP_PTY_LIST] = { "pty.list", CATALOG_BERTHD, CATALOG_ANY,
	    "every session with its state" },
	[CATALOG_OP_PROC_START] = { "proc.start", CATALOG_BERTHD, CATALOG_ANY,
	    "run a command; its stdout and stderr are kept by offset" },
	[CATALOG_OP_PROC_ATTACH] = { "proc.attach", CATALOG_BERTHD, CATALOG_ANY,
	    "read a command's stdout and stderr from offsets" },
	[CATALOG_OP_PROC_ACK] = { "proc.ack", CATALOG_BERTHD, CATALOG_ANY,
	    "say how much output this connection has, so none is lost" },
	[CATALOG_OP_PROC_DETACH] = { "proc.detach", CATALOG_BERTHD, CATALOG_ANY,
	    "stop reading a command's output" },
	[CATALOG_OP_PROC_INPUT] = { "proc.input", CATALOG_BERTHD, CATALOG_ANY,
	    "write to a command's stdin" },
	[CATALOG_OP_PROC_CLOSE_STDIN] =
	    { "proc.close_stdin", CATALOG_BERTHD, CATALOG_ANY,
	    "close a command's stdin (it reads end of file)" },
	[CATALOG_OP_PROC_SIGNAL] = { "proc.signal", CATALOG_BERTHD, CATALOG_ANY,
	    "signal a command's process group" },
	[CATALOG_OP_PROC_WAIT] = { "proc.wait", CATALOG_BERTHD, CATALOG_ANY,
	    "answer when a command has exited" },
	[CATALOG_OP_PROC_LIST] = { "proc.list", CATALOG_BERTHD, CATALOG_ANY,
	    "every command with its state" },
	[CATALOG_OP_FS_STAT] = { "fs.stat", CATALOG_BERTHD, CATALOG_ANY,
	    "a file's type, size, mode, owner and times" },
	[CATALOG_OP_FS_LIST] = { "fs.list", CATALOG_BERTHD, CATALOG_ANY,
	    "a directory's entries, to a depth" },
	[CATALOG_OP_FS_READ] = { "fs.read", CATALOG_BERTHD, CATALOG_ANY,
	    "a range of a file's bytes" },
	[CATALOG_OP_FS_WRITE] = { "fs.write", CATALOG_BERTHD, CATALOG_ANY,
	    "upload a file in chunks; it appears whole when done" },
	[CATALOG_OP_FS_MKDIR] = { "fs.mkdir", CATALOG_BERTHD, CATALOG_ANY,
	    "make a directory" },
	[CATALOG_OP_FS_MOVE] = { "fs.move", CATALOG_BERTHD, CATALOG_ANY,
	    "rename a file or directory" },
	[CATALOG_OP_FS_REMOVE] = { "fs.remove", CATALOG_BERTHD, CATALOG_ANY,
	    "remove a file, or a directory tree" },
	[CATALOG_OP_FS_CHMOD] = { "fs.chmod", CATALOG_BERTHD, CATALOG_ANY,
	    "change a file's permission bits" },
	[CATALOG_OP_FS_WATCH] = { "fs.watch", CATALOG_BERTHD, CATALOG_ANY,
	    "journal the changes under a path as fs.changed events" },
	[CATALOG_OP_FS_UNWATCH] = { "fs.unwatch", CATALOG_BERTHD, CATALOG_ANY,
	    "end a watch" },
	[CATALOG_OP_FS_WATCHES] = { "fs.watches", CATALOG_BERTHD, CATALOG_ANY,
	    "every watch" },
	[CATALOG_OP_SECRETS_SET] = { "secrets.set", CATALOG_BERTHD, CATALOG_ANY,
	    "give berthd named secret values (never returned)" },
	[CATALOG_OP_SECRETS_UNSET] =
	    { "secrets.unset", CATALOG_BERTHD, CATALOG_ANY,
	    "forget named secrets" },
	[CATALOG_OP_SECRETS_LIST] =
	    { "secrets.list", CATALOG_BERTHD, CATALOG_ANY,
	    "the names of the secrets held" },
	[CATALOG_OP_ARTIFACT_PUBLISH] =
	    { "artifact.publish", CATALOG_BERTHD, CATALOG_ANY,
	    "store a file by content; answer with a reference" },
	[CATALOG_OP_ARTIFACT_READ] =
	    { "artifact.read", CATALOG_BERTHD, CATALOG_ANY,
	    "a range of a published artifact's bytes" },
	[CATALOG_OP_ARTIFACT_LIST] =
	    { "artifact.list", CATALOG_BERTHD, CATALOG_ANY,
	    "every published artifact" },
	[CATALOG_OP_DESKTOP_PROVIDE] =
	    { "desktop.provide", CATALOG_BERTHD, CATALOG_LOCAL,
	    "berth-desktop serves the desktop ops on this connection" },
	[CATALOG_OP_DESKTOP_EMIT] =
	    { "desktop.emit", CATALOG_BERTHD, CATALOG_LOCAL,
	    "berth-desktop journals a recording's event" },
	[CATALOG_OP_DESKTOP_SCREENSHOT] =
	    { "desktop.screenshot", CATALOG_DESKTOP, CATALOG_ANY,
	    "the screen, or a region, as PNG or JPEG" },
	[CATALOG_OP_DESKTOP_INPUT] =
	    { "desktop.input", CATALOG_DESKTOP, CATALOG_ANY,
	    "mouse, keys and text, through XTest" },
	[CATALOG_OP_DESKTOP_CURSOR] =
	    { "desktop.cursor", CATALOG_DESKTOP, CATALOG_ANY,
	    "where the pointer is" },
	[CATALOG_OP_DESKTOP_INFO] =
	    { "desktop.info", CATALOG_DESKTOP, CATALOG_ANY,
	    "the screen's size, depth and screens" },
	[CATALOG_OP_DESKTOP_WINDOWS] =
	    { "desktop.windows", CATALOG_DESKTOP, CATALOG_ANY,
	    "the windows the window manager lists" },
	[CATALOG_OP_DESKTOP_WAIT_CHANGE] =
	    { "desktop.wait_change", CATALOG_DESKTOP, CATALOG_ANY,
	    "answer when the screen (or a region) changes" },
	[CATALOG_OP_RECORD_START] =
	    { "record.start", CATALOG_DESKTOP, CATALOG_ANY,
	    "start recording the screen (or a region) to MP4" },
	[CATALOG_OP_RECORD_STOP] =
	    { "record.stop", CATALOG_DESKTOP, CATALOG_ANY,
	    "end a recording; answer once it is published as an artifact" },
	[CATALOG_OP_RECORD_STATUS] =
	    { "record.status", CATALOG_DESKTOP, CATALOG_ANY,
	    "the recordings, running and ended, with their counts" },
	[CATALOG_OP_GATEWAY_ATTACH] =
	    { "gateway.attach", CATALOG_BERTHD, CATALOG_LOCAL,
	    "mark this connection as carrying a remote WebSocket client" },
	[CATALOG_OP_GATEWAY_AUTH_FAILED] =
	    { "gateway.auth_failed", CATALOG_BERTHD, CATALOG_LOCAL,
	    "record a refused WebSocket upgrade" },
};
/* The last op has its entry; test_proto holds every other to its own. */
_Static_assert(sizeof catalog_ops / sizeof catalog_ops[0] == CATALOG_NOPS,
    "enum catalog_op_id and catalog_ops[] differ");


const struct catalog_event catalog_events[] = {
	{ EV_BERTHD_STARTED, "berthd started (boot_id, pid, version)" },
	{ EV_BERTHD_STOPPING, "berthd is shutting down (signal or reason)" },
	{ EV_SERVICE_STARTING, "a service is being started (name)" },
	{ EV_SERVICE_STARTED, "a service was spawned (name, pid)" },
	{ EV_SERVICE_READY, "a service's readiness probe passed (name)" },
	{ EV_SERVICE_UNREADY, "a ready service's probe fails (name, reason)" },
	{ EV_SERVICE_EXITED,
	    "a service exited (name, pid, code or signal, core)" },
	{ EV_SERVICE_RESTARTING,
	    "a service will be restarted (name, delay_ms, restarts)" },
	{ EV_SERVICE_FAILED,
	    "a service failed for good and will not restart (name, reason)" },
	{ EV_CHECK_CHANGED,
	    "a readiness check changed its verdict (name, ok, reason)" },
	{ EV_AUTH_FAILED, "a WebSocket upgrade was refused (peer, reason)" },
	{ EV_PTY_OPENED, "a terminal session started (id, pid, command)" },
	{ EV_PTY_ATTACHED, "a viewer attached to a session (id, viewers)" },
	{ EV_PTY_DETACHED, "a viewer left a session (id, viewers)" },
	{ EV_PTY_EXITED,
	    "a session's program exited (id, pid, code or signal, core)" },
	{ EV_PTY_CLOSED, "a session was closed or reaped (id, reason)" },
	{ EV_PROC_STARTED, "a command started (id, pid, command, tag)" },
	{ EV_PROC_EXITED,
	    "a command exited and its output was read to the end "
	    "(id, pid, code or signal, timed_out, oom_killed, bytes)" },
	{ EV_FS_CHANGED,
	    "files under a watch changed (watch, changes), coalesced" },
	{ EV_FS_OVERFLOW,
	    "changes under a watch were not all told (watch, reason)" },
	{ EV_SECRETS_CHANGED, "secrets were set or unset (names only)" },
	{ EV_SECRETS_INJECTED,
	    "a process was given secrets (target, names)" },
	{ EV_ARTIFACT_PUBLISHED,
	    "a file was published (id, sha256, size, media_type, name)" },
	{ EV_RECORD_STARTED, "a recording started (id, fps, region)" },
	{ EV_RECORD_PUBLISHED,
	    "a recording ended and was published (id, artifact, duration)" },
	{ EV_RECORD_FAILED, "a recording ended without a file (id, reason)" },
	{ EV_EVENTS_GAP, "the journal no longer holds the requested seqs" },
};
const size_t catalog_nevents = sizeof catalog_events / sizeof catalog_events[0];
/* clang-format on */

enum catalog_op_id
catalog_op_find(const char *name)
{
	unsigned i;

	for (i = 0; i < CATALOG_NOPS; i++)
		if (strcmp(catalog_ops[i].name, name) == 0)
			break;
	return (enum catalog_op_id)i;
}
