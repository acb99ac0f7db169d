/* cli_bar: a transfer's progress bar (see cli_bar.h), redrawn at most
 * every CLI_BAR_MS. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_bar.h"
#include "cli_print.h"
#include "clock.h"
#include "xmalloc.h"

#define CLI_BAR_MS 200

void
cli_bar_init(struct cli_bar *b, bool quiet, const char *name, uint64_t total)
{
	memset(b, 0, sizeof *b);
	b->on = !quiet && isatty(STDERR_FILENO);
	b->name = cli_print_tame(xstrdup(name));
	b->total = total;
	b->started = clock_mono_ms();
}

/* "12.5 MiB" */
static void
cli_bar_human(char *buf, size_t len, double n)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	size_t u = 0;

	while (n >= 1024 && u < sizeof units / sizeof units[0] - 1) {
		n /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%.0f B", n);
	else
		snprintf(buf, len, "%.1f %s", n, units[u]);
}

void
cli_bar_draw(struct cli_bar *b, uint64_t done, bool last)
{
	uint64_t now = clock_mono_ms(), pct;
	char have[32], all[32], rate[32];
	double secs;

	if (!b->on || (!last && now - b->drawn < CLI_BAR_MS))
		return;
	b->drawn = now;
	secs = (double)(now - b->started) / 1000;
	pct = b->total == 0 ? 100 : done * 100 / b->total;
	cli_bar_human(have, sizeof have, (double)done);
	cli_bar_human(all, sizeof all, (double)b->total);
	cli_bar_human(rate, sizeof rate, secs > 0 ? (double)done / secs : 0);
	fprintf(stderr, "\r%s  %s / %s  %3" PRIu64 "%%  %s/s\033[K%s", b->name,
	    have, all, pct, rate, last ? "\n" : "");
	fflush(stderr);
	b->midline = !last;
}

void
cli_bar_end(struct cli_bar *b)
{
	if (b->midline)
		fputc('\n', stderr);
	b->on = false;
	free(b->name);
	b->name = NULL;
}
