/* wsjob: one run of berth-workspace, berthd's side, for workspace.prepare
 * and task.deliver alike: the helper started as the runtime's user (its
 * groups, a clean environment plus the runtime's env, confined, git's
 * system and global config files unread), the request's credential on a
 * pipe, the report pipe read line by line into the owner's callback, a
 * malformed report noticed once (the helper is killed and nothing more
 * it says is believed), and its end told once: its answer, or how it
 * ended without one.
 *
 * Ownership: the owner keeps the run from wsjob_start to wsjob_free; the
 * run owns its child, its pipe and the credential, which it wipes once
 * the helper ends. */
#ifndef BERTH_WSJOB_H
#define BERTH_WSJOB_H

#include <event2/event.h>
#include <stddef.h>

#include "config.h"
#include "wscred.h"

/* The helper's fd of the credential (--credential-fd, added to the argv
 * by wsjob_start), and of the spec's hand_fd. */
#define WSJOB_CRED_FD 3
#define WSJOB_HAND_FD 4

/* What a report line was to its owner, and how a run ended. */
enum wsjob_answer {
	WSJOB_NONE, /* a line: more to come; a run: it ended without one */
	/* The helper's answers: any line after one is malformed; a run's
	 * DONE is one whose helper also exited 0 (else NONE). */
	WSJOB_DONE,
	WSJOB_FAILED,
	WSJOB_CONFLICT,
	/* A line: not one the helper makes; a run: it said something
	 * malformed, or ended in the middle of a line before its answer. */
	WSJOB_BROKEN,
};

/* One line of the helper's (without its "\n", at most WSREPORT_LINE_MAX
 * bytes), in order. */
typedef enum wsjob_answer (*wsjob_line_fn)(
    void *arg, const char *line, size_t len);
/* Once the helper has ended, after its last line, the credential wiped:
 * its answer, and how it ended in words ("berth-workspace was killed by
 * signal 9"), for a run without one. The owner may free the run from
 * here. */
typedef void (*wsjob_exit_fn)(
    void *arg, enum wsjob_answer answer, const char *why);

struct wsjob_spec {
	struct event_base *base;
	const char *label; /* names the run in log lines ("task ID") */
	/* berth-workspace's arguments after its program, NULL-ended. */
	const char *const *args;
	const struct config_runtime *rt; /* whose user, group and env */
	struct wscred *cred; /* taken, even when the start fails; NULL: none */
	int hand_fd;         /* -1, or an fd the helper gets as WSJOB_HAND_FD */
	wsjob_line_fn line;
	wsjob_exit_fn exit;
	void *arg;
};

struct wsjob;

/* Starts the helper. Returns the run, or NULL with *why (the caller
 * frees it; logged already): the step that failed and its cause. */
struct wsjob *wsjob_start(const struct wsjob_spec *s, char **why);
/* s[0..n) with the run's credential redacted (none: a copy); the caller
 * frees it. */
char *wsjob_redact(const struct wsjob *j, const char *s, size_t n);
/* Frees the run; a helper still running is killed, its exit not told. */
void wsjob_free(struct wsjob *j);

#endif
