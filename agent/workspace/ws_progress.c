/* ws_progress: git's progress lines (see ws_progress.h). */
#include <string.h>

#include "ws_progress.h"

static const struct {
	const char *prefix, *phase;
} ws_progress_phases[] = {
    {"Counting objects:", "counting"},
    {"Compressing objects:", "compressing"},
    {"Receiving objects:", "receiving"},
    {"Resolving deltas:", "resolving"},
    {"Updating files:", "checkout"},
    {"Checking out files:", "checkout"},
};

/* A cursor over the line. */
struct ws_progress_cur {
	const char *p, *end;
};

static bool
ws_progress_skip(struct ws_progress_cur *c, const char *s)
{
	size_t n = strlen(s);

	if ((size_t)(c->end - c->p) < n || memcmp(c->p, s, n) != 0)
		return false;
	c->p += n;
	return true;
}

static void
ws_progress_spaces(struct ws_progress_cur *c)
{
	while (c->p < c->end && *c->p == ' ')
		c->p++;
}

/* Digits into *v (saturating: git's counts fit, garbage must not wrap);
 * *frac gets up to two decimals ("1.20"), in hundredths. */
static bool
ws_progress_num(struct ws_progress_cur *c, uint64_t *v, unsigned *frac)
{
	const char *start = c->p;

	*v = 0;
	while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
		*v = *v > (UINT64_MAX - 9) / 10
		    ? UINT64_MAX
		    : *v * 10 + (uint64_t)(*c->p - '0');
		c->p++;
	}
	if (c->p == start)
		return false;
	if (frac == NULL)
		return true;
	*frac = 0;
	if (c->p < c->end && *c->p == '.') {
		unsigned scale = 10;
		c->p++;
		while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
			*frac += (unsigned)(*c->p - '0') * scale;
			scale /= 10;
			c->p++;
		}
	}
	return true;
}

/* ", 1.20 MiB" after the counts, if git gave it. */
static uint64_t
ws_progress_bytes(struct ws_progress_cur *c)
{
	static const struct {
		const char *unit;
		uint64_t mul;
	} units[] = {{"GiB", 1ull << 30}, {"MiB", 1ull << 20},
	    {"KiB", 1ull << 10}, {"bytes", 1}, {"byte", 1}};
	uint64_t whole;
	unsigned frac, i;

	if (!ws_progress_skip(c, ", ") || !ws_progress_num(c, &whole, &frac) ||
	    !ws_progress_skip(c, " ") || whole >= 1ull << 30)
		return 0;
	for (i = 0; i < sizeof units / sizeof *units; i++)
		if (ws_progress_skip(c, units[i].unit))
			return whole * units[i].mul + frac * units[i].mul / 100;
	return 0;
}

bool
ws_progress_parse(const char *line, size_t len, struct ws_progress *p)
{
	struct ws_progress_cur c = {line, line + len};
	unsigned i;
	uint64_t v;

	ws_progress_skip(&c, "remote: ");
	memset(p, 0, sizeof *p);
	for (i = 0; i < sizeof ws_progress_phases / sizeof *ws_progress_phases;
	     i++)
		if (ws_progress_skip(&c, ws_progress_phases[i].prefix)) {
			p->phase = ws_progress_phases[i].phase;
			break;
		}
	if (p->phase == NULL)
		return false;
	ws_progress_spaces(&c);
	/* "45% (450/1000)", or a bare count where git knows no total. */
	if (!ws_progress_num(&c, &v, NULL))
		return false;
	if (!ws_progress_skip(&c, "% (")) {
		p->objects = v;
		return true;
	}
	if (!ws_progress_num(&c, &p->objects, NULL) ||
	    !ws_progress_skip(&c, "/") ||
	    !ws_progress_num(&c, &p->total, NULL) || !ws_progress_skip(&c, ")"))
		return false;
	p->bytes = ws_progress_bytes(&c);
	return true;
}
