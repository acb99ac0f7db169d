/* events: sequencing, the journal, and notification (see events.h). Owns
 * the journal and the buffer an event is packed into. */
#include <stdlib.h>

#include "events.h"
#include "log.h"
#include "packcheck.h"
#include "proto.h"
#include "xmalloc.h"

static struct journal *events_j;
static msgpack_sbuffer events_sb;
static msgpack_packer events_pk;
static uint64_t events_pending_seq;
static void (*events_notify)(void);

int
events_init(const char *state_dir, const struct journal_opts *opts, bool fresh,
    char **cause)
{
	char *dir = xasprintf("%s/journal", state_dir);

	events_j = journal_open(dir, opts, fresh, cause);
	free(dir);
	if (events_j == NULL)
		return -1;
	msgpack_sbuffer_init(&events_sb);
	msgpack_packer_init(&events_pk, &events_sb, msgpack_sbuffer_write);
	return 0;
}

void
events_shutdown(void)
{
	if (events_j != NULL)
		journal_close(events_j);
	events_j = NULL;
	msgpack_sbuffer_destroy(&events_sb);
}

msgpack_packer *
events_begin(const char *kind)
{
	msgpack_sbuffer_clear(&events_sb);
	events_pending_seq = journal_next_seq(events_j);
	proto_pack_event(&events_pk, events_pending_seq, proto_now_ms(), kind);
	return &events_pk;
}

uint64_t
events_commit(void)
{
	char *cause = NULL;
	uint64_t seq = events_pending_seq;

	PACKCHECK_SENT(events_sb.data, events_sb.size, NULL);
	if (journal_append(
	        events_j, seq, events_sb.data, events_sb.size, &cause) < 0) {
		log_warn("event %llu not journaled: %s",
		    (unsigned long long)seq, cause);
		free(cause);
		return 0;
	}
	if (events_notify != NULL)
		events_notify();
	return seq;
}

void
events_set_notify(void (*cb)(void))
{
	events_notify = cb;
}

struct journal *
events_journal(void)
{
	return events_j;
}

uint64_t
events_last_seq(void)
{
	return journal_next_seq(events_j) - 1;
}

uint64_t
events_first_seq(void)
{
	return journal_first_seq(events_j);
}
