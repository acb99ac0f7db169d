/* fuzz_wsreport_deliver: libFuzzer target for the report lines berthd
 * reads from berth-workspace deliver (wsreport_deliver_parse). Any input
 * is one line: a report taken must hold what the format promises (a
 * known kind and conflict, numbers at most 2^63-1, texts within their
 * limits without control bytes and inside the line, ids of 40 lowercase
 * hex digits). The line is a copy of exactly its size, so a read past
 * len is the sanitizer's to catch. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wsreport.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fuzz_text_ok(
    const struct wsreport_deliver *r, const char *line, size_t size, size_t max)
{
	size_t i;

	if (r->text == NULL || r->textlen == 0 || r->textlen > max ||
	    r->text < line || r->text + r->textlen > line + size)
		abort();
	for (i = 0; i < r->textlen; i++)
		if ((unsigned char)r->text[i] < 0x20 || r->text[i] == 0x7f)
			abort();
}

static void
fuzz_id_ok(const char *id)
{
	if (strlen(id) != 40 || strspn(id, "0123456789abcdef") != 40)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *line = malloc(size > 0 ? size : 1);
	struct wsreport_deliver r;

	memcpy(line, data, size);
	if (wsreport_deliver_parse(line, size, &r) == 0) {
		switch (r.kind) {
		case WSREPORT_DELIVER_CONFLICT:
			if (r.conflict > WSREPORT_DELIVER_NOCHANGE)
				abort();
			break;
		case WSREPORT_DELIVER_FAILED:
			fuzz_text_ok(&r, line, size, WSREPORT_REASON_MAX);
			break;
		case WSREPORT_DELIVER_STAT:
			if (r.files > INT64_MAX || r.insertions > INT64_MAX ||
			    r.deletions > INT64_MAX)
				abort();
			break;
		case WSREPORT_DELIVER_DIFFSTAT:
			fuzz_text_ok(
			    &r, line, size, WSREPORT_DIFFSTAT_LINE_MAX);
			break;
		case WSREPORT_DELIVER_DELIVERED:
			fuzz_id_ok(r.commit);
			fuzz_id_ok(r.base);
			break;
		}
	}
	free(line);
	return 0;
}
