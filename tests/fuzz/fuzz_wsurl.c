/* fuzz_wsurl: libFuzzer target for the repository URLs workspace.prepare
 * takes (wsurl.c), a check berthd runs on a client's bytes. A URL taken
 * must be what the check promises: https://, an authority with no
 * userinfo, a path, no query or fragment, no space, control byte or
 * backslash. A refusal's message must quote none of the input's bytes
 * past the scheme (it is static: its pointer never lands in the input). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wsurl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *url = malloc(size > 0 ? size : 1);
	const char *why, *slash;
	size_t i;

	memcpy(url, data, size);
	why = wsurl_check(url, size);
	if (why != NULL) {
		if (why >= url && why < url + size)
			abort();
		free(url);
		return 0;
	}
	if (size < 10 || size > WSURL_MAX || memcmp(url, "https://", 8) != 0)
		abort();
	for (i = 0; i < size; i++)
		if ((unsigned char)url[i] <= 0x20 || url[i] == 0x7f ||
		    url[i] == '\\' || url[i] == '?' || url[i] == '#')
			abort();
	slash = memchr(url + 8, '/', size - 8);
	if (slash == NULL || slash == url + 8 || slash + 1 == url + size ||
	    memchr(url + 8, '@', (size_t)(slash - url - 8)) != NULL)
		abort();
	free(url);
	return 0;
}
