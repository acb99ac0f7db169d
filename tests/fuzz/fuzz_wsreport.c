/* fuzz_wsreport: libFuzzer target for the report lines berthd reads from
 * berth-workspace (wsreport.c). Any input is one line: a report taken
 * must hold what the format promises (a known phase, numbers at most
 * 2^63-1, texts within their limits without control bytes and inside
 * the line, 40 hex digits). The line is a copy of exactly its size, so
 * a read past len is the sanitizer's to catch. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wsreport.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fuzz_text_ok(const struct wsreport *r, size_t max)
{
	size_t i;

	if (r->text == NULL || r->textlen == 0 || r->textlen > max)
		abort();
	for (i = 0; i < r->textlen; i++)
		if ((unsigned char)r->text[i] < 0x20 || r->text[i] == 0x7f)
			abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *line = malloc(size > 0 ? size : 1);
	struct wsreport r;

	memcpy(line, data, size);
	if (wsreport_parse(line, size, &r) == 0) {
		switch (r.kind) {
		case WSREPORT_PROGRESS:
			if (r.phase == NULL || r.objects > INT64_MAX ||
			    r.total > INT64_MAX || r.bytes > INT64_MAX)
				abort();
			break;
		case WSREPORT_DIRTY: fuzz_text_ok(&r, WSREPORT_PATH_MAX); break;
		case WSREPORT_FAILED:
			fuzz_text_ok(&r, WSREPORT_REASON_MAX);
			break;
		case WSREPORT_DONE:
			fuzz_text_ok(&r, WSREPORT_BRANCH_MAX);
			if (strlen(r.commit) != 40 ||
			    strspn(r.commit, "0123456789abcdef") != 40)
				abort();
			break;
		case WSREPORT_CONFLICT:
			if (r.conflict == WSREPORT_CONFLICT_DIRTY &&
			    (r.count == 0 || r.count > INT64_MAX))
				abort();
			break;
		}
		if (r.text != NULL &&
		    (r.text < line || r.text + r.textlen > line + size))
			abort();
	}
	free(line);
	return 0;
}
