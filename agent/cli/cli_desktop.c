/* cli_desktop: berth screenshot, click, move, scroll, type, key, cursor,
 * desktop info, windows and wait-change, each one request of a desktop.*
 * op, and the readers and printers they share with record (cli_record).
 * Every argument is checked here before anything is sent, so that a typo
 * never reaches the screen; a screenshot lands in its file whole. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"
#include "cli_desktop.h"
#include "cli_print.h"
#include "cli_xfer.h"
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
int
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
int
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

int
cli_desktop_quality(struct cli *cli, const char *arg, long *out)
{
	if (cli_desktop_long(arg, 1, CLI_DESKTOP_QUALITY_MAX, out) != 0)
		return cli_usage(cli,
		    "--quality wants an integer from 1 to %d: %s",
		    CLI_DESKTOP_QUALITY_MAX, arg);
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
int
cli_desktop_request(struct cli *cli, const char *op, cli_conn_pack_cb pack,
    void *ctx, int extra_ms, cli_show_cb show)
{
	struct cli_desktop_ask a = {op, show, ctx};

	return cli_ask(cli, op, pack, ctx, extra_ms, cli_desktop_map_cb, &a);
}

/* An integer of a result's map (positive or negative). */
bool
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
char *
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
char *
cli_desktop_text(
    const msgpack_object *map, const char *key, const char *fallback)
{
	const msgpack_object *v = proto_map_get(map, key);

	if (v == NULL || v->type != MSGPACK_OBJECT_STR)
		return xstrdup(fallback);
	return cli_print_tame(xstrndup(v->via.str.ptr, v->via.str.size));
}

void
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
void
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
	int c, status = CLI_EXIT_OK;

	while (status == CLI_EXIT_OK &&
	    (c = cli_next_opt(cli, argc, argv, opts, "o:")) != -1) {
		switch (c) {
		case CLI_STOP: return CLI_EXIT_USAGE;
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
			status = cli_desktop_quality(cli, optarg, &s->quality);
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

/* Sends the actions as one desktop.input, which checks them all before
 * it performs any. */
static int
cli_desktop_input(
    struct cli *cli, struct cli_desktop_action *actions, size_t n, int extra_ms)
{
	struct cli_desktop_input in = {.actions = actions, .n = n};

	return cli_desktop_request(cli, "desktop.input",
	    cli_desktop_pack_input_cb, &in, extra_ms, cli_show_json);
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
	cells = cli_print_cells(head, CLI_DESKTOP_WCOLS, n);
	for (i = 0; i < n; i++) {
		win = &list->via.array.ptr[i];
		row = &cells[(i + 1) * CLI_DESKTOP_WCOLS];
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
	cli_print_table(CLI_DESKTOP_WCOLS, n + 1, cells);
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
	int c, status;

	while ((c = cli_next_opt(cli, argc, argv, opts, "")) != -1) {
		switch (c) {
		case CLI_STOP: return CLI_EXIT_USAGE;
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
