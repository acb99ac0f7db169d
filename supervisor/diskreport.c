/* diskreport: berth-disk's report line (see diskreport.h). */
#include <string.h>

#include "diskreport.h"

static bool
diskreport_is(const char *line, size_t len, const char *word)
{
	return len == strlen(word) && memcmp(line, word, len) == 0;
}

int
diskreport_parse(const char *line, size_t len, struct diskreport *r)
{
	static const char err[] = "error: ", conflict[] = "conflict: ";
	size_t i;

	memset(r, 0, sizeof *r);
	if (diskreport_is(line, len, "ok loop") ||
	    diskreport_is(line, len, "ok quota")) {
		r->ok = true;
		r->how = line[3] == 'l' ? "loop ext4 image" : "project quota";
		return 0;
	}
	if (len <= sizeof err - 1 ||
	    len - (sizeof err - 1) > DISKREPORT_WHY_MAX ||
	    memcmp(line, err, sizeof err - 1) != 0)
		return -1;
	r->why = line + sizeof err - 1;
	r->whylen = len - (sizeof err - 1);
	for (i = 0; i < r->whylen; i++)
		if ((unsigned char)r->why[i] < 0x20 || r->why[i] == 0x7f)
			return -1;
	/* A reason that begins or ends with a space hides a field. */
	if (r->why[0] == ' ' || r->why[r->whylen - 1] == ' ')
		return -1;
	r->conflict = r->whylen > sizeof conflict - 1 &&
	    memcmp(r->why, conflict, sizeof conflict - 1) == 0;
	return 0;
}
