/* fuzz_gw_rfbview: libFuzzer target for the view-only filter of a
 * client's RFB stream (gw_rfbview.c). The input is a conversation:
 * records of one byte (bit 0: from the server; the rest: a length) and
 * that many bytes. It is played three ways: each record whole, each a
 * byte at a time, and, fed what the first let through, once more. The
 * first two agree on every byte passed and on the verdict; no call
 * passes more than it was given; and what passed passes again whole
 * (the filter keeps nothing that it drops), so that it holds only
 * messages a viewer may send. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gw_rfbview.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Filters a copy of exactly len bytes, so that a read past the end is
 * caught, into a buffer of its own. */
static size_t
fuzz_client(struct gw_rfbview *v, const uint8_t *buf, size_t len, uint8_t *out)
{
	uint8_t *copy = malloc(len > 0 ? len : 1);
	size_t r;

	memcpy(copy, buf, len);
	r = gw_rfbview_from_client(v, copy, len, copy);
	if (r > len)
		abort();
	memcpy(out, copy, r);
	free(copy);
	return r;
}

static void
fuzz_server(struct gw_rfbview *v, const uint8_t *buf, size_t len)
{
	uint8_t *copy = malloc(len > 0 ? len : 1);

	memcpy(copy, buf, len);
	gw_rfbview_from_server(v, copy, len);
	free(copy);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gw_rfbview whole, bytes, again;
	uint8_t a[128], b[128], c[128];
	size_t i = 0, len, k, na, nb, nc;
	int server;

	gw_rfbview_init(&whole);
	gw_rfbview_init(&bytes);
	gw_rfbview_init(&again);
	while (i < size) {
		server = data[i] & 1;
		len = data[i] >> 1;
		i++;
		if (len > size - i)
			len = size - i;
		if (server) {
			fuzz_server(&whole, data + i, len);
			for (k = 0; k < len; k++)
				fuzz_server(&bytes, data + i + k, 1);
			fuzz_server(&again, data + i, len);
		} else {
			na = fuzz_client(&whole, data + i, len, a);
			for (k = 0, nb = 0; k < len; k++)
				nb += fuzz_client(
				    &bytes, data + i + k, 1, b + nb);
			if (na != nb || memcmp(a, b, na) != 0)
				abort();
			/* Until the first is closed, the third has seen the
			 * same handshake and only passable messages. */
			if (gw_rfbview_error(&whole) == NULL) {
				nc = fuzz_client(&again, a, na, c);
				if (nc != na || memcmp(a, c, na) != 0 ||
				    gw_rfbview_error(&again) != NULL)
					abort();
			}
		}
		if ((gw_rfbview_error(&whole) == NULL) !=
		    (gw_rfbview_error(&bytes) == NULL))
			abort();
		if (gw_rfbview_error(&whole) != NULL) {
			if (strcmp(gw_rfbview_error(&whole),
			        gw_rfbview_error(&bytes)) != 0)
				abort();
			return 0;
		}
		i += len;
	}
	return 0;
}
