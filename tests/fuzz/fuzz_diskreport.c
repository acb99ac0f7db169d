/* fuzz_diskreport: libFuzzer target for the line berthd reads from
 * berth-disk (diskreport.c). Any input is one line: a report taken must
 * hold what the format promises (ok with a known mechanism, or a reason
 * of 1 to DISKREPORT_WHY_MAX bytes inside the line, without control
 * bytes, "conflict: " leading when it says conflict). The line is a copy
 * of exactly its size, so a read past len is the sanitizer's to catch. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "diskreport.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *line = malloc(size > 0 ? size : 1);
	struct diskreport r;
	size_t i;

	memcpy(line, data, size);
	if (diskreport_parse(line, size, &r) == 0) {
		if (r.ok && (r.how == NULL || r.why != NULL))
			abort();
		if (!r.ok) {
			if (r.why < line || r.whylen == 0 ||
			    r.whylen > DISKREPORT_WHY_MAX ||
			    r.why + r.whylen != line + size)
				abort();
			for (i = 0; i < r.whylen; i++)
				if ((unsigned char)r.why[i] < 0x20 ||
				    r.why[i] == 0x7f)
					abort();
			if (r.conflict && memcmp(r.why, "conflict: ", 10) != 0)
				abort();
		}
	}
	free(line);
	return 0;
}
