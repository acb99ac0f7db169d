/* cli_desktop: berth screenshot, click, move, scroll, type, key, cursor,
 * desktop info, windows and wait-change, each one request of a desktop.*
 * op, and record start, stop and status over the record.* ops. Every
 * argument is checked here before anything is sent, so that a typo never
 * reaches the screen; a screenshot, or a recording fetched by record
 * stop -o, lands in its file whole. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_desktop.h"
#include "cli_print.h"
#include "cli_xfer.h"
#include "log.h"
#include "sha256.h"
#include "xmalloc.h"

/* The limits of the desktop ops (docs/protocol.md), checked here first
 * so that a usage error says so before anything is sent. */
#define CLI_DESKTOP_COORD_MAX 32767
#define CLI_DESKTOP_SCALE_MIN 0.05
#define CLI_DESKTOP_SCALE_MAX 4.0
#define CLI_DESKTOP_QUALITY_MAX 100
#define CLI_DESKTOP_BUTTON_MAX 9
#define CLI_DESKTOP_SCROLL_MAX 100
#define CLI_DESKTOP_TEXT_MAX 10000
#define CLI_DESKTOP_DELAY_MAX 1000
#define CLI_DESKTOP_ACTIONS_MAX 256
#define CLI_DESKTOP_COMBO_MAX 255
#define CLI_DESKTOP_WAIT_MAX_S 60
#define CLI_DESKTOP_WAIT_DEFAULT_MS 10000
/* What the answer to a type may take beyond --timeout, per character:
 * each one is pressed, released and synced in turn. */
#define CLI_DESKTOP_TYPE_MS 5
/* A screenshot's or a recording's temp file: ".NAME.XXXXXX", unique. */
#define CLI_DESKTOP_TEMP_SUFFIX ".XXXXXX"
/* record.start's limits. */
#define CLI_DESKTOP_FPS_MAX 30
#define CLI_DESKTOP_REC_SECONDS_MAX 86400
/* A recording's id is berth-desktop's to choose (8 hex digits today);
 * the word is only kept short and printable. */
#define CLI_DESKTOP_REC_ID_MAX 64
/* record stop waits at least this long for its answer: the file is
 * finished, made a plain MP4 and copied into the artifact store first. */
#define CLI_DESKTOP_STOP_WAIT_MS 120000
/* An artifact's id: the SHA-256 of its bytes in hex. */
#define CLI_DESKTOP_HEX_ID 64

/* Option values, apart from every global option's. */
enum {
	CLI_DESKTOP_OPT_REGION = 256,
	CLI_DESKTOP_OPT_SCALE,
	CLI_DESKTOP_OPT_FORMAT,
	CLI_DESKTOP_OPT_QUALITY,
	CLI_DESKTOP_OPT_NO_CURSOR,
	CLI_DESKTOP_OPT_BUTTON,
	CLI_DESKTOP_OPT_DOUBLE,
	CLI_DESKTOP_OPT_DX,
	CLI_DESKTOP_OPT_DY,
	CLI_DESKTOP_OPT_DELAY,
	CLI_DESKTOP_OPT_TIMEOUT,
	CLI_DESKTOP_OPT_FPS,
	CLI_DESKTOP_OPT_MAX_SECONDS,
};

/* A rectangle of the screen, as --region gives it. */
struct cli_desktop_rect {
	bool set;
	long x;
	long y;
	long width;
	long height;
};

/* A screenshot's arguments; output points into argv (NULL: stdout). */
struct cli_desktop_shot {
	struct cli_desktop_rect region;
	bool scale_set;
	double scale;
	const char *format; /* NULL until known */
	long quality;       /* 0: the op's default */
	bool cursor;
	const char *output;
};

enum cli_desktop_kind {
	CLI_DESKTOP_MOVE,
	CLI_DESKTOP_CLICK,
	CLI_DESKTOP_SCROLL,
	CLI_DESKTOP_TYPE,
	CLI_DESKTOP_KEY,
};

/* One action of desktop.input; text and combo point into argv or into
 * the caller's buffer. */
struct cli_desktop_action {
	enum cli_desktop_kind kind;
	bool at; /* x and y are given */
	long x;
	long y;
	long button; /* 0: the op's default */
	long count;  /* click: 1, or 2 for --double */
	long dx;
	long dy;
	const char *text;
	size_t len;
	long delay_ms;
	const char *combo;
};

/* desktop.input's actions, for the pack callback. */
struct cli_desktop_input {
	struct cli_desktop_action *actions;
	size_t n;
};

/* desktop.wait_change's arguments. */
struct cli_desktop_wait {
	struct cli_desktop_rect region;
	long timeout_ms;
};

/* ---- reading arguments ---- */

/* A decimal integer in [lo, hi], all of s: 0, or -1. */
static int
cli_desktop_long(const char *s, long lo, long hi, long *out)
{
	const char *p = *s == '-' ? s + 1 : s;
	char *end;
	long v;

	if (*p < '0' || *p > '9')
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* A decimal number, all of s ("0.5", "2", "1e-1"; no sign, no "nan" or
 * "inf"): 0, or -1. */
static int
cli_desktop_double(const char *s, double *out)
{
	char *end;
	double v;

	if (*s != '.' && (*s < '0' || *s > '9'))
		return -1;
	if (strspn(s, "0123456789.eE+-") != strlen(s))
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *end != '\0')
		return -1;
	*out = v;
	return 0;
}

/* --region X,Y,W,H: four integers, a corner within X's coordinates and
 * a size of at least one pixel. Whether it lies within the screen only
 * the screen's server knows. */
static int
cli_desktop_region(struct cli *cli, const char *arg, struct cli_desktop_rect *r)
{
	long *fields[4] = {&r->x, &r->y, &r->width, &r->height};
	char *copy = xstrdup(arg), *rest = copy, *field;
	int n = 0, bad = 0;

	while (!bad && (field = strsep(&rest, ",")) != NULL) {
		bad = n == 4 ||
		    cli_desktop_long(field, n < 2 ? 0 : 1,
		        CLI_DESKTOP_COORD_MAX, fields[n]) != 0;
		n++;
	}
	free(copy);
	if (bad || n != 4)
		return cli_usage(cli,
		    "--region wants X,Y,W,H: four integers, X and Y 0 or "
		    "more, W and H 1 or more, each at most %d: %s",
		    CLI_DESKTOP_COORD_MAX, arg);
	r->set = true;
	return CLI_EXIT_OK;
}

/* The two words X Y of a point on the screen. */
static int
cli_desktop_point(struct cli *cli, char **words, long *x, long *y)
{
	if (cli_desktop_long(words[0], 0, CLI_DESKTOP_COORD_MAX, x) != 0 ||
	    cli_desktop_long(words[1], 0, CLI_DESKTOP_COORD_MAX, y) != 0)
		return cli_usage(cli,
		    "X and Y are pixels, integers from 0 to %d: %s %s",
		    CLI_DESKTOP_COORD_MAX, words[0], words[1]);
	return CLI_EXIT_OK;
}

/* --button: a name, or the number X gives the button. */
static int
cli_desktop_button(struct cli *cli, const char *arg, long *out)
{
	static const struct {
		const char *name;
		long button;
	} names[] = {
	    {"left", 1},
	    {"middle", 2},
	    {"right", 3},
	    {"back", 8},
	    {"forward", 9},
	};
	size_t i;

	for (i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcasecmp(arg, names[i].name) == 0) {
			*out = names[i].button;
			return CLI_EXIT_OK;
		}
	if (cli_desktop_long(arg, 1, CLI_DESKTOP_BUTTON_MAX, out) != 0)
		return cli_usage(cli,
		    "--button wants left, middle, right, back, forward or a "
		    "number from 1 to %d: %s",
		    CLI_DESKTOP_BUTTON_MAX, arg);
	return CLI_EXIT_OK;
}

/* The characters of UTF-8 text (as the op wants it: no overlong forms,
 * no surrogates, nothing above U+10FFFF), or -1. */
static long
cli_desktop_utf8_count(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;
	uint32_t cp, min;
	long n = 0;
	int more, i;

	while (p < end) {
		if (*p < 0x80) {
			p++;
			n++;
			continue;
		}
		if ((*p & 0xe0) == 0xc0) {
			cp = *p & 0x1f;
			more = 1;
			min = 0x80;
		} else if ((*p & 0xf0) == 0xe0) {
			cp = *p & 0x0f;
			more = 2;
			min = 0x800;
		} else if ((*p & 0xf8) == 0xf0) {
			cp = *p & 0x07;
			more = 3;
			min = 0x10000;
		} else
			return -1;
		if (end - p <= more)
			return -1;
		for (i = 1; i <= more; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return -1;
			cp = cp << 6 | (p[i] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return -1;
		p += more + 1;
		n++;
	}
	return n;
}

/* ---- one request ---- */

/* A desktop op's request, for cli_desktop_map_cb to check its answer
 * before show sees it. */
struct cli_desktop_ask {
	const char *op;
	cli_show_cb show;
	void *ctx;
};

/* Every desktop op answers a map: anything else is the server's fault. */
static int
cli_desktop_map_cb(struct cli *cli, const msgpack_object *result, void *arg)
{
	struct cli_desktop_ask *a = arg;

	if (result->type != MSGPACK_OBJECT_MAP)
		return cli_fail(CLI_CONN_PROTOCOL,
		    xasprintf("%s answered with no map", a->op));
	return a->show(cli, result, a->ctx);
}

/*
 * Connects, sends op with args from pack, and shows the result with
 * show (ctx is both's). An error answer is printed as "CODE: MESSAGE"
 * (exit 1). extra_ms is what the op itself may take beyond the time for
 * an answer.
 */
static int
cli_desktop_request(struct cli *cli, const char *op, cli_conn_pack_cb pack,
    void *ctx, int extra_ms, cli_show_cb show)
{
	struct cli_desktop_ask a = {op, show, ctx};

	return cli_ask(cli, op, pack, ctx, extra_ms, cli_desktop_map_cb, &a);
}

/* An integer of a result's map (positive or negative). */
static bool
cli_desktop_int(const msgpack_object *map, const char *key, int64_t *out)
{
	const msgpack_object *v = proto_map_get(map, key);

	if (v == NULL)
		return false;
	if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
	    v->via.u64 <= INT64_MAX)
		*out = (int64_t)v->via.u64;
	else if (v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
		*out = v->via.i64;
	else
		return false;
	return true;
}

/* "WxH+X+Y" of a map {x, y, width, height}; "?" where one is missing. */
static char *
cli_desktop_geometry(const msgpack_object *map)
{
	int64_t x, y, w, h;

	if (map == NULL || !cli_desktop_int(map, "x", &x) ||
	    !cli_desktop_int(map, "y", &y) ||
	    !cli_desktop_int(map, "width", &w) ||
	    !cli_desktop_int(map, "height", &h))
		return xstrdup("?");
	return xasprintf(
	    "%" PRId64 "x%" PRId64 "%+" PRId64 "%+" PRId64, w, h, x, y);
}

/* A string of a result, safe on a terminal; fallback if absent. */
static char *
cli_desktop_text(
    const msgpack_object *map, const char *key, const char *fallback)
{
	const msgpack_object *v = proto_map_get(map, key);
	char *s;
	size_t i;

	if (v == NULL || v->type != MSGPACK_OBJECT_STR)
		return xstrdup(fallback);
	s = xstrndup(v->via.str.ptr, v->via.str.size);
	for (i = 0; s[i] != '\0'; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			s[i] = '?';
	return s;
}

static void
cli_desktop_pack_rect(
    msgpack_packer *pk, const char *key, const struct cli_desktop_rect *r)
{
	proto_pack_str(pk, key);
	msgpack_pack_map(pk, 4);
	proto_pack_kv_i64(pk, "x", r->x);
	proto_pack_kv_i64(pk, "y", r->y);
	proto_pack_kv_i64(pk, "width", r->width);
	proto_pack_kv_i64(pk, "height", r->height);
}

/* ---- screenshot ---- */

static void
cli_desktop_pack_shot_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_desktop_shot *s = ctx;

	msgpack_pack_map(
	    pk, 2 + s->region.set + s->scale_set + (s->quality != 0));
	if (s->region.set)
		cli_desktop_pack_rect(pk, "region", &s->region);
	if (s->scale_set) {
		proto_pack_str(pk, "scale");
		msgpack_pack_double(pk, s->scale);
	}
	proto_pack_kv_str(pk, "format", s->format);
	if (s->quality != 0)
		proto_pack_kv_i64(pk, "quality", s->quality);
	proto_pack_kv_bool(pk, "cursor", s->cursor);
}

/* Whether path ends in ".jpg" or ".jpeg", in any case. */
static bool
cli_desktop_is_jpeg(const char *path)
{
	const char *dot = strrchr(path, '.');

	return dot != NULL && strchr(dot, '/') == NULL &&
	    (strcasecmp(dot, ".jpg") == 0 || strcasecmp(dot, ".jpeg") == 0);
}

/* Writes the image to path whole or not at all. */
static int
cli_desktop_save(const char *path, const void *data, size_t len)
{
	struct cli_xfer_land land = {.fd = -1};
	char *cause = NULL;
	int status = CLI_EXIT_FAILED;

	if (cli_xfer_land_open(&land, path, CLI_DESKTOP_TEMP_SUFFIX, &cause) ==
	    0) {
		if (cli_xfer_write(land.fd, data, len) != 0)
			cause = xasprintf(
			    "cannot write %s: %s", path, strerror(errno));
		else if (cli_xfer_land_commit(&land, 0666, &cause) == 0)
			status = CLI_EXIT_OK;
	}
	cli_xfer_land_discard(&land);
	if (cause != NULL)
		cli_print_warn("%s", cause);
	free(cause);
	return status;
}

/* A result (a map) as JSON with the file it went to put in, and the
 * field drop (NULL: none), the bytes that went there, left out. */
static void
cli_desktop_file_json(
    const msgpack_object *result, const char *drop, const char *file)
{
	const msgpack_object_map *m = &result->via.map;
	msgpack_object_kv *kv = xcalloc(m->size + 1, sizeof *kv);
	size_t dlen = drop != NULL ? strlen(drop) : 0;
	msgpack_object out;
	uint32_t i, n = 0;

	for (i = 0; i < m->size; i++)
		if (drop == NULL || m->ptr[i].key.type != MSGPACK_OBJECT_STR ||
		    m->ptr[i].key.via.str.size != dlen ||
		    memcmp(m->ptr[i].key.via.str.ptr, drop, dlen) != 0)
			kv[n++] = m->ptr[i];
	kv[n].key.type = MSGPACK_OBJECT_STR;
	kv[n].key.via.str.ptr = "file";
	kv[n].key.via.str.size = 4;
	kv[n].val.type = MSGPACK_OBJECT_STR;
	kv[n].val.via.str.ptr = file;
	kv[n].val.via.str.size = (uint32_t)strlen(file);
	out.type = MSGPACK_OBJECT_MAP;
	out.via.map.size = n + 1;
	out.via.map.ptr = kv;
	cli_print_json(&out);
	free(kv);
}

static int
cli_desktop_shot_show(struct cli *cli, const msgpack_object *result, void *ctx)
{
	struct cli_desktop_shot *s = ctx;
	const msgpack_object *data = proto_map_get(result, "data");
	int64_t w = 0, h = 0;
	int status;

	if (data == NULL || data->type != MSGPACK_OBJECT_BIN)
		return cli_fail(CLI_CONN_PROTOCOL,
		    xstrdup("desktop.screenshot answered without the image"));
	if (s->output == NULL) {
		if (cli_xfer_write(STDOUT_FILENO, data->via.bin.ptr,
		        data->via.bin.size) != 0) {
			cli_print_warn("cannot write the image to stdout: %s",
			    strerror(errno));
			return CLI_EXIT_FAILED;
		}
		return CLI_EXIT_OK;
	}
	status =
	    cli_desktop_save(s->output, data->via.bin.ptr, data->via.bin.size);
	if (status != CLI_EXIT_OK)
		return status;
	if (cli->json) {
		cli_desktop_file_json(result, "data", s->output);
		return CLI_EXIT_OK;
	}
	cli_desktop_int(result, "width", &w);
	cli_desktop_int(result, "height", &h);
	printf("%s: %" PRId64 "x%" PRId64 " %s, %" PRIu32 " bytes\n", s->output,
	    w, h, s->format, data->via.bin.size);
	return CLI_EXIT_OK;
}

/* Reads the options of screenshot into s. */
static int
cli_desktop_shot_args(
    struct cli *cli, int argc, char **argv, struct cli_desktop_shot *s)
{
	static const struct option opts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"region", required_argument, NULL, CLI_DESKTOP_OPT_REGION},
	    {"scale", required_argument, NULL, CLI_DESKTOP_OPT_SCALE},
	    {"format", required_argument, NULL, CLI_DESKTOP_OPT_FORMAT},
	    {"quality", required_argument, NULL, CLI_DESKTOP_OPT_QUALITY},
	    {"no-cursor", no_argument, NULL, CLI_DESKTOP_OPT_NO_CURSOR},
	    {NULL, 0, NULL, 0},
	};
	char *word;
	int c, status = CLI_EXIT_OK;

	while (status == CLI_EXIT_OK &&
	    (c = cli_next(cli, argc, argv, opts, "o:", &word)) != -1) {
		switch (c) {
		case CLI_STOP: return CLI_EXIT_USAGE;
		case CLI_WORD:
			return cli_usage(
			    cli, "screenshot takes no words: %s", word);
		case 'o':
			if (*optarg == '\0')
				return cli_usage(cli, "an empty -o");
			s->output = strcmp(optarg, "-") == 0 ? NULL : optarg;
			break;
		case CLI_DESKTOP_OPT_REGION:
			status = cli_desktop_region(cli, optarg, &s->region);
			break;
		case CLI_DESKTOP_OPT_SCALE:
			if (cli_desktop_double(optarg, &s->scale) != 0 ||
			    s->scale < CLI_DESKTOP_SCALE_MIN ||
			    s->scale > CLI_DESKTOP_SCALE_MAX)
				return cli_usage(cli,
				    "--scale wants a number from %g to %g: %s",
				    CLI_DESKTOP_SCALE_MIN,
				    CLI_DESKTOP_SCALE_MAX, optarg);
			s->scale_set = true;
			break;
		case CLI_DESKTOP_OPT_FORMAT:
			if (strcmp(optarg, "png") == 0)
				s->format = "png";
			else if (strcmp(optarg, "jpeg") == 0 ||
			    strcmp(optarg, "jpg") == 0)
				s->format = "jpeg";
			else
				return cli_usage(cli,
				    "--format wants png or jpeg: %s", optarg);
			break;
		case CLI_DESKTOP_OPT_QUALITY:
			if (cli_desktop_long(optarg, 1, CLI_DESKTOP_QUALITY_MAX,
			        &s->quality) != 0)
				return cli_usage(cli,
				    "--quality wants an integer from 1 to "
				    "%d: %s",
				    CLI_DESKTOP_QUALITY_MAX, optarg);
			break;
		case CLI_DESKTOP_OPT_NO_CURSOR: s->cursor = false; break;
		}
	}
	return status;
}

static int
cli_desktop_screenshot(struct cli *cli, int argc, char **argv)
{
	struct cli_desktop_shot s = {.cursor = true};
	int status;

	if ((status = cli_desktop_shot_args(cli, argc, argv, &s)) != 0 ||
	    (status = cli_ready(cli)) != 0)
		return status;
	if (s.format == NULL)
		s.format = s.output != NULL && cli_desktop_is_jpeg(s.output)
		    ? "jpeg"
		    : "png";
	if (s.quality != 0 && strcmp(s.format, "jpeg") != 0)
		return cli_usage(cli,
		    "--quality is for JPEG (--format jpeg, or a .jpg file)");
	if (s.output == NULL && cli->json)
		return cli_usage(cli,
		    "--json prints the result on stdout: give -o FILE for "
		    "the image");
	if (s.output == NULL && isatty(STDOUT_FILENO))
		return cli_usage(cli,
		    "stdout is a terminal: give -o FILE, or send stdout to a "
		    "file or a pipe");
	return cli_desktop_request(cli, "desktop.screenshot",
	    cli_desktop_pack_shot_cb, &s, 0, cli_desktop_shot_show);
}

const struct cli_cmd_entry cli_desktop_screenshot_entry = {
    .name = "screenshot",
    .usage = "[-o FILE] [--region X,Y,W,H] [--scale F] [--format png|jpeg] "
             "[--quality N] [--no-cursor]",
    .summary = "the screen, or --region, as PNG or JPEG (by\n"
               "FILE's extension, or --format) into FILE, or to\n"
               "stdout when it is no terminal; --scale 0.05..4,\n"
               "--quality 1..100 (JPEG), --no-cursor leaves the\n"
               "pointer out; --json: the result, not the image",
    .exec = cli_desktop_screenshot,
};

/* ---- input: click, move, scroll, type, key ---- */

/* One action; x and y, when given, come last. */
static void
cli_desktop_pack_action(msgpack_packer *pk, const struct cli_desktop_action *a)
{
	switch (a->kind) {
	case CLI_DESKTOP_MOVE:
		msgpack_pack_map(pk, 1 + 2 * a->at);
		proto_pack_kv_str(pk, "type", "move");
		break;
	case CLI_DESKTOP_CLICK:
		msgpack_pack_map(pk, 3 + 2 * a->at);
		proto_pack_kv_str(pk, "type", "click");
		proto_pack_kv_i64(pk, "button", a->button);
		proto_pack_kv_i64(pk, "count", a->count);
		break;
	case CLI_DESKTOP_SCROLL:
		msgpack_pack_map(pk, 3 + 2 * a->at);
		proto_pack_kv_str(pk, "type", "scroll");
		proto_pack_kv_i64(pk, "dx", a->dx);
		proto_pack_kv_i64(pk, "dy", a->dy);
		break;
	case CLI_DESKTOP_TYPE:
		msgpack_pack_map(pk, 3);
		proto_pack_kv_str(pk, "type", "type");
		proto_pack_str(pk, "text");
		msgpack_pack_str_with_body(pk, a->text, a->len);
		proto_pack_kv_i64(pk, "delay_ms", a->delay_ms);
		break;
	case CLI_DESKTOP_KEY:
		msgpack_pack_map(pk, 2);
		proto_pack_kv_str(pk, "type", "key");
		proto_pack_kv_str(pk, "combo", a->combo);
		break;
	}
	if (a->at) {
		proto_pack_kv_i64(pk, "x", a->x);
		proto_pack_kv_i64(pk, "y", a->y);
	}
}

static void
cli_desktop_pack_input_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_desktop_input *in = ctx;
	size_t i;

	msgpack_pack_map(pk, 1);
	proto_pack_str(pk, "actions");
	msgpack_pack_array(pk, in->n);
	for (i = 0; i < in->n; i++)
		cli_desktop_pack_action(pk, &in->actions[i]);
}

static int
cli_desktop_input_show(struct cli *cli, const msgpack_object *result, void *ctx)
{
	(void)ctx;
	if (cli->json)
		cli_print_json(result);
	return CLI_EXIT_OK;
}

/* Sends the actions as one desktop.input, which checks them all before
 * it performs any. */
static int
cli_desktop_input(
    struct cli *cli, struct cli_desktop_action *actions, size_t n, int extra_ms)
{
	struct cli_desktop_input in = {.actions = actions, .n = n};

	return cli_desktop_request(cli, "desktop.input",
	    cli_desktop_pack_input_cb, &in, extra_ms, cli_desktop_input_show);
}

/* An option of click or scroll, into a. */
static int
cli_desktop_action_opt(struct cli *cli, int c, struct cli_desktop_action *a)
{
	long *d = c == CLI_DESKTOP_OPT_DX ? &a->dx : &a->dy;

	switch (c) {
	case CLI_DESKTOP_OPT_BUTTON:
		return cli_desktop_button(cli, optarg, &a->button);
	case CLI_DESKTOP_OPT_DOUBLE: a->count = 2; break;
	case CLI_DESKTOP_OPT_DX:
	case CLI_DESKTOP_OPT_DY:
		if (cli_desktop_long(optarg, -CLI_DESKTOP_SCROLL_MAX,
		        CLI_DESKTOP_SCROLL_MAX, d) != 0)
			return cli_usage(cli,
			    "--%s wants clicks of the wheel, an integer from "
			    "-%d to %d: %s",
			    c == CLI_DESKTOP_OPT_DX ? "dx" : "dy",
			    CLI_DESKTOP_SCROLL_MAX, CLI_DESKTOP_SCROLL_MAX,
			    optarg);
		break;
	}
	return CLI_EXIT_OK;
}

/* Reads the options of opts and up to two words (X Y): at says whether
 * both were given. Any other number of words is a usage error, and so is
 * none when need is set. */
static int
cli_desktop_xy_args(struct cli *cli, int argc, char **argv,
    const struct option *opts, bool need, struct cli_desktop_action *a)
{
	char *words[2], *word;
	int c, n = 0, status;

	while ((c = cli_next(cli, argc, argv, opts, "", &word)) != -1) {
		if (c == CLI_STOP)
			return CLI_EXIT_USAGE;
		if (c != CLI_WORD) {
			if ((status = cli_desktop_action_opt(cli, c, a)) != 0)
				return status;
			continue;
		}
		if (n == 2)
			return cli_usage(cli, "too many arguments: %s", word);
		words[n++] = word;
	}
	if (n == 1 || (need && n == 0))
		return cli_usage(cli, "%s wants X and Y", cli->cmd->name);
	if (n == 2) {
		if ((status = cli_desktop_point(cli, words, &a->x, &a->y)) != 0)
			return status;
		a->at = true;
	}
	return cli_ready(cli);
}

static int
cli_desktop_click(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"button", required_argument, NULL, CLI_DESKTOP_OPT_BUTTON},
	    {"double", no_argument, NULL, CLI_DESKTOP_OPT_DOUBLE},
	    {NULL, 0, NULL, 0},
	};
	struct cli_desktop_action a = {
	    .kind = CLI_DESKTOP_CLICK, .button = 1, .count = 1};
	int status;

	if ((status = cli_desktop_xy_args(cli, argc, argv, opts, false, &a)) !=
	    0)
		return status;
	return cli_desktop_input(cli, &a, 1, 0);
}

const struct cli_cmd_entry cli_desktop_click_entry = {
    .name = "click",
    .usage = "[--button B] [--double] [X Y]",
    .summary = "click at X Y (or where the pointer is), twice\n"
               "with --double; --button left|middle|right|\n"
               "back|forward|1..9",
    .exec = cli_desktop_click,
};

static int
cli_desktop_move(struct cli *cli, int argc, char **argv)
{
	struct cli_desktop_action a = {.kind = CLI_DESKTOP_MOVE};
	int status;

	if ((status = cli_desktop_xy_args(cli, argc, argv, NULL, true, &a)) !=
	    0)
		return status;
	return cli_desktop_input(cli, &a, 1, 0);
}

const struct cli_cmd_entry cli_desktop_move_entry = {
    .name = "move",
    .usage = "X Y",
    .summary = "move the pointer to X Y",
    .exec = cli_desktop_move,
};

static int
cli_desktop_scroll(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"dx", required_argument, NULL, CLI_DESKTOP_OPT_DX},
	    {"dy", required_argument, NULL, CLI_DESKTOP_OPT_DY},
	    {NULL, 0, NULL, 0},
	};
	struct cli_desktop_action a = {.kind = CLI_DESKTOP_SCROLL};
	int status;

	if ((status = cli_desktop_xy_args(cli, argc, argv, opts, false, &a)) !=
	    0)
		return status;
	if (a.dx == 0 && a.dy == 0)
		return cli_usage(cli,
		    "scroll wants --dy N (down, or up when negative) or "
		    "--dx N (right, or left)");
	return cli_desktop_input(cli, &a, 1, 0);
}

const struct cli_cmd_entry cli_desktop_scroll_entry = {
    .name = "scroll",
    .usage = "[--dx N] [--dy N] [X Y]",
    .summary = "turn the wheel N clicks (at X Y): --dy down\n"
               "(negative: up), --dx right (negative: left)",
    .exec = cli_desktop_scroll,
};

/* All of stdin, at most max bytes: 0, or -1 with errno (E2BIG: more). */
static int
cli_desktop_slurp(char **bufp, size_t *lenp, size_t max)
{
	char *buf = xmalloc(max + 1);
	size_t len = 0;
	ssize_t n;

	for (;;) {
		n = read(STDIN_FILENO, buf + len, max + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(buf);
			return -1;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max) {
			free(buf);
			errno = E2BIG;
			return -1;
		}
	}
	*bufp = buf;
	*lenp = len;
	return 0;
}

/* The text to type, and its characters: the word, or stdin for "-"
 * (*owned is then the buffer to free). */
static int
cli_desktop_text_of(struct cli *cli, const char *word,
    struct cli_desktop_action *a, char **owned, long *charsp)
{
	long chars;

	*owned = NULL;
	*charsp = 0;
	if (strcmp(word, "-") != 0) {
		a->text = word;
		a->len = strlen(word);
	} else if (cli_desktop_slurp(
	               owned, &a->len, CLI_DESKTOP_TEXT_MAX * 4) != 0) {
		if (errno != E2BIG) {
			cli_print_warn(
			    "cannot read stdin: %s", strerror(errno));
			return CLI_EXIT_FAILED;
		}
		return cli_usage(cli, "type takes at most %d characters",
		    CLI_DESKTOP_TEXT_MAX);
	} else
		a->text = *owned;
	if ((chars = cli_desktop_utf8_count(a->text, a->len)) < 0)
		return cli_usage(cli, "the text is not valid UTF-8");
	if (chars > CLI_DESKTOP_TEXT_MAX)
		return cli_usage(cli,
		    "type takes at most %d characters (this is %ld)",
		    CLI_DESKTOP_TEXT_MAX, chars);
	if (chars == 0 && *owned == NULL)
		return cli_usage(cli, "nothing to type");
	*charsp = chars;
	return CLI_EXIT_OK;
}

static int
cli_desktop_type(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"delay", required_argument, NULL, CLI_DESKTOP_OPT_DELAY},
	    {NULL, 0, NULL, 0},
	};
	struct cli_desktop_action a = {.kind = CLI_DESKTOP_TYPE};
	char *word, *text = NULL, *owned = NULL;
	long chars;
	int c, status;

	while ((c = cli_next(cli, argc, argv, opts, "", &word)) != -1) {
		if (c == CLI_STOP)
			return CLI_EXIT_USAGE;
		if (c == CLI_DESKTOP_OPT_DELAY) {
			if (cli_desktop_long(optarg, 0, CLI_DESKTOP_DELAY_MAX,
			        &a.delay_ms) != 0)
				return cli_usage(cli,
				    "--delay wants milliseconds between keys, "
				    "from 0 to %d: %s",
				    CLI_DESKTOP_DELAY_MAX, optarg);
		} else if (text != NULL)
			return cli_usage(
			    cli, "type takes one TEXT (quote it): %s", word);
		else
			text = word;
	}
	if (text == NULL)
		return cli_usage(cli, "type wants TEXT, or - for stdin");
	if ((status = cli_ready(cli)) != 0)
		return status;
	if ((status = cli_desktop_text_of(cli, text, &a, &owned, &chars)) !=
	    0) {
		free(owned);
		return status;
	}
	/* Empty stdin: there is nothing to do, and that is no error. */
	status = chars == 0
	    ? CLI_EXIT_OK
	    : cli_desktop_input(cli, &a, 1,
	          (int)(chars * (CLI_DESKTOP_TYPE_MS + a.delay_ms)));
	free(owned);
	return status;
}

const struct cli_cmd_entry cli_desktop_type_entry = {
    .name = "type",
    .usage = "[--delay MS] TEXT | -",
    .summary = "type TEXT (UTF-8; -: all of stdin) key by key;\n"
               "--delay MS between keys",
    .exec = cli_desktop_type,
};

static int
cli_desktop_key(struct cli *cli, int argc, char **argv)
{
	struct cli_desktop_action *a;
	char *word;
	size_t n = 0;
	int c, status = CLI_EXIT_OK;

	a = xcalloc(CLI_DESKTOP_ACTIONS_MAX, sizeof *a);
	while (status == CLI_EXIT_OK &&
	    (c = cli_next(cli, argc, argv, NULL, "", &word)) != -1) {
		if (c == CLI_STOP)
			status = CLI_EXIT_USAGE;
		else if (*word == '\0' || strlen(word) > CLI_DESKTOP_COMBO_MAX)
			status = cli_usage(cli,
			    "a key is a name like Return, a or ctrl+shift+t, "
			    "at most %d bytes: '%.64s'",
			    CLI_DESKTOP_COMBO_MAX, word);
		else if (n == CLI_DESKTOP_ACTIONS_MAX)
			status = cli_usage(cli, "at most %d keys at once",
			    CLI_DESKTOP_ACTIONS_MAX);
		else {
			a[n].kind = CLI_DESKTOP_KEY;
			a[n++].combo = word;
		}
	}
	if (status == CLI_EXIT_OK && n == 0)
		status =
		    cli_usage(cli, "key wants a key, like Return or ctrl+l");
	if (status == CLI_EXIT_OK)
		status = cli_ready(cli);
	if (status == CLI_EXIT_OK)
		status = cli_desktop_input(cli, a, n, 0);
	free(a);
	return status;
}

const struct cli_cmd_entry cli_desktop_key_entry = {
    .name = "key",
    .usage = "COMBO...",
    .summary = "press each key in turn: Return, ctrl+l, alt+F4",
    .exec = cli_desktop_key,
};

/* ---- cursor, desktop info, windows ---- */

static int
cli_desktop_cursor_show(
    struct cli *cli, const msgpack_object *result, void *ctx)
{
	int64_t x, y;

	(void)ctx;
	if (cli->json) {
		cli_print_json(result);
		return CLI_EXIT_OK;
	}
	if (!cli_desktop_int(result, "x", &x) ||
	    !cli_desktop_int(result, "y", &y))
		return cli_fail(CLI_CONN_PROTOCOL,
		    xstrdup("desktop.cursor answered without x and y"));
	printf("%" PRId64 " %" PRId64 "\n", x, y);
	return CLI_EXIT_OK;
}

static int
cli_desktop_cursor(struct cli *cli, int argc, char **argv)
{
	int status;

	if ((status = cli_no_words(cli, argc, argv)) != 0)
		return status;
	return cli_desktop_request(
	    cli, "desktop.cursor", NULL, NULL, 0, cli_desktop_cursor_show);
}

const struct cli_cmd_entry cli_desktop_cursor_entry = {
    .name = "cursor",
    .usage = "",
    .summary = "where the pointer is: X Y",
    .exec = cli_desktop_cursor,
};

static int
cli_desktop_info_show(struct cli *cli, const msgpack_object *result, void *ctx)
{
	const msgpack_object *screens = proto_map_get(result, "screens");
	int64_t w = 0, h = 0, depth = 0;
	bool shm = false;
	char *display, *geo;
	uint32_t i;

	(void)ctx;
	if (cli->json) {
		cli_print_json(result);
		return CLI_EXIT_OK;
	}
	display = cli_desktop_text(result, "display", "?");
	cli_desktop_int(result, "width", &w);
	cli_desktop_int(result, "height", &h);
	cli_desktop_int(result, "depth", &depth);
	proto_arg_bool(result, "shm", &shm);
	printf("display %s\n", display);
	printf("size    %" PRId64 "x%" PRId64 ", depth %" PRId64 "\n", w, h,
	    depth);
	for (i = 0; screens != NULL && screens->type == MSGPACK_OBJECT_ARRAY &&
	     i < screens->via.array.size;
	     i++) {
		geo = cli_desktop_geometry(&screens->via.array.ptr[i]);
		printf("screen  %s\n", geo);
		free(geo);
	}
	printf("shm     %s\n", shm ? "yes" : "no");
	free(display);
	return CLI_EXIT_OK;
}

static int
cli_desktop_desktop(struct cli *cli, int argc, char **argv)
{
	char *word = NULL;
	int c, status;

	c = cli_next(cli, argc, argv, NULL, "", &word);
	if (c == CLI_STOP)
		return CLI_EXIT_USAGE;
	if (c != CLI_WORD || strcmp(word, "info") != 0)
		return cli_usage(cli, "desktop wants info");
	if ((status = cli_no_words(cli, argc, argv)) != 0)
		return status;
	return cli_desktop_request(
	    cli, "desktop.info", NULL, NULL, 0, cli_desktop_info_show);
}

const struct cli_cmd_entry cli_desktop_desktop_entry = {
    .name = "desktop",
    .usage = "info",
    .summary = "the display: its size, depth and screens",
    .exec = cli_desktop_desktop,
};

/*
 * Prints a table: the header head, then nrows rows of ncols cells each
 * (cells, row after row; taken and freed). Every column is padded to its
 * widest cell but the last, which goes as it is.
 */
static void
cli_desktop_table(
    const char *const *head, int ncols, char **cells, uint32_t nrows)
{
	int *width = xcalloc((size_t)ncols, sizeof *width);
	const char *const *row;
	uint32_t i;
	int j;

	for (j = 0; j < ncols; j++)
		width[j] = (int)strlen(head[j]);
	for (i = 0; i < nrows; i++)
		for (j = 0; j < ncols; j++)
			if ((int)strlen(cells[i * ncols + j]) > width[j])
				width[j] = (int)strlen(cells[i * ncols + j]);
	for (i = 0; i <= nrows; i++) {
		row = i == 0 ? head
		             : (const char *const *)&cells[(i - 1) * ncols];
		for (j = 0; j < ncols - 1; j++)
			printf("%-*s  ", width[j], row[j]);
		printf("%s\n", row[ncols - 1]);
	}
	for (i = 0; i < nrows * (uint32_t)ncols; i++)
		free(cells[i]);
	free(cells);
	free(width);
}

/* The columns of berth windows: id, geometry, active mark, class and
 * title. */
#define CLI_DESKTOP_WCOLS 5

static int
cli_desktop_windows_show(
    struct cli *cli, const msgpack_object *result, void *ctx)
{
	static const char *const head[CLI_DESKTOP_WCOLS] = {
	    "ID", "GEOMETRY", "ACTIVE", "CLASS", "TITLE"};
	const msgpack_object *list = proto_map_get(result, "windows"), *win;
	char **cells, **row;
	bool active;
	int64_t id;
	uint32_t i, n;

	(void)ctx;
	if (cli->json) {
		cli_print_json(result);
		return CLI_EXIT_OK;
	}
	if (list == NULL || list->type != MSGPACK_OBJECT_ARRAY)
		return cli_fail(CLI_CONN_PROTOCOL,
		    xstrdup("desktop.windows answered without windows"));
	if ((n = list->via.array.size) == 0) {
		printf("no windows\n");
		return CLI_EXIT_OK;
	}
	cells = xcalloc((size_t)n * CLI_DESKTOP_WCOLS, sizeof *cells);
	for (i = 0; i < n; i++) {
		win = &list->via.array.ptr[i];
		row = &cells[i * CLI_DESKTOP_WCOLS];
		id = 0;
		active = false;
		cli_desktop_int(win, "id", &id);
		proto_arg_bool(win, "active", &active);
		row[0] = xasprintf("0x%08" PRIx64, (uint64_t)id);
		row[1] = cli_desktop_geometry(win);
		row[2] = xstrdup(active ? "*" : "-");
		row[3] = cli_desktop_text(win, "class", "-");
		row[4] = cli_desktop_text(win, "title", "");
	}
	cli_desktop_table(head, CLI_DESKTOP_WCOLS, cells, n);
	return CLI_EXIT_OK;
}

static int
cli_desktop_windows(struct cli *cli, int argc, char **argv)
{
	int status;

	if ((status = cli_no_words(cli, argc, argv)) != 0)
		return status;
	return cli_desktop_request(
	    cli, "desktop.windows", NULL, NULL, 0, cli_desktop_windows_show);
}

const struct cli_cmd_entry cli_desktop_windows_entry = {
    .name = "windows",
    .usage = "",
    .summary = "the windows: id, geometry, active, class, title",
    .exec = cli_desktop_windows,
};

/* ---- wait-change ---- */

static void
cli_desktop_pack_wait_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_desktop_wait *w = ctx;

	msgpack_pack_map(pk, 1 + w->region.set);
	if (w->region.set)
		cli_desktop_pack_rect(pk, "region", &w->region);
	proto_pack_kv_i64(pk, "timeout_ms", w->timeout_ms);
}

static int
cli_desktop_wait_show(struct cli *cli, const msgpack_object *result, void *ctx)
{
	struct cli_desktop_wait *w = ctx;
	int64_t waited = 0;
	bool changed = false;
	char *area;

	if (proto_arg_bool(result, "changed", &changed) != 1)
		return cli_fail(CLI_CONN_PROTOCOL,
		    xstrdup("desktop.wait_change answered without changed"));
	cli_desktop_int(result, "waited_ms", &waited);
	if (cli->json)
		cli_print_json(result);
	else if (changed) {
		area = cli_desktop_geometry(proto_map_get(result, "area"));
		printf("changed: %s after %" PRId64 " ms\n", area, waited);
		free(area);
	} else
		printf("no change within %g s\n", (double)w->timeout_ms / 1000);
	return changed ? CLI_EXIT_OK : CLI_EXIT_FAILED;
}

static int
cli_desktop_wait_change(struct cli *cli, int argc, char **argv)
{
	/* --timeout is the wait's: it shadows the global one (the time for
	 * an answer), which comes before the command's name. */
	static const struct option opts[] = {
	    {"region", required_argument, NULL, CLI_DESKTOP_OPT_REGION},
	    {"timeout", required_argument, NULL, CLI_DESKTOP_OPT_TIMEOUT},
	    {NULL, 0, NULL, 0},
	};
	struct cli_desktop_wait w = {.timeout_ms = CLI_DESKTOP_WAIT_DEFAULT_MS};
	double s;
	char *word;
	int c, status;

	while ((c = cli_next(cli, argc, argv, opts, "", &word)) != -1) {
		switch (c) {
		case CLI_STOP: return CLI_EXIT_USAGE;
		case CLI_WORD:
			return cli_usage(
			    cli, "wait-change takes no words: %s", word);
		case CLI_DESKTOP_OPT_REGION:
			if ((status = cli_desktop_region(
			         cli, optarg, &w.region)) != 0)
				return status;
			break;
		case CLI_DESKTOP_OPT_TIMEOUT:
			if (cli_desktop_double(optarg, &s) != 0 || !(s > 0) ||
			    s > CLI_DESKTOP_WAIT_MAX_S)
				return cli_usage(cli,
				    "--timeout wants seconds, more than 0 and "
				    "at most %d: %s",
				    CLI_DESKTOP_WAIT_MAX_S, optarg);
			w.timeout_ms = (long)(s * 1000 + 0.5);
			if (w.timeout_ms == 0)
				w.timeout_ms = 1;
			break;
		}
	}
	if ((status = cli_ready(cli)) != 0)
		return status;
	return cli_desktop_request(cli, "desktop.wait_change",
	    cli_desktop_pack_wait_cb, &w, (int)w.timeout_ms,
	    cli_desktop_wait_show);
}

const struct cli_cmd_entry cli_desktop_wait_change_entry = {
    .name = "wait-change",
    .usage = "[--region X,Y,W,H] [--timeout SEC]",
    .summary = "wait until the screen (or --region) changes,\n"
               "at most --timeout SEC (default 10, at most 60);\n"
               "exit status 1 if it did not",
    .exec = cli_desktop_wait_change,
};

/* ---- record ---- */

/* record start's arguments; 0 (or region unset): the op's default. */
struct cli_desktop_rec {
	long fps;
	struct cli_desktop_rect region;
	long max_seconds;
	long quality;
};

/*
 * record stop: record.stop's answer, then, with an output, the MP4 it
 * names read by artifact.read (cli_xfer's ranged read, of a fixed size)
 * into a hidden temp file beside output, hashed as it is written. A lost
 * connection is made again: record.stop is asked again if its answer had
 * not come (a recording that has ended answers at once), and the read
 * goes on from the byte it reached. result is record.stop's answer packed
 * again, as it outlives its connection. On rec_stop's stack; owns result,
 * the read's connection and the landing.
 */
struct cli_desktop_fetch {
	struct cli *cli;
	const char *rec_id; /* argv */
	const char *output; /* argv; NULL: no fetch */
	msgpack_sbuffer result;
	char art_id[CLI_DESKTOP_HEX_ID + 1];
	char sha256[CLI_DESKTOP_HEX_ID + 1];
	struct cli_xfer_read read;
	struct cli_xfer_land land;
	struct sha256 sha;
};

static void
cli_desktop_pack_rec_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_desktop_rec *a = ctx;

	msgpack_pack_map(pk,
	    (a->fps != 0) + a->region.set + (a->max_seconds != 0) +
	        (a->quality != 0));
	if (a->fps != 0)
		proto_pack_kv_i64(pk, "fps", a->fps);
	if (a->region.set)
		cli_desktop_pack_rect(pk, "region", &a->region);
	if (a->max_seconds != 0)
		proto_pack_kv_i64(pk, "max_seconds", a->max_seconds);
	if (a->quality != 0)
		proto_pack_kv_i64(pk, "quality", a->quality);
}

static void
cli_desktop_pack_id_cb(msgpack_packer *pk, void *ctx)
{
	const char *id = ctx;

	msgpack_pack_map(pk, id != NULL);
	if (id != NULL)
		proto_pack_kv_str(pk, "id", id);
}

/* The ID word of stop and status: what berth-desktop named a recording,
 * so a short printable word; whether it names one is its to say. */
static int
cli_desktop_rec_id(struct cli *cli, const char *word)
{
	size_t i, len = strlen(word);

	for (i = 0; i < len; i++)
		if ((unsigned char)word[i] <= 0x20 || word[i] == 0x7f)
			break;
	if (len == 0 || len > CLI_DESKTOP_REC_ID_MAX || i < len)
		return cli_usage(cli,
		    "ID is what record start printed, like 1a2b3c4d: '%.64s'",
		    word);
	return CLI_EXIT_OK;
}

static int
cli_desktop_rec_start_show(
    struct cli *cli, const msgpack_object *result, void *ctx)
{
	const msgpack_object *id = proto_map_get(result, "id");
	char *shown;

	(void)ctx;
	if (id == NULL || id->type != MSGPACK_OBJECT_STR)
		return cli_fail(CLI_CONN_PROTOCOL,
		    xstrdup("record.start answered without an id"));
	if (cli->json) {
		cli_print_json(result);
		return CLI_EXIT_OK;
	}
	shown = cli_desktop_text(result, "id", "?");
	printf("%s\n", shown);
	free(shown);
	return CLI_EXIT_OK;
}

static int
cli_desktop_rec_start(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"fps", required_argument, NULL, CLI_DESKTOP_OPT_FPS},
	    {"region", required_argument, NULL, CLI_DESKTOP_OPT_REGION},
	    {"max-seconds", required_argument, NULL,
	        CLI_DESKTOP_OPT_MAX_SECONDS},
	    {"quality", required_argument, NULL, CLI_DESKTOP_OPT_QUALITY},
	    {NULL, 0, NULL, 0},
	};
	struct cli_desktop_rec a = {0};
	char *word;
	int c, status;

	while ((c = cli_next(cli, argc, argv, opts, "", &word)) != -1) {
		switch (c) {
		case CLI_STOP: return CLI_EXIT_USAGE;
		case CLI_WORD:
			return cli_usage(
			    cli, "record start takes no words: %s", word);
		case CLI_DESKTOP_OPT_FPS:
			if (cli_desktop_long(
			        optarg, 1, CLI_DESKTOP_FPS_MAX, &a.fps) != 0)
				return cli_usage(cli,
				    "--fps wants frames per second, an "
				    "integer from 1 to %d: %s",
				    CLI_DESKTOP_FPS_MAX, optarg);
			break;
		case CLI_DESKTOP_OPT_REGION:
			if ((status = cli_desktop_region(
			         cli, optarg, &a.region)) != 0)
				return status;
			break;
		case CLI_DESKTOP_OPT_MAX_SECONDS:
			if (cli_desktop_long(optarg, 1,
			        CLI_DESKTOP_REC_SECONDS_MAX,
			        &a.max_seconds) != 0)
				return cli_usage(cli,
				    "--max-seconds wants an integer from 1 "
				    "to %d: %s",
				    CLI_DESKTOP_REC_SECONDS_MAX, optarg);
			break;
		case CLI_DESKTOP_OPT_QUALITY:
			if (cli_desktop_long(optarg, 1, CLI_DESKTOP_QUALITY_MAX,
			        &a.quality) != 0)
				return cli_usage(cli,
				    "--quality wants an integer from 1 to "
				    "%d: %s",
				    CLI_DESKTOP_QUALITY_MAX, optarg);
			break;
		}
	}
	if ((status = cli_ready(cli)) != 0)
		return status;
	return cli_desktop_request(cli, "record.start", cli_desktop_pack_rec_cb,
	    &a, 0, cli_desktop_rec_start_show);
}

/* Whether s is 64 lowercase hex digits, as an artifact's id is. */
static bool
cli_desktop_is_hex_id(const char *s)
{
	return strlen(s) == CLI_DESKTOP_HEX_ID &&
	    strspn(s, "0123456789abcdef") == CLI_DESKTOP_HEX_ID;
}

/* record.stop, waiting as long as the file may take to be finished and
 * published; keeps the answer and the reference it holds. */
static int
cli_desktop_stop_call(struct cli_desktop_fetch *f, char **cause)
{
	const struct proto_msg *resp;
	const msgpack_object *art;
	msgpack_packer pk;
	int wait = f->cli->timeout_ms > CLI_DESKTOP_STOP_WAIT_MS
	    ? f->cli->timeout_ms
	    : CLI_DESKTOP_STOP_WAIT_MS;
	int status;

	status = cli_conn_call(f->read.link.conn, "record.stop",
	    cli_desktop_pack_id_cb, (void *)f->rec_id, wait, &resp, cause);
	if (status != CLI_CONN_OK)
		return status;
	art = proto_map_get(resp->result, "artifact");
	if (art == NULL ||
	    proto_arg_str(art, "id", f->art_id, sizeof f->art_id) != 1 ||
	    proto_arg_str(art, "sha256", f->sha256, sizeof f->sha256) != 1 ||
	    proto_arg_u64(art, "size", &f->read.size) != 1 ||
	    !cli_desktop_is_hex_id(f->art_id) ||
	    !cli_desktop_is_hex_id(f->sha256)) {
		*cause = xstrdup("record.stop answered without the artifact's "
		                 "id, sha256 and size");
		return CLI_CONN_PROTOCOL;
	}
	msgpack_packer_init(&pk, &f->result, msgpack_sbuffer_write);
	msgpack_pack_object(&pk, *resp->result);
	return CLI_CONN_OK;
}

static int
cli_desktop_stop_call_cb(void *arg, char **cause)
{
	return cli_desktop_stop_call(arg, cause);
}

/* record.stop, asked again on a new connection while its answer has not
 * come, then the MP4's bytes, read on to the end as cp reads a file. */
static int
cli_desktop_stop_run(struct cli_desktop_fetch *f, char **cause)
{
	struct cli_xfer_link *l = &f->read.link;
	int status;

	if ((status = cli_xfer_open(l, cause)) != CLI_CONN_OK)
		return status;
	status = cli_desktop_stop_call(f, cause);
	if (status == CLI_CONN_LOST)
		status = cli_xfer_reconnect(
		    l, *cause, cli_desktop_stop_call_cb, f, cause);
	if (status != CLI_CONN_OK || f->output == NULL)
		return status;
	return cli_xfer_read_run(&f->read, cause);
}

/* The fetched MP4, whole and as published (its size and SHA-256 are the
 * reference's), landed on output. */
static int
cli_desktop_fetch_land(struct cli_desktop_fetch *f, char **cause)
{
	uint8_t digest[SHA256_LEN];
	char hex[SHA256_HEX];

	sha256_final(&f->sha, digest);
	sha256_hex(digest, hex);
	if (strcmp(hex, f->sha256) != 0) {
		*cause = xasprintf("%s not written: its bytes' SHA-256 is %s, "
		                   "the artifact's %s",
		    f->output, hex, f->sha256);
		return CLI_CONN_ANSWERED;
	}
	if (cli_xfer_land_commit(&f->land, 0666, cause) != 0)
		return CLI_CONN_ANSWERED;
	return CLI_CONN_OK;
}

/* The reference, the video's counts and the file, as lines (the labels
 * of desktop info's). */
static void
cli_desktop_stop_lines(const msgpack_object *result, const char *file)
{
	const msgpack_object *art = proto_map_get(result, "artifact");
	char *id = cli_desktop_text(art, "id", "?");
	char *name = cli_desktop_text(art, "name", "?");
	char *type = cli_desktop_text(art, "media_type", "?");
	int64_t size = 0, ms = 0, frames = 0, dropped = 0;

	cli_desktop_int(art, "size", &size);
	cli_desktop_int(result, "duration_ms", &ms);
	cli_desktop_int(result, "frames", &frames);
	cli_desktop_int(result, "dropped", &dropped);
	printf("artifact %s\n", id);
	printf("name     %s, %s, %" PRId64 " bytes\n", name, type, size);
	printf("video    %.1f s, %" PRId64 " frames, %" PRId64 " dropped\n",
	    (double)ms / 1000, frames, dropped);
	if (file != NULL)
		printf("file     %s, SHA-256 checked\n", file);
	free(id);
	free(name);
	free(type);
}

static void
cli_desktop_stop_show(struct cli_desktop_fetch *f)
{
	msgpack_unpacked u;

	msgpack_unpacked_init(&u);
	if (msgpack_unpack_next(&u, f->result.data, f->result.size, NULL) !=
	    MSGPACK_UNPACK_SUCCESS)
		log_fatal("record.stop's answer does not unpack again");
	if (!f->cli->json)
		cli_desktop_stop_lines(&u.data, f->output);
	else if (f->output != NULL)
		cli_desktop_file_json(&u.data, NULL, f->output);
	else
		cli_print_json(&u.data);
	msgpack_unpacked_destroy(&u);
}

static int
cli_desktop_stop_args(
    struct cli *cli, int argc, char **argv, struct cli_desktop_fetch *f)
{
	static const struct option opts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {NULL, 0, NULL, 0},
	};
	char *word;
	int c;

	while ((c = cli_next(cli, argc, argv, opts, "o:", &word)) != -1) {
		if (c == CLI_STOP)
			return CLI_EXIT_USAGE;
		if (c == 'o') {
			if (*optarg == '\0' || strcmp(optarg, "-") == 0)
				return cli_usage(cli,
				    "-o wants a FILE for the MP4: '%s'",
				    optarg);
			f->output = optarg;
		} else if (f->rec_id != NULL)
			return cli_usage(
			    cli, "record stop takes one ID: %s", word);
		else
			f->rec_id = word;
	}
	if (f->rec_id == NULL)
		return cli_usage(
		    cli, "record stop wants the ID record start printed");
	return cli_desktop_rec_id(cli, f->rec_id);
}

static int
cli_desktop_rec_stop(struct cli *cli, int argc, char **argv)
{
	struct cli_desktop_fetch f = {.cli = cli,
	    .read = {.op = "artifact.read", .key = "id", .fixed = true},
	    .land = {.fd = -1}};
	char *cause = NULL;
	int status;

	if ((status = cli_desktop_stop_args(cli, argc, argv, &f)) != 0 ||
	    (status = cli_ready(cli)) != 0)
		return status;
	/* Before the recording ends: a FILE that cannot be written says so
	 * while the recording can still be stopped with another. */
	if (f.output != NULL) {
		cli_xfer_signals();
		if (cli_xfer_land_open(&f.land, f.output,
		        CLI_DESKTOP_TEMP_SUFFIX, &cause) != 0) {
			cli_print_warn("%s", cause);
			free(cause);
			return CLI_EXIT_FAILED;
		}
		sha256_init(&f.sha);
		f.read.fd = f.land.fd;
		f.read.out = f.output;
		f.read.sha = &f.sha;
	}
	cli_xfer_link_init(&f.read.link, cli);
	f.read.name = f.art_id;
	msgpack_sbuffer_init(&f.result);
	status = cli_desktop_stop_run(&f, &cause);
	cli_xfer_close(&f.read.link);
	if (status == CLI_CONN_OK && f.output != NULL)
		status = cli_desktop_fetch_land(&f, &cause);
	cli_xfer_land_discard(&f.land);
	if (status == CLI_CONN_OK)
		cli_desktop_stop_show(&f);
	msgpack_sbuffer_destroy(&f.result);
	if (status == CLI_CONN_INTERRUPTED && cli_xfer_signalled() != 0) {
		free(cause);
		return CLI_EXIT_SIGNAL + cli_xfer_signalled();
	}
	if (status != CLI_CONN_OK)
		return cli_fail(status, cause);
	fflush(stdout);
	return CLI_EXIT_OK;
}

/* The columns of record status. */
#define CLI_DESKTOP_RCOLS 10

/* "2006-01-02T15:04:05Z" of ms since the epoch. */
static char *
cli_desktop_utc(int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	char buf[32];
	struct tm tm;

	if (ms <= 0 || gmtime_r(&t, &tm) == NULL ||
	    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		return xstrdup("-");
	return xstrdup(buf);
}

/* A number of a result's map, or "-". */
static char *
cli_desktop_num(const msgpack_object *map, const char *key)
{
	int64_t v;

	if (!cli_desktop_int(map, key, &v))
		return xstrdup("-");
	return xasprintf("%" PRId64, v);
}

/* One recording's row: what it became last, the artifact's id once
 * published, why once failed. */
static void
cli_desktop_status_row(const msgpack_object *rec, char **row)
{
	const msgpack_object *art = proto_map_get(rec, "artifact");
	int64_t started = 0, ms = 0;
	char *state = cli_desktop_text(rec, "state", "?");

	cli_desktop_int(rec, "started", &started);
	cli_desktop_int(rec, "duration_ms", &ms);
	row[0] = cli_desktop_text(rec, "id", "?");
	row[1] = state;
	row[2] = cli_desktop_utc(started);
	row[3] = cli_desktop_num(rec, "fps");
	row[4] = cli_desktop_geometry(proto_map_get(rec, "region"));
	row[5] = xasprintf("%.1f s", (double)ms / 1000);
	row[6] = cli_desktop_num(rec, "frames");
	row[7] = cli_desktop_num(rec, "dropped");
	row[8] = cli_desktop_num(rec, "bytes");
	if (art != NULL && art->type == MSGPACK_OBJECT_MAP)
		row[9] = cli_desktop_text(art, "id", "?");
	else if (strcmp(state, "failed") == 0)
		row[9] = cli_desktop_text(rec, "reason", "?");
	else
		row[9] = xstrdup("-");
}

static int
cli_desktop_status_show(
    struct cli *cli, const msgpack_object *result, void *ctx)
{
	static const char *const head[CLI_DESKTOP_RCOLS] = {"ID", "STATE",
	    "STARTED", "FPS", "REGION", "DURATION", "FRAMES", "DROPPED",
	    "BYTES", "ARTIFACT/REASON"};
	const msgpack_object *list = proto_map_get(result, "recordings");
	char **cells;
	uint32_t i, n;

	(void)ctx;
	if (list == NULL || list->type != MSGPACK_OBJECT_ARRAY)
		return cli_fail(CLI_CONN_PROTOCOL,
		    xstrdup("record.status answered without recordings"));
	if (cli->json) {
		cli_print_json(result);
		return CLI_EXIT_OK;
	}
	if ((n = list->via.array.size) == 0) {
		printf("no recordings\n");
		return CLI_EXIT_OK;
	}
	cells = xcalloc((size_t)n * CLI_DESKTOP_RCOLS, sizeof *cells);
	for (i = 0; i < n; i++)
		cli_desktop_status_row(
		    &list->via.array.ptr[i], &cells[i * CLI_DESKTOP_RCOLS]);
	cli_desktop_table(head, CLI_DESKTOP_RCOLS, cells, n);
	return CLI_EXIT_OK;
}

static int
cli_desktop_rec_status(struct cli *cli, int argc, char **argv)
{
	char *word, *id = NULL;
	int c, status;

	while ((c = cli_next(cli, argc, argv, NULL, "", &word)) != -1) {
		if (c == CLI_STOP)
			return CLI_EXIT_USAGE;
		if (id != NULL)
			return cli_usage(cli,
			    "record status takes one ID at most: %s", word);
		if ((status = cli_desktop_rec_id(cli, word)) != 0)
			return status;
		id = word;
	}
	if ((status = cli_ready(cli)) != 0)
		return status;
	return cli_desktop_request(cli, "record.status", cli_desktop_pack_id_cb,
	    id, 0, cli_desktop_status_show);
}

static const struct cli_cmd_entry cli_desktop_rec_start_entry = {
    .name = "start",
    .usage = "[--fps N] [--region X,Y,W,H] [--max-seconds S] [--quality Q]",
    .exec = cli_desktop_rec_start,
};

static const struct cli_cmd_entry cli_desktop_rec_stop_entry = {
    .name = "stop",
    .usage = "ID [-o FILE]",
    .exec = cli_desktop_rec_stop,
};

static const struct cli_cmd_entry cli_desktop_rec_status_entry = {
    .name = "status",
    .usage = "[ID]",
    .exec = cli_desktop_rec_status,
};

static const struct cli_cmd_entry *const cli_desktop_rec_subs[] = {
    &cli_desktop_rec_start_entry,
    &cli_desktop_rec_stop_entry,
    &cli_desktop_rec_status_entry,
    NULL,
};

/* record start|stop|status: the word after record picks the sub-command,
 * whose synopsis usage errors then show. */
static int
cli_desktop_record(struct cli *cli, int argc, char **argv)
{
	char *word = NULL;
	int c;

	c = cli_next(cli, argc, argv, NULL, "", &word);
	if (c == CLI_STOP)
		return CLI_EXIT_USAGE;
	if (c == CLI_WORD &&
	    (cli->sub = cli_cmd_find(cli_desktop_rec_subs, word)) != NULL)
		return cli->sub->exec(cli, argc, argv);
	return cli_usage(cli, "record wants start, stop or status");
}

const struct cli_cmd_entry cli_desktop_record_entry = {
    .name = "record",
    .usage = "start|stop|status ...",
    .summary = "record the screen to MP4: start [--fps N]\n"
               "[--region X,Y,W,H] [--max-seconds S]\n"
               "[--quality Q] prints its ID; stop ID [-o FILE]\n"
               "ends it and prints the artifact (-o: saves the\n"
               "MP4 here); status [ID] lists the recordings",
    .exec = cli_desktop_record,
};
