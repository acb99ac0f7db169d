/* fuzz_ws_progress: libFuzzer target for berth-workspace's reading of
 * git's progress lines (ws_progress.c), which come from git as it talks
 * to the network. A line read gives one of the phases berthd's report
 * format knows, and never reads past its length. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ws_progress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const phases[] = {
	    "counting", "compressing", "receiving", "resolving", "checkout"};
	char *line = malloc(size > 0 ? size : 1);
	struct ws_progress p;
	size_t i;
	bool known = false;

	memcpy(line, data, size);
	if (ws_progress_parse(line, size, &p)) {
		for (i = 0; i < sizeof phases / sizeof *phases; i++)
			if (p.phase != NULL && strcmp(p.phase, phases[i]) == 0)
				known = true;
		if (!known)
			abort();
	}
	free(line);
	return 0;
}
