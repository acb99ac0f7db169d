/* taskout: one output stream of a task (the agent's stdout, its stderr, a
 * check's output), kept whole in a file of the state directory and read
 * by offset. Unlike a command's ring (stream.h) nothing is ever dropped:
 * a reader that comes back, even after berthd restarted, reads from any
 * offset up to the end. A viewer is a connection and its offset; bytes
 * move to it only while its connection has room (server_out_room), and
 * reach it as data messages of the stream's name, in order, then one
 * with eof once the stream has ended and the viewer is at its end.
 *
 * Ownership: the task owns each struct taskout (taskout_open ... close);
 * the taskout owns its descriptor and its viewers. server.c calls
 * taskout_conn_pump when a connection drained and taskout_conn_gone
 * before it frees one. */
#ifndef BERTH_TASKOUT_H
#define BERTH_TASKOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server.h"

struct taskout;

/* name: the stream's name in data messages ("task/ID/agent"), copied.
 * create: a new stream (path created 0600, or emptied), open for
 * writing; else an existing one, whole and ended (its size the file's;
 * a missing file is an empty stream). NULL with errno. */
struct taskout *taskout_open(const char *path, const char *name, bool create);
/* Appends data to the file and moves the viewers along. A write the
 * filesystem refuses is logged once and counted (taskout_unsaved): the
 * bytes cannot be kept, and the stream says so rather than pretending.
 * Nothing is written after it, so the file is the stream's start, never
 * a stream with a hole in it. */
void taskout_write(struct taskout *o, const void *data, size_t len);
/* No byte will follow: viewers at the end get eof. */
void taskout_end(struct taskout *o);
uint64_t taskout_size(const struct taskout *o);
bool taskout_ended(const struct taskout *o);
uint64_t taskout_unsaved(const struct taskout *o);
const char *taskout_name(const struct taskout *o);

/* Attaches c from offset from (moving c's viewer of o if it has one).
 * -1 if from is past the end. The caller replies first, then calls
 * taskout_pump(o) to start the bytes. */
int taskout_attach(struct taskout *o, struct server_conn *c, uint64_t from);
/* Whether c is attached to o. */
bool taskout_attached(const struct taskout *o, const struct server_conn *c);
/* Sends every viewer what its connection has room for. */
void taskout_pump(struct taskout *o);
/* Frees o: its viewers go (no eof), the file stays. */
void taskout_close(struct taskout *o);

/* c has room again: its viewers move along. */
void taskout_conn_pump(struct server_conn *c);
/* c is going away: its viewers go. */
void taskout_conn_gone(struct server_conn *c);

#endif
