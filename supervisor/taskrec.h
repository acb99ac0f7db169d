/* taskrec: a task's record — its request (no secret value: the request's
 * env is kept by name only), state, times, outputs' sizes and result —
 * as task.show answers it and as it is kept in the state directory,
 * <state>/tasks/<id>/record, so that it survives berthd. The file is the
 * map taskrec_pack makes plus "v": 1, written to a temporary file, synced
 * and renamed over the old one, so a crash leaves the old record or the
 * new one, never half of one.
 *
 * Ownership: a struct taskrec owns its strings; taskrec_free releases
 * them (not the struct). */
#ifndef BERTH_TASKREC_H
#define BERTH_TASKREC_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TASKREC_ID_LEN 16 /* hex */
#define TASKREC_RUNTIME_MAX 64
#define TASKREC_PROMPT_MAX (256u << 10)
#define TASKREC_CHECKS_MAX 16
#define TASKREC_ARGV_MAX 64  /* arguments of one check */
#define TASKREC_ARG_MAX 4096 /* bytes of one argument */
#define TASKREC_ENV_MAX 64   /* names kept */
#define TASKREC_ENV_NAME_MAX 128
#define TASKREC_TIMEOUT_MAX (7u * 24 * 3600) /* timeout_s */
#define TASKREC_REASON_MAX 512
#define TASKREC_WHO_MAX 128
#define TASKREC_BRANCH_MAX 255
/* A record file is never larger (the prompt and every check at most:
 * 16 checks of 64 arguments of 4 KiB are 4 MiB alone). */
#define TASKREC_FILE_MAX (5u << 20)

enum taskrec_state {
	TASKREC_QUEUED,
	TASKREC_RUNNING,
	TASKREC_CHECKING,
	TASKREC_SUCCEEDED,
	TASKREC_FAILED,
	TASKREC_CANCELLED,
	TASKREC_TIMED_OUT,
	TASKREC_INTERRUPTED,
	TASKREC_NSTATES
};

/* An exit as a child's wait status tells it. */
struct taskrec_exit {
	bool has;   /* false: not ended (yet) */
	int code;   /* -1 when signalled */
	int signal; /* 0 unless signalled */
};

struct taskrec_check {
	char **argv; /* NULL-terminated, argc strings */
	size_t argc;
	bool ran;
	struct taskrec_exit exit;
	uint64_t started, finished; /* ms since the epoch; 0: not yet */
	uint64_t bytes;             /* its output stream's size */
};

struct taskrec_delivery {
	bool done;
	char branch[TASKREC_BRANCH_MAX + 1];
	char commit[41];
	char base[41];
	bool pushed;
	char diff[65]; /* the diff's artifact id */
	uint64_t at;   /* ms since the epoch */
};

struct taskrec {
	char id[TASKREC_ID_LEN + 1];
	char runtime[TASKREC_RUNTIME_MAX + 1];
	char *prompt; /* 1-TASKREC_PROMPT_MAX bytes */
	char **env;   /* the request's env's names, NULL-terminated (NULL
	               * itself after taskrec_init) */
	size_t nenv;
	uint32_t timeout_s; /* 0: none */
	enum taskrec_state state;
	char reason[TASKREC_REASON_MAX];    /* why it failed, or "" */
	int failed_check;                   /* index, or -1 */
	char cancelled_by[TASKREC_WHO_MAX]; /* who, or "" */
	uint64_t created, started,
	    finished;                       /* ms since the epoch; 0: not yet */
	struct taskrec_exit agent;          /* the agent's exit */
	uint64_t agent_bytes, stderr_bytes; /* its streams' sizes */
	struct taskrec_check checks[TASKREC_CHECKS_MAX];
	size_t nchecks;
	struct taskrec_delivery delivery;
};

void taskrec_init(struct taskrec *r);
void taskrec_free(struct taskrec *r);

const char *taskrec_state_name(enum taskrec_state s);
/* Whether s is an end: succeeded, failed, cancelled, timed_out,
 * interrupted. */
bool taskrec_state_final(enum taskrec_state s);

/* Packs r as one map (task.show's result; the record file's keys). */
void taskrec_pack(msgpack_packer *pk, const struct taskrec *r);
/* The same map's TASKREC_PACK_KEYS keys and values without its head,
 * for a map that holds more (task.show's position): the caller packs
 * the head, these, then its own. */
#define TASKREC_PACK_KEYS 15
void taskrec_pack_keys(msgpack_packer *pk, const struct taskrec *r);

/* The record file's bytes for r (taskrec_pack's map with "v": 1 in it);
 * the caller frees *out. */
int taskrec_encode(const struct taskrec *r, char **out, size_t *len);
/* Reads a record file's bytes into r (taskrec_init'ed); every limit
 * above holds or it is refused. 0, or -1 with why (static or in whybuf)
 * and r left empty (taskrec_free'd). */
int taskrec_decode(const void *buf, size_t len, struct taskrec *r, char *whybuf,
    size_t whymax);

/* Writes r to <dir>/<id>/record (dir and <dir>/<id> made 0700 if they
 * are not there), atomically and synced. 0, or -1 with errno. */
int taskrec_save(const char *dir, const struct taskrec *r);
/* Every record under dir (missing: none), oldest created first, in
 * *out (the caller frees each with taskrec_free, then the array). A
 * record that cannot be read or decoded is logged (naming its file and
 * why), left on disk untouched and skipped. 0, or -1 with errno if dir
 * cannot be read. */
int taskrec_load_all(const char *dir, struct taskrec **out, size_t *n);
/* Removes <dir>/<id> and every file in it. */
void taskrec_remove(const char *dir, const char *id);

#endif
