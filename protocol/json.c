/* json: renders a msgpack object as JSON text. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "json.h"
#include "log.h"

void
json_write_str(FILE *f, const char *s, size_t len)
{
	size_t i;

	fputc('"', f);
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		switch (c) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		default:
			if (c < 0x20 || c == 0x7f)
				fprintf(f, "\\u%04x", c);
			else
				fputc(c, f);
		}
	}
	fputc('"', f);
}

/* In pieces of 3 * 256 bytes, so that a large bin needs no large
 * buffer. */
static void
json_write_base64(FILE *f, const unsigned char *p, size_t n)
{
	char buf[BASE64_SIZE(768)];
	size_t k;

	fputc('"', f);
	for (; n > 0; p += k, n -= k) {
		k = n < 768 ? n : 768;
		base64_encode(p, k, buf);
		fputs(buf, f);
	}
	fputc('"', f);
}

static void
json_write_key(FILE *f, const msgpack_object *k)
{
	if (k->type == MSGPACK_OBJECT_STR) {
		json_write_str(f, k->via.str.ptr, k->via.str.size);
		return;
	}
	char *s = json_string(k);
	json_write_str(f, s, strlen(s));
	free(s);
}

void
json_write(FILE *f, const msgpack_object *o)
{
	uint32_t i;

	switch (o->type) {
	case MSGPACK_OBJECT_NIL: fputs("null", f); break;
	case MSGPACK_OBJECT_BOOLEAN:
		fputs(o->via.boolean ? "true" : "false", f);
		break;
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		fprintf(f, "%" PRIu64, o->via.u64);
		break;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		fprintf(f, "%" PRId64, o->via.i64);
		break;
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		/* JSON has no NaN or infinity. */
		if (o->via.f64 != o->via.f64 ||
		    o->via.f64 > 1.7976931348623157e308 ||
		    o->via.f64 < -1.7976931348623157e308)
			fputs("null", f);
		else
			fprintf(f, "%.17g", o->via.f64);
		break;
	case MSGPACK_OBJECT_STR:
		json_write_str(f, o->via.str.ptr, o->via.str.size);
		break;
	case MSGPACK_OBJECT_BIN:
		fputs("{\"$bin\":", f);
		json_write_base64(
		    f, (const unsigned char *)o->via.bin.ptr, o->via.bin.size);
		fputc('}', f);
		break;
	case MSGPACK_OBJECT_ARRAY:
		fputc('[', f);
		for (i = 0; i < o->via.array.size; i++) {
			if (i > 0)
				fputc(',', f);
			json_write(f, &o->via.array.ptr[i]);
		}
		fputc(']', f);
		break;
	case MSGPACK_OBJECT_MAP:
		fputc('{', f);
		for (i = 0; i < o->via.map.size; i++) {
			if (i > 0)
				fputc(',', f);
			json_write_key(f, &o->via.map.ptr[i].key);
			fputc(':', f);
			json_write(f, &o->via.map.ptr[i].val);
		}
		fputc('}', f);
		break;
	default: fputs("null", f); break;
	}
}

char *
json_string(const msgpack_object *obj)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL)
		log_fatal("open_memstream: %m");
	json_write(f, obj);
	if (fclose(f) != 0)
		log_fatal("out of memory rendering JSON");
	return buf;
}
