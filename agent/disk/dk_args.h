/* dk_args: berth-disk's command line, checked whole before anything is
 * touched.
 *
 *	berth-disk --dir DIR --bytes N --uid U --gid G --state STATE
 *
 * DIR and STATE are absolute paths without "." or ".." components, empty
 * components, a trailing "/" or a control byte (DIR is not "/"); N is decimal bytes from
 * DK_ARGS_BYTES_MIN to DK_ARGS_BYTES_MAX; U and G are decimal ids.
 * Ownership: the strings point into argv. */
#ifndef BERTH_DK_ARGS_H
#define BERTH_DK_ARGS_H

#include <stdint.h>
#include <sys/types.h>

#define DK_ARGS_BYTES_MIN (16ull << 20)
#define DK_ARGS_BYTES_MAX (1ull << 50)
#define DK_ARGS_PATH_MAX 4095

struct dk_args {
	const char *dir, *state;
	uint64_t bytes;
	uid_t uid;
	gid_t gid;
};

/* 0, or -1 with dk_why. */
int dk_args_parse(int argc, char **argv, struct dk_args *a);

#endif
