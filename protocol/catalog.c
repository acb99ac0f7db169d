/* catalog: the one table of ops and the one table of event kinds. */
#include <string.h>

#include "catalog.h"

/* clang-format off */
const struct catalog_op catalog_ops[] = {
	{ "hello", CATALOG_BERTHD, CATALOG_ANY,
	    "handshake: version, boot id, labels, capabilities" },
	{ "ping", CATALOG_BERTHD, CATALOG_ANY, "liveness round trip" },
	{ "state", CATALOG_BERTHD, CATALOG_ANY,
	    "what runs: services with pids, states and uptimes; checks" },
	{ "events.subscribe", CATALOG_BERTHD, CATALOG_ANY,
	    "replay the journal from a seq, then follow live" },
	{ "events.unsubscribe", CATALOG_BERTHD, CATALOG_ANY,
	    "stop the event stream of this connection" },
	{ "service.list", CATALOG_BERTHD, CATALOG_ANY,
	    "every service with its state" },
	{ "service.status", CATALOG_BERTHD, CATALOG_ANY,
	    "one service in detail" },
	{ "service.start", CATALOG_BERTHD, CATALOG_ANY,
	    "start a stopped or failed service" },
	{ "service.stop", CATALOG_BERTHD, CATALOG_ANY,
	    "stop a service; it stays stopped" },
	{ "service.restart", CATALOG_BERTHD, CATALOG_ANY,
	    "stop a service and start it again" },
	{ "check.report", CATALOG_BERTHD, CATALOG_LOCAL,
	    "a berth program reports a service's readiness" },
	{ "pty.open", CATALOG_BERTHD, CATALOG_ANY,
	    "start a program on a new terminal session" },
	{ "pty.attach", CATALOG_BERTHD, CATALOG_ANY,
	    "watch a session's output from an offset, or its redrawn screen" },
	{ "pty.detach", CATALOG_BERTHD, CATALOG_ANY,
	    "stop watching a session" },
	{ "pty.input", CATALOG_BERTHD, CATALOG_ANY,
	    "type into a session" },
	{ "pty.resize", CATALOG_BERTHD, CATALOG_ANY,
	    "set a session's terminal size" },
	{ "pty.signal", CATALOG_BERTHD, CATALOG_ANY,
	    "signal a session's foreground process group" },
	{ "pty.close", CATALOG_BERTHD, CATALOG_ANY,
	    "end a session and forget it" },
	{ "pty.list", CATALOG_BERTHD, CATALOG_ANY,
	    "every session with its state" },
	{ "proc.start", CATALOG_BERTHD, CATALOG_ANY,
	    "run a command; its stdout and stderr are kept by offset" },
	{ "proc.attach", CATALOG_BERTHD, CATALOG_ANY,
	    "read a command's stdout and stderr from offsets" },
	{ "proc.detach", CATALOG_BERTHD, CATALOG_ANY,
	    "stop reading a command's output" },
	{ "proc.input", CATALOG_BERTHD, CATALOG_ANY,
	    "write to a command's stdin" },
	{ "proc.close_stdin", CATALOG_BERTHD, CATALOG_ANY,
	    "close a command's stdin (it reads end of file)" },
	{ "proc.signal", CATALOG_BERTHD, CATALOG_ANY,
	    "signal a command's process group" },
	{ "proc.wait", CATALOG_BERTHD, CATALOG_ANY,
	    "answer when a command has exited" },
	{ "proc.list", CATALOG_BERTHD, CATALOG_ANY,
	    "every command with its state" },
	{ "secrets.set", CATALOG_BERTHD, CATALOG_ANY,
	    "give berthd named secret values (never returned)" },
	{ "secrets.unset", CATALOG_BERTHD, CATALOG_ANY,
	    "forget named secrets" },
	{ "secrets.list", CATALOG_BERTHD, CATALOG_ANY,
	    "the names of the secrets held" },
	{ "gateway.attach", CATALOG_BERTHD, CATALOG_LOCAL,
	    "mark this connection as carrying a remote WebSocket client" },
	{ "gateway.auth_failed", CATALOG_BERTHD, CATALOG_LOCAL,
	    "record a refused WebSocket upgrade" },
};
const size_t catalog_nops = sizeof catalog_ops / sizeof catalog_ops[0];

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
	{ EV_SECRETS_CHANGED, "secrets were set or unset (names only)" },
	{ EV_SECRETS_INJECTED,
	    "a process was given secrets (target, names)" },
	{ EV_EVENTS_GAP, "the journal no longer holds the requested seqs" },
};
const size_t catalog_nevents = sizeof catalog_events / sizeof catalog_events[0];
/* clang-format on */

const struct catalog_op *
catalog_op_find(const char *name)
{
	size_t i;

	for (i = 0; i < catalog_nops; i++)
		if (strcmp(catalog_ops[i].name, name) == 0)
			return &catalog_ops[i];
	return NULL;
}
