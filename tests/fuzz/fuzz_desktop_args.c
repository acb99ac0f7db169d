/* fuzz_desktop_args: libFuzzer target for what reads the desktop ops'
 * arguments in berth-desktop: desktop.input's whole parser (every action,
 * key names and combos, text), the shared argument readers (opargs.c) and
 * the UTF-8 decoder and key names of keymap.c. The input is one msgpack
 * object, checked first as every message is; the same bytes are also
 * decoded as UTF-8 and tried as a key name. Nothing may crash, and what
 * the readers accept must lie within the limits they promise (what they
 * leave absent keeps the defaults, which do too). */
#include <msgpack.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "input.h"
#include "keymap.h"
#include "mpcheck.h"
#include "opargs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_W 1280
#define FUZZ_H 800

static void
fuzz_readers(const msgpack_object *o)
{
	static const char *const keys[] = {
	    "region", "scale", "format", "quality", "cursor", NULL};
	static const char *const formats[] = {"png", "jpeg", NULL};
	struct opargs_rect r;
	char *cause = NULL;
	int64_t q = 80;
	double scale = 1;
	bool cursor = true;
	int format = 0;

	if (opargs_known(o, keys, &cause) < 0)
		free(cause), cause = NULL;
	if (opargs_int(o, "quality", 1, 100, &q, &cause) < 0)
		free(cause), cause = NULL;
	else if (q < 1 || q > 100)
		abort();
	if (opargs_number(o, "scale", 0.05, 4.0, &scale, &cause) < 0)
		free(cause), cause = NULL;
	else if (!(scale >= 0.05 && scale <= 4.0))
		abort();
	if (opargs_bool(o, "cursor", &cursor, &cause) < 0)
		free(cause), cause = NULL;
	if (opargs_word(o, "format", formats, &format, &cause) < 0)
		free(cause), cause = NULL;
	else if (format < 0 || format > 1)
		abort();
	memset(&r, 0, sizeof r);
	r.width = FUZZ_W;
	r.height = FUZZ_H;
	if (opargs_rect(o, "region", FUZZ_W, FUZZ_H, &r, &cause) < 0)
		free(cause), cause = NULL;
	else if (r.x < 0 || r.y < 0 || r.width < 1 || r.height < 1 ||
	    (int64_t)r.x + r.width > FUZZ_W || (int64_t)r.y + r.height > FUZZ_H)
		abort();
	if (input_parse_args(o, &cause) != 0 && cause == NULL)
		abort();
	free(cause);
}

/* Every code point decoded is a scalar value, and each step advances. */
static void
fuzz_utf8(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size, *was;
	char name[65];
	uint32_t cp;

	while (p < end) {
		was = p;
		if (keymap_utf8(&p, end, &cp) != 0) {
			if (p != was)
				abort();
			p++;
			continue;
		}
		if (p <= was || p > end || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			abort();
		(void)keymap_char(cp);
	}
	if (size < sizeof name) {
		memcpy(name, data, size);
		name[size] = '\0';
		(void)keymap_name(name);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct mpcheck_limits lim = {32, 65536};
	msgpack_unpacked u;
	const char *why;

	fuzz_utf8(data, size);
	if (mpcheck_object(data, size, &lim, &why) != 0)
		return 0;
	msgpack_unpacked_init(&u);
	if (msgpack_unpack_next(&u, (const char *)data, size, NULL) ==
	    MSGPACK_UNPACK_SUCCESS)
		fuzz_readers(&u.data);
	msgpack_unpacked_destroy(&u);
	return 0;
}
