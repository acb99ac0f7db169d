/* cli_bar: a transfer's progress bar on stderr, drawn only when stderr
 * is a terminal: "NAME  12.5 MiB / 50.0 MiB   25%  8.1 MiB/s". */
#ifndef BERTH_CLI_BAR_H
#define BERTH_CLI_BAR_H

#include <stdbool.h>
#include <stdint.h>

/* One bar, inside the transfer it shows; owns name, from cli_bar_init
 * until cli_bar_end. */
struct cli_bar {
	bool on;
	char *name; /* safe on a terminal */
	uint64_t total;
	uint64_t started;
	uint64_t drawn;
	bool midline; /* a bar is drawn and its line not ended */
};

/* A bar for name, of total bytes; none when quiet or stderr is no
 * terminal. */
void cli_bar_init(
    struct cli_bar *b, bool quiet, const char *name, uint64_t total);
/* Draws the bar again if it is due (always when last), and ends its line
 * when last. */
void cli_bar_draw(struct cli_bar *b, uint64_t done, bool last);
/* The end, whole or not: a line left open is ended where it stands. */
void cli_bar_end(struct cli_bar *b);

#endif
