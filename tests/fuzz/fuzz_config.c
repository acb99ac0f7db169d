/* fuzz_config: libFuzzer target for berthd's configuration parser. The
 * input is the text of a file; whatever it holds, parsing ends in a
 * result or a cause, and config_free releases all of it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config cfg;
	char *text, *cause = NULL;
	size_t bytes;

	text = malloc(size + 1);
	if (text == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	config_init(&cfg);
	if (config_parse_string(&cfg, text, "fuzz.conf", &cause) == 0) {
		if (config_finish(&cfg, &cause) < 0 && cause == NULL)
			abort();
	} else if (cause == NULL)
		abort();
	free(cause);
	config_free(&cfg);
	/* Sizes are parsed on their own too, from the whole input. */
	(void)config_parse_size(text, &bytes);
	free(text);
	return 0;
}
