/* fuzz_ws_cred: libFuzzer target for the check berth-workspace's
 * credential helper makes of git's request (ws_cred_match), whose host
 * and path a workspace's config or a server's redirect chose. It never
 * reads past the request, never answers a request without the requested
 * host, and its why is a line without control bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ws_cred.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char url[] = "https://git.example:8443/team/repo.git";
	char *req = malloc(size > 0 ? size : 1), why[128];
	size_t i;

	memcpy(req, data, size);
	why[0] = '\0';
	if (ws_cred_match(req, size, url, why, sizeof why)) {
		if (memmem(req, size, "host=git.example:8443", 21) == NULL)
			abort();
	} else
		for (i = 0; why[i] != '\0'; i++)
			if ((unsigned char)why[i] < 0x20)
				abort();
	free(req);
	return 0;
}
