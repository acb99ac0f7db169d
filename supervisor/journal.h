/* journal: the durable, sequenced event log in the state directory.
 *
 * Every event is appended here before it is sent anywhere. Records are
 * framed and checksummed; a torn tail left by a crash is detected on open
 * and cut, never read as data. The log is a series of segment files named
 * by the first seq they hold; when the total passes a bound the oldest
 * segments are deleted, and a reader asking for a seq older than what
 * remains learns the first seq still held.
 *
 * Ownership: journal_open allocates the journal, journal_close frees it.
 * A cursor is allocated by journal_cursor_open and freed by
 * journal_cursor_close, and must be closed before its journal. */
#ifndef BERTH_JOURNAL_H
#define BERTH_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct journal;
struct journal_cursor;

struct journal_opts {
	size_t segment_bytes; /* start a new segment past this size */
	size_t max_bytes;     /* delete oldest segments past this total */
	size_t max_record;    /* the largest payload accepted */
	bool sync;            /* fdatasync after every append */
};

/* Opens (creating if needed, mode 0700) the journal in dir. With fresh,
 * every existing segment is deleted first: a new boot starts at seq 1.
 * Otherwise seqs continue after the last intact record. NULL on failure
 * with *cause set (the caller frees it). */
struct journal *journal_open(
    const char *dir, const struct journal_opts *opts, bool fresh, char **cause);
void journal_close(struct journal *j);

/* The seq the next append must carry (1 for an empty journal). */
uint64_t journal_next_seq(const struct journal *j);
/* The oldest seq still held, or journal_next_seq when empty. */
uint64_t journal_first_seq(const struct journal *j);

/* Appends one record; seq must equal journal_next_seq. Returns 0, or -1
 * with *cause set (the caller frees it); on -1 nothing was appended. */
int journal_append(struct journal *j, uint64_t seq, const void *payload,
    size_t len, char **cause);

/* A reader positioned at the first record with seq >= from_seq that the
 * journal still holds (compare journal_cursor_seq with from_seq to see a
 * gap). Never NULL. */
struct journal_cursor *journal_cursor_open(
    struct journal *j, uint64_t from_seq);
/* The seq of the record the next journal_cursor_next will return. */
uint64_t journal_cursor_seq(const struct journal_cursor *c);
/* Returns 1 with the next record (payload owned by the cursor, valid until
 * the next call), 0 when the cursor has caught up with the last append
 * (call again after more appends), or -1 with *cause set if the journal
 * cannot be read (the caller frees cause). Seqs come back increasing; a
 * reader that rotation outran finishes the segment it had open, then
 * jumps to the oldest segment left, so a gap mid-stream shows as a *seq
 * above what journal_cursor_seq said before the call. */
int journal_cursor_next(struct journal_cursor *c, const uint8_t **payload,
    size_t *len, uint64_t *seq, char **cause);
void journal_cursor_close(struct journal_cursor *c);

#endif
