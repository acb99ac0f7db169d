/* runtime_version: what a runtime's program really is on this image — its
 * file, found as the runtime's user's PATH would find it, and the version
 * it prints — detected by running it, never taken from the config.
 *
 * Detection runs `command version...` as the runtime's user (a clean
 * environment with the runtime's env, no secret), reads at most
 * RUNTIME_VERSION_OUT_MAX bytes of its stdout and of its stderr (the
 * version is the first line of stdout, or of stderr when stdout is empty:
 * some programs, Pi among them, print it there) and gives it
 * RUNTIME_VERSION_TIMEOUT_MS; the loop never waits for it. The answer is
 * kept for the program file's (dev, ino, size, mtime): a list is cheap, and
 * a program removed or replaced is seen on the next check.
 *
 * Ownership: a struct runtime_version is a value inside its runtime; it
 * owns its strings and, while detecting, the child, its pipe and timer
 * (runtime_version_clear kills and frees them). */
#ifndef BERTH_RUNTIME_VERSION_H
#define BERTH_RUNTIME_VERSION_H

#include <event2/event.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "config.h"

#define RUNTIME_VERSION_TIMEOUT_MS 5000
#define RUNTIME_VERSION_OUT_MAX 4096
/* The longest version kept; past it, cut. */
#define RUNTIME_VERSION_MAX 128
/* Where a bare command is looked up: the PATH of a user's clean
 * environment (launch.c). */
#define RUNTIME_VERSION_PATH "/usr/local/bin:/usr/bin:/bin"

struct runtime_version;

/* One of the program's outputs while detecting. */
struct runtime_version_pipe {
	struct runtime_version *v;
	int fd;
	bool open;
	struct event *ev;
	char buf[RUNTIME_VERSION_OUT_MAX];
	size_t len;
};

struct runtime_version {
	bool known;     /* the fields below answer for the file as it is */
	bool available; /* the program runs and printed a version */
	char *program;  /* its absolute path; NULL if not found */
	char *version;  /* the first line it printed, trimmed */
	char *reason;   /* why not available */
	/* The file the answer is for. */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	/* While detecting. */
	pid_t pid;
	bool exited;
	int status;
	struct runtime_version_pipe out[2]; /* stdout, stderr */
	struct event *timer;
	bool timed_out;
	const struct config_runtime *r; /* borrowed: the config outlives v */
	void (*done)(void *arg);
	void *arg;
};

void runtime_version_init(struct event_base *base);

/* The version in len bytes a program printed: its first line without the
 * blanks around it, cut to RUNTIME_VERSION_MAX bytes, every byte that is
 * not printable ASCII made '?'. NULL if that line is empty. The caller
 * frees it. */
char *runtime_version_parse(const char *buf, size_t len);

/* The absolute path of command as the user's PATH finds it, and its
 * stat; NULL with *reason (the caller frees it): "program not found:
 * NAME" or "program not executable: PATH". */
char *runtime_program_find(const char *command, struct stat *st, char **reason);

/* Makes v answer for r's program as it is now. Returns true if it does at
 * once (the file is the one last detected, or it is missing); else a
 * detection runs and done(arg) is called once v answers. */
bool runtime_version_check(struct runtime_version *v,
    const struct config_runtime *r, void (*done)(void *), void *arg);
/* Whether a detection is under way. */
bool runtime_version_busy(const struct runtime_version *v);
/* Stops a detection (without calling done) and frees v's strings. */
void runtime_version_clear(struct runtime_version *v);

#endif
