/* boot: the identity of this boot of the sandbox (see boot.h). Owns the
 * <state_dir>/boot file: the kernel's boot id and berth's, one a line. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot.h"
#include "rand.h"
#include "xmalloc.h"

#define BOOT_KERNEL_ID "/proc/sys/kernel/random/boot_id"

static char boot_current[BOOT_ID_LEN + 1];

const char *
boot_id(void)
{
	return boot_current;
}

/* Reads the first line of path into buf (newline stripped); -1 if absent. */
static int
boot_read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	int r = -1;

	if (f == NULL)
		return -1;
	if (fgets(buf, (int)len, f) != NULL) {
		buf[strcspn(buf, "\n")] = '\0';
		r = 0;
	}
	fclose(f);
	return r;
}

int
boot_init(const char *state_dir, bool *fresh, char **cause)
{
	char kernel[64] = "", saved_kernel[64], saved_id[64];
	char *path = xasprintf("%s/boot", state_dir);
	char *tmp = xasprintf("%s/boot.tmp", state_dir);
	FILE *f;
	int r = -1;

	/* Without /proc the kernel boot is unknown: treat every start as the
	 * same kernel boot, so the state directory alone decides. */
	if (boot_read_line(BOOT_KERNEL_ID, kernel, sizeof kernel) < 0)
		strcpy(kernel, "unknown");
	f = fopen(path, "r");
	if (f != NULL && fgets(saved_kernel, sizeof saved_kernel, f) != NULL &&
	    fgets(saved_id, sizeof saved_id, f) != NULL) {
		saved_kernel[strcspn(saved_kernel, "\n")] = '\0';
		saved_id[strcspn(saved_id, "\n")] = '\0';
		if (strcmp(saved_kernel, kernel) == 0 &&
		    strlen(saved_id) == BOOT_ID_LEN &&
		    strspn(saved_id, "0123456789abcdef") == BOOT_ID_LEN) {
			memcpy(boot_current, saved_id, BOOT_ID_LEN + 1);
			*fresh = false;
			r = 0;
		}
	}
	if (f != NULL)
		fclose(f);
	if (r == 0)
		goto out;
	rand_hex(boot_current, BOOT_ID_LEN / 2);
	*fresh = true;
	/* Write and rename so a crash never leaves a half-written id. */
	f = fopen(tmp, "w");
	if (f == NULL || fprintf(f, "%s\n%s\n", kernel, boot_current) < 0 ||
	    fflush(f) != 0 || fsync(fileno(f)) != 0) {
		*cause = xasprintf("%s: %s", tmp, strerror(errno));
		if (f != NULL)
			fclose(f);
		goto out;
	}
	fclose(f);
	if (rename(tmp, path) != 0) {
		*cause = xasprintf("rename %s: %s", tmp, strerror(errno));
		goto out;
	}
	r = 0;
out:
	free(path);
	free(tmp);
	return r;
}
