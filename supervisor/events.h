/* events: the event stream — sequencing, the journal, and telling the
 * subscribers something new is there.
 *
 * An event is packed once, appended to the journal (which gives it its
 * seq), and only then announced; subscribers read it back through journal
 * cursors, so a slow one costs disk reads, never memory or the producer's
 * time. Usage:
 *
 *	msgpack_packer *pk = events_begin(EV_SERVICE_STARTED);
 *	msgpack_pack_map(pk, 2); ...pack the data map...
 *	events_commit();
 */
#ifndef BERTH_EVENTS_H
#define BERTH_EVENTS_H

#include <msgpack.h>
#include <stdbool.h>
#include <stdint.h>

#include "journal.h"

/* Opens the journal in <state_dir>/journal. Returns 0 or -1 with *cause. */
int events_init(const char *state_dir, const struct journal_opts *opts,
    bool fresh, char **cause);
void events_shutdown(void);

/* Starts an event of kind; the caller packs exactly one map (the data). */
msgpack_packer *events_begin(const char *kind);
/* Journals the event begun last and announces it. Returns its seq, or 0 if
 * the journal refused it (logged; the event is then not sent anywhere). */
uint64_t events_commit(void);

/* Called after every commit, so subscribers can pump. */
void events_set_notify(void (*cb)(void));

struct journal *events_journal(void);
/* The seq of the last journaled event, 0 if none. */
uint64_t events_last_seq(void);
uint64_t events_first_seq(void);

#endif
