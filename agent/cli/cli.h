/* cli: what every berth command shares — for now its exit statuses. */
#ifndef BERTH_CLI_H
#define BERTH_CLI_H

/* Exit statuses, part of the CLI's interface (docs/operations.md). */
enum cli_exit {
	CLI_EXIT_OK = 0,
	/* The server answered with an error, or a file here failed. */
	CLI_EXIT_FAILED = 1,
	CLI_EXIT_USAGE = 2,
	CLI_EXIT_CONNECT = 3, /* cannot connect, or the connection was lost */
	CLI_EXIT_AUTH = 4,    /* the token was refused, or is unreadable */
	/* exec's own, beside its command's (as timeout(1) has them). */
	CLI_EXIT_EXEC_TIMEOUT = 124, /* --timeout ran out; the command died */
	CLI_EXIT_EXEC_BERTH = 125,   /* berth failed: usage, connection... */
	CLI_EXIT_SIGNAL = 128,       /* + N: signal N ended it */
};

#endif
