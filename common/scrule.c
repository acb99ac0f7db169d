/* scrule: adding seccomp rules (see scrule.h). */
#include <string.h>

#include "scrule.h"
#include "xmalloc.h"

struct scmp_arg_cmp
scrule_cmp(unsigned arg, enum scmp_compare op, scmp_datum_t a, scmp_datum_t b)
{
	struct scmp_arg_cmp c = {
	    .arg = arg, .op = op, .datum_a = a, .datum_b = b};

	return c;
}

int
scrule_add(scmp_filter_ctx sc, uint32_t action, int nr, unsigned n,
    const struct scmp_arg_cmp *args, const char *what, char **cause)
{
	int r = seccomp_rule_add_array(sc, action, nr, n, args);

	if (r < 0) {
		*cause = xasprintf("seccomp: cannot add the rule for %s: %s",
		    what, strerror(-r));
		return -1;
	}
	return 0;
}

int
scrule_add_names(scmp_filter_ctx sc, uint32_t action, const char *const *names,
    size_t n, char **cause)
{
	size_t i;
	int nr;

	for (i = 0; i < n; i++) {
		nr = seccomp_syscall_resolve_name(names[i]);
		if (nr == __NR_SCMP_ERROR) {
			*cause = xasprintf(
			    "seccomp: unknown system call %s", names[i]);
			return -1;
		}
		if (scrule_add(sc, action, nr, 0, NULL, names[i], cause) < 0)
			return -1;
	}
	return 0;
}

int
scrule_add_families(scmp_filter_ctx sc, uint32_t action, const int *families,
    size_t n, char **cause)
{
	struct scmp_arg_cmp c;
	size_t i;

	for (i = 0; i < n; i++) {
		c = scrule_cmp(0, SCMP_CMP_EQ, (scmp_datum_t)families[i], 0);
		if (scrule_add(sc, action, SCMP_SYS(socket), 1, &c,
		        "a socket family", cause) < 0)
			return -1;
	}
	return 0;
}
