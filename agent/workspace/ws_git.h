/* ws_git: runs one git command for berth-workspace, with berth's fixed
 * options, its stdout kept (bounded) and its stderr read line by line
 * (git ends progress lines with "\r") for progress and its last "fatal:"
 * or "error:" line.
 *
 * The credential, when there is one, reaches git's credential helper
 * (this same program, see ws_cred.h) through a pipe made for this one
 * command: filled, its write end closed, its read end inherited at
 * WS_GIT_CRED_FD by git and by what git runs. Ownership: a ws_git_out's buffers
 * are the caller's, released with ws_git_out_free. */
#ifndef BERTH_WS_GIT_H
#define BERTH_WS_GIT_H

#include <stdbool.h>
#include <stddef.h>

#define WS_GIT_CRED_FD 3
#define WS_GIT_OUT_MAX (1024 * 1024)
/* At most this many args (after berth's fixed options). */
#define WS_GIT_ARGS_MAX 32
/* A whole stderr line: the reason is cut only once it is redacted. */
#define WS_GIT_REASON_MAX 4096

struct ws_git {
	const char *self; /* this program's path: git's credential helper */
	/* The repository a network step talks to (berth's settings for it,
	 * the one the credential is for); NULL for a local step. */
	const char *repo;
	const char *cred; /* "USERNAME\nPASSWORD\n", or NULL */
	size_t credlen;
	/* Called with each stderr line (without its end). */
	void (*line)(void *arg, const char *line, size_t len);
	void *arg;
	/* 0, or where git's stdout goes instead of ws_git_out.out (an fd
	 * above 2: a file of berthd's, for a diff larger than the buffer). */
	int outfd;
	/* 0, or the largest file git may write (RLIMIT_FSIZE, soft and
	 * hard): what goes to outfd is bounded. */
	unsigned long long fsize;
};

struct ws_git_out {
	/* stdout, NUL-ended, at most WS_GIT_OUT_MAX bytes ("" with outfd) */
	char *out;
	size_t outlen;
	char reason[WS_GIT_REASON_MAX + 1]; /* last fatal/error line, or "" */
	/* git failed without a fatal: or error: line (rev-parse -q, show-ref
	 * -q: an answer, not a failure); reason then says how it ended. */
	bool silent;
	int status; /* waitpid's */
};

/* Runs git with the fixed options, then args (NULL-ended), in dir (NULL:
 * the current one). Returns 0 if git exited 0; else -1 with out->reason
 * set (git's line, else how it ended). */
int ws_git_run(const struct ws_git *g, const char *dir, const char *const *args,
    struct ws_git_out *out);
/* git's stdout without its last line ends (cut in place). */
char *ws_git_out_line(struct ws_git_out *out);
void ws_git_out_free(struct ws_git_out *out);

#endif
