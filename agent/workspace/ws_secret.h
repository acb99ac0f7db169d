/* ws_secret: the credential berth-workspace holds for one run — read
 * whole from the pipe berthd filled and closed ("USERNAME\nPASSWORD\n")
 * — and kept out of everything it reports: a text goes to berthd tamed,
 * its control bytes made '?' and the credential's parts "[redacted]"
 * (berthd redacts again: this side cannot be the only one).
 *
 * Ownership: a ws_secret is its holder's (in memory it locks); wipe it
 * with ws_secret_wipe when the run ends. */
#ifndef BERTH_WS_SECRET_H
#define BERTH_WS_SECRET_H

#include <stddef.h>

/* A username line and a password line, with room to spare. */
#define WS_SECRET_MAX 2200
/* A reason as wsreport.h takes it: cut only once it is tamed. */
#define WS_SECRET_REASON_MAX 1024

struct ws_secret {
	char buf[WS_SECRET_MAX + 1];
	size_t len; /* 0: none */
};

/* Reads the credential from fd (then closed). 0, or -1 if it did not
 * arrive whole (nothing, or no line end at its end). */
int ws_secret_read(struct ws_secret *s, int fd);
/* Writes in[0..n) into out (at most max bytes and a NUL), tamed: control
 * bytes '?', each part of the credential of at least 4 bytes (and a tail
 * of in that begins one: in may have been cut) "[redacted]". Returns the
 * length written. */
size_t ws_secret_tame(
    const struct ws_secret *s, const char *in, size_t n, char *out, size_t max);
/* Reports "failed REASON" on stdout, the reason tamed ("git failed" if
 * nothing is left of it). */
void ws_secret_failed(const struct ws_secret *s, const char *reason);
void ws_secret_wipe(struct ws_secret *s);

#endif
