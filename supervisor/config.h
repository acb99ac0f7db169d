/* config: berthd's configuration file, a small INI dialect.
 *
 *   [berthd]   state_dir, token_file, socket
 *   [gateway]  listen, client_queue, command
 *   [journal]  max_bytes, segment_bytes, sync
 *   [labels]   any key = value
 *   [service NAME]  command, restart, backoff_min_ms, backoff_max_ms
 *
 * One "key = value" per line; "#" or ";" starts a comment line; values run
 * to the end of the line (no inline comments). A command is split on
 * blanks, with "..." and '...' quoting and backslash escapes in "...".
 * Errors name the file and the line. Ownership: config_load and
 * config_parse_string fill a struct config whose strings and lists belong
 * to it; config_free releases them. */
#ifndef BERTH_CONFIG_H
#define BERTH_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#define CONFIG_MAX_LABELS 64
#define CONFIG_MAX_SERVICES 64
#define CONFIG_MAX_ARGS 64
/* The longest value of any key, and the longest label key or value. */
#define CONFIG_MAX_VALUE 4096
#define CONFIG_MAX_LABEL 256
/* The longest line, and the longest service name. */
#define CONFIG_MAX_LINE 8192
#define CONFIG_MAX_NAME 64

enum config_restart {
	CONFIG_RESTART_ALWAYS,
	CONFIG_RESTART_ON_FAILURE,
	CONFIG_RESTART_NEVER,
};

struct config_label {
	char *key;
	char *value;
};

struct config_service {
	char *name;
	char **argv; /* NULL-terminated; argv[0] as written */
	enum config_restart restart;
	unsigned backoff_min_ms;
	unsigned backoff_max_ms;
	int line; /* where the section starts, for later errors */
};

struct config {
	char *path; /* the file read, for messages */
	char *state_dir;
	char *token_file; /* default <state_dir>/token */
	char *socket;     /* default <state_dir>/berthd.sock */
	char *listen;     /* ADDR:PORT of the gateway */
	char *gateway_command;
	size_t client_queue;
	size_t journal_max_bytes;
	size_t journal_segment_bytes;
	bool journal_sync;
	struct config_label labels[CONFIG_MAX_LABELS];
	size_t nlabels;
	struct config_service services[CONFIG_MAX_SERVICES];
	size_t nservices;
};

/* Sets every default. */
void config_init(struct config *cfg);
/* Reads path into cfg (which config_init prepared). Returns 0, or -1 with
 * *cause set to "FILE:LINE: what is wrong" (the caller frees it). */
int config_load(struct config *cfg, const char *path, char **cause);
/* The same from text in memory; name stands for the file in messages. */
int config_parse_string(
    struct config *cfg, const char *text, const char *name, char **cause);
/* Fills the defaults that depend on other keys (token_file, socket) and
 * checks what only the whole file can tell. Returns 0 or -1 with *cause. */
int config_finish(struct config *cfg, char **cause);
void config_free(struct config *cfg);

/* Overrides the gateway's ADDR:PORT (the --listen option), checked as the
 * file's key is. Returns 0 or -1 with *cause. */
int config_set_listen(struct config *cfg, const char *listen, char **cause);

/* Parses "8M", "64K", "1G" or plain bytes. Returns 0 or -1. */
int config_parse_size(const char *s, size_t *out);

#endif
