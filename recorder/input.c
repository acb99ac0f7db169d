/* input: desktop.input. A request's actions are parsed into a plan, the
 * whole plan is checked against the display, and only then performed
 * through XTest, synced after every action and every typed character.
 * Between two requests it keeps only when it last changed the keyboard
 * map (see keymap.h). */
#include <X11/XKBlib.h>
#include <X11/Xlib.h>
#include <X11/extensions/XTest.h>
#include <X11/keysym.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "input.h"
#include "keymap.h"
#include "log.h"
#include "opargs.h"
#include "proto.h"
#include "xmalloc.h"

/* X's coordinates are 16-bit; the screen's bounds are checked later. */
#define INPUT_MAX_COORD 32767
/* The longest key name quoted back in a message. */
#define INPUT_MAX_NAME 64

struct input {
	struct xconn *xc;    /* borrowed */
	uint64_t changed_at; /* the last change of the keyboard map */
};

enum input_kind {
	INPUT_MOVE,
	INPUT_DOWN,
	INPUT_UP,
	INPUT_CLICK,
	INPUT_DRAG,
	INPUT_SCROLL,
	INPUT_KEY,
	INPUT_KEY_DOWN,
	INPUT_KEY_UP,
	INPUT_TYPE,
};

struct input_point {
	int x, y;
	bool set;
};

/* One checked action; the plan's array owns it and its keysyms. */
struct input_action {
	enum input_kind kind;
	const char *name;      /* the kind's name, for messages */
	struct input_point at; /* move, click, scroll: where; drag: from */
	struct input_point to; /* drag */
	unsigned button;       /* down, up, click, drag */
	unsigned count;        /* click: presses; drag: steps */
	int dx, dy;            /* scroll */
	unsigned delay_ms;     /* type: after each character but the last */
	KeySym *syms;          /* key: the combo; key_down, key_up: the key;
	                          type: the text */
	size_t nsyms;
};

/* A request's actions, on the handler's stack; input_plan_free frees
 * what it holds. */
struct input_plan {
	struct input_action *actions;
	size_t n;
	struct keymap *km; /* loaded if a key is pressed */
};

/* What performing needs; on input_perform's stack. */
struct input_run {
	struct xconn *xc;
	Display *dpy;
	int screen;
	struct keymap *km;
};

/* Modifier keys held and locks on when a type action starts: released
 * and unlocked while it types, so that each character comes out as
 * itself, and then put back. */
struct input_held {
	KeyCode keys[32];
	size_t n;
	bool xkb;      /* the XKB state was read */
	unsigned lock; /* LockMask if Caps Lock was locked */
	int group;     /* the locked group */
};

typedef int (*input_parse_fn)(
    const msgpack_object *, struct input_action *, char **);

/* ---- parsing: the request's bytes into a plan, nothing touched yet.
 * Arguments are read with opargs, so that messages read as the other
 * desktop ops' do. */

static int
input_need_int(const msgpack_object *map, const char *key, int64_t lo,
    int64_t hi, int64_t *out, char **cause)
{
	int r = opargs_int(map, key, lo, hi, out, cause);

	if (r == 0) {
		*cause = xasprintf("\"%s\" is missing", key);
		return -1;
	}
	return r;
}

/* A string: 1 if read, -1 (*cause set) if absent or of another type. */
static int
input_need_str(const msgpack_object *map, const char *key, const char **s,
    size_t *len, char **cause)
{
	const msgpack_object *v = proto_map_get(map, key);

	if (v == NULL || v->type == MSGPACK_OBJECT_NIL) {
		*cause = xasprintf("\"%s\" is missing", key);
		return -1;
	}
	if (v->type != MSGPACK_OBJECT_STR) {
		*cause = xasprintf("\"%s\" must be a string", key);
		return -1;
	}
	*s = v->via.str.ptr;
	*len = v->via.str.size;
	return 1;
}

/* Optional x and y, which come together. */
static int
input_at(const msgpack_object *o, struct input_point *pt, char **cause)
{
	int64_t x = 0, y = 0;
	int rx, ry;

	if ((rx = opargs_int(o, "x", 0, INPUT_MAX_COORD, &x, cause)) < 0 ||
	    (ry = opargs_int(o, "y", 0, INPUT_MAX_COORD, &y, cause)) < 0)
		return -1;
	if (rx != ry) {
		*cause = xstrdup("\"x\" and \"y\" come together, or not at "
		                 "all");
		return -1;
	}
	pt->set = rx == 1;
	pt->x = (int)x;
	pt->y = (int)y;
	return 0;
}

/* A point {x, y} under key (from, to): required. */
static int
input_point(const msgpack_object *o, const char *key, struct input_point *pt,
    char **cause)
{
	static const char *const xy[] = {"x", "y", NULL};
	const msgpack_object *v = proto_map_get(o, key);
	char *why = NULL;
	int64_t x, y;

	if (v == NULL || v->type != MSGPACK_OBJECT_MAP) {
		*cause = xasprintf("\"%s\" must be a map {x, y}", key);
		return -1;
	}
	if (opargs_known(v, xy, &why) != 0 ||
	    input_need_int(v, "x", 0, INPUT_MAX_COORD, &x, &why) < 0 ||
	    input_need_int(v, "y", 0, INPUT_MAX_COORD, &y, &why) < 0) {
		*cause = xasprintf("\"%s\": %s", key, why);
		free(why);
		return -1;
	}
	pt->x = (int)x;
	pt->y = (int)y;
	pt->set = true;
	return 0;
}

/* "button": 1..9 or a name; left when absent. */
static int
input_button(const msgpack_object *o, unsigned *button, char **cause)
{
	static const char *const names[] = {
	    "left", "middle", "right", "back", "forward", NULL};
	static const unsigned numbers[] = {1, 2, 3, 8, 9};
	const msgpack_object *v = proto_map_get(o, "button");
	int64_t n = 1;
	int i;

	*button = 1;
	if (v != NULL && v->type == MSGPACK_OBJECT_STR) {
		if (opargs_word(o, "button", names, &i, cause) < 0)
			return -1;
		*button = numbers[i];
		return 0;
	}
	if (opargs_int(o, "button", 1, 9, &n, cause) < 0) {
		free(*cause);
		*cause = xstrdup("\"button\" must be 1-9 or one of: left, "
		                 "middle, right, back, forward");
		return -1;
	}
	if (v != NULL && v->type != MSGPACK_OBJECT_NIL)
		*button = (unsigned)n;
	return 0;
}

static int
input_parse_move(const msgpack_object *o, struct input_action *a, char **cause)
{
	int64_t x, y;

	if (input_need_int(o, "x", 0, INPUT_MAX_COORD, &x, cause) < 0 ||
	    input_need_int(o, "y", 0, INPUT_MAX_COORD, &y, cause) < 0)
		return -1;
	a->at.x = (int)x;
	a->at.y = (int)y;
	a->at.set = true;
	return 0;
}

static int
input_parse_button(
    const msgpack_object *o, struct input_action *a, char **cause)
{
	return input_button(o, &a->button, cause);
}

static int
input_parse_click(const msgpack_object *o, struct input_action *a, char **cause)
{
	int64_t count = 1;

	if (input_button(o, &a->button, cause) != 0 ||
	    input_at(o, &a->at, cause) != 0 ||
	    opargs_int(o, "count", 1, INPUT_MAX_CLICKS, &count, cause) < 0)
		return -1;
	a->count = (unsigned)count;
	return 0;
}

static int
input_parse_drag(const msgpack_object *o, struct input_action *a, char **cause)
{
	int64_t steps = 10;

	if (input_point(o, "from", &a->at, cause) != 0 ||
	    input_point(o, "to", &a->to, cause) != 0 ||
	    input_button(o, &a->button, cause) != 0 ||
	    opargs_int(o, "steps", 1, INPUT_MAX_STEPS, &steps, cause) < 0)
		return -1;
	a->count = (unsigned)steps;
	return 0;
}

static int
input_parse_scroll(
    const msgpack_object *o, struct input_action *a, char **cause)
{
	int64_t dx = 0, dy = 0;

	if (opargs_int(
	        o, "dx", -INPUT_MAX_SCROLL, INPUT_MAX_SCROLL, &dx, cause) < 0 ||
	    opargs_int(
	        o, "dy", -INPUT_MAX_SCROLL, INPUT_MAX_SCROLL, &dy, cause) < 0 ||
	    input_at(o, &a->at, cause) != 0)
		return -1;
	if (dx == 0 && dy == 0) {
		*cause = xstrdup("\"dx\" or \"dy\" must be other than 0");
		return -1;
	}
	a->dx = (int)dx;
	a->dy = (int)dy;
	return 0;
}

/* Key names are quoted back in messages: they must be UTF-8 text. */
static int
input_text_ok(const char *s, size_t len)
{
	const char *p = s, *end = s + len;
	uint32_t cp;

	while (p < end)
		if (keymap_utf8(&p, end, &cp) != 0 || cp < 0x20 || cp == 0x7f)
			return -1;
	return 0;
}

static int
input_add_key(
    struct input_action *a, const char *name, size_t len, char **cause)
{
	char buf[INPUT_MAX_COMBO_BYTES + 1];
	KeySym sym;
	size_t i;

	if (len == 0) {
		*cause = xstrdup("an empty key name (\"plus\" names the + "
		                 "key)");
		return -1;
	}
	if (a->nsyms == INPUT_MAX_COMBO) {
		*cause = xasprintf("more than %d keys", INPUT_MAX_COMBO);
		return -1;
	}
	memcpy(buf, name, len);
	buf[len] = '\0';
	if ((sym = keymap_name(buf)) == NoSymbol) {
		*cause = xasprintf("unknown key name \"%s\"", buf);
		return -1;
	}
	for (i = 0; i < a->nsyms; i++) {
		if (a->syms[i] == sym) {
			*cause = xasprintf("key \"%s\" is given twice", buf);
			return -1;
		}
	}
	a->syms[a->nsyms++] = sym;
	return 0;
}

/* Key names joined by '+'; a '+' where a name should start is the plus
 * key itself ("ctrl++"). */
static int
input_parse_key(const msgpack_object *o, struct input_action *a, char **cause)
{
	const char *s, *p, *end, *q;
	size_t len;

	if (input_need_str(o, "combo", &s, &len, cause) < 0)
		return -1;
	if (len == 0 || len > INPUT_MAX_COMBO_BYTES) {
		*cause = xasprintf(
		    "\"combo\" must be 1-%d bytes", INPUT_MAX_COMBO_BYTES);
		return -1;
	}
	if (input_text_ok(s, len) != 0) {
		*cause = xstrdup("\"combo\" is not valid UTF-8, or holds a "
		                 "control character");
		return -1;
	}
	a->syms = xcalloc(INPUT_MAX_COMBO, sizeof *a->syms);
	p = s;
	end = s + len;
	for (;;) {
		if (p < end && *p == '+')
			q = p + 1;
		else if ((q = memchr(p, '+', (size_t)(end - p))) == NULL)
			q = end;
		if (input_add_key(a, p, (size_t)(q - p), cause) != 0)
			return -1;
		if (q == end)
			return 0;
		if (*q != '+') {
			*cause = xstrdup("key names are joined by '+'");
			return -1;
		}
		p = q + 1;
	}
}

static int
input_parse_onekey(
    const msgpack_object *o, struct input_action *a, char **cause)
{
	const char *s;
	size_t len;

	if (input_need_str(o, "key", &s, &len, cause) < 0)
		return -1;
	if (len == 0 || len > INPUT_MAX_NAME) {
		*cause =
		    xasprintf("\"key\" must be 1-%d bytes", INPUT_MAX_NAME);
		return -1;
	}
	if (input_text_ok(s, len) != 0) {
		*cause = xstrdup("\"key\" is not valid UTF-8, or holds a "
		                 "control character");
		return -1;
	}
	a->syms = xcalloc(1, sizeof *a->syms);
	return input_add_key(a, s, len, cause);
}

/* The text as keysyms: every character checked here, so that invalid
 * UTF-8 or a character that cannot be typed stops the request before
 * anything is typed. \r\n is one Return. */
static int
input_parse_type(const msgpack_object *o, struct input_action *a, char **cause)
{
	const char *s, *p, *end, *at;
	int64_t delay = 0;
	size_t len;
	uint32_t cp, prev = 0;
	KeySym sym;

	if (input_need_str(o, "text", &s, &len, cause) < 0)
		return -1;
	if (opargs_int(o, "delay_ms", 0, INPUT_MAX_DELAY_MS, &delay, cause) < 0)
		return -1;
	a->delay_ms = (unsigned)delay;
	a->syms = xcalloc(len > 0 ? len : 1, sizeof *a->syms);
	for (p = s, end = s + len; p < end; prev = cp) {
		at = p;
		if (keymap_utf8(&p, end, &cp) != 0) {
			*cause = xasprintf("\"text\" is not valid UTF-8 (at "
			                   "byte %zu)",
			    (size_t)(at - s));
			return -1;
		}
		if (cp == '\n' && prev == '\r')
			continue;
		if ((sym = keymap_char(cp)) == NoSymbol) {
			*cause =
			    xasprintf("\"text\" holds U+%04" PRIX32 ", a "
			              "control character that cannot be typed",
			        cp);
			return -1;
		}
		if (a->nsyms == INPUT_MAX_TEXT) {
			*cause = xasprintf("\"text\" has more than %d "
			                   "characters",
			    INPUT_MAX_TEXT);
			return -1;
		}
		a->syms[a->nsyms++] = sym;
	}
	return 0;
}

static const char *const input_f_move[] = {"type", "x", "y", NULL};
static const char *const input_f_button[] = {"type", "button", NULL};
static const char *const input_f_click[] = {
    "type", "button", "x", "y", "count", NULL};
static const char *const input_f_drag[] = {
    "type", "from", "to", "button", "steps", NULL};
static const char *const input_f_scroll[] = {
    "type", "dx", "dy", "x", "y", NULL};
static const char *const input_f_key[] = {"type", "combo", NULL};
static const char *const input_f_onekey[] = {"type", "key", NULL};
static const char *const input_f_type[] = {"type", "text", "delay_ms", NULL};

static const struct input_kind_def {
	const char *name;
	enum input_kind kind;
	const char *const *fields;
	input_parse_fn parse;
} input_kinds[] = {
    {"move", INPUT_MOVE, input_f_move, input_parse_move},
    {"down", INPUT_DOWN, input_f_button, input_parse_button},
    {"up", INPUT_UP, input_f_button, input_parse_button},
    {"click", INPUT_CLICK, input_f_click, input_parse_click},
    {"drag", INPUT_DRAG, input_f_drag, input_parse_drag},
    {"scroll", INPUT_SCROLL, input_f_scroll, input_parse_scroll},
    {"key", INPUT_KEY, input_f_key, input_parse_key},
    {"key_down", INPUT_KEY_DOWN, input_f_onekey, input_parse_onekey},
    {"key_up", INPUT_KEY_UP, input_f_onekey, input_parse_onekey},
    {"type", INPUT_TYPE, input_f_type, input_parse_type},
};

static int
input_parse_action(
    const msgpack_object *o, struct input_action *a, char **cause)
{
	const struct input_kind_def *def = NULL;
	const char *s;
	size_t len, i;

	if (o->type != MSGPACK_OBJECT_MAP) {
		*cause = xstrdup("an action must be a map");
		return -1;
	}
	if (input_need_str(o, "type", &s, &len, cause) < 0)
		return -1;
	for (i = 0; i < sizeof input_kinds / sizeof input_kinds[0]; i++)
		if (strlen(input_kinds[i].name) == len &&
		    memcmp(input_kinds[i].name, s, len) == 0)
			def = &input_kinds[i];
	if (def == NULL) {
		*cause = xstrdup("\"type\" must be one of: move, down, up, "
		                 "click, drag, scroll, key, key_down, key_up, "
		                 "type");
		return -1;
	}
	a->kind = def->kind;
	a->name = def->name;
	if (opargs_known(o, def->fields, cause) != 0)
		return -1;
	return def->parse(o, a, cause);
}

static void
input_plan_free(struct input_plan *p)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		free(p->actions[i].syms);
	free(p->actions);
	if (p->km != NULL)
		keymap_free(p->km);
}

/* The message for action i's failure: its index and kind. */
static char *
input_where(const struct input_action *a, size_t i, char *cause)
{
	char *msg;

	if (a->name != NULL)
		msg = xasprintf("actions[%zu] (%s): %s", i, a->name, cause);
	else
		msg = xasprintf("actions[%zu]: %s", i, cause);
	free(cause);
	return msg;
}

static int
input_parse(const msgpack_object *args, struct input_plan *p, char **cause)
{
	static const char *const keys[] = {"actions", NULL};
	const msgpack_object *v = proto_map_get(args, "actions");
	uint64_t total = 0;
	size_t i;

	if (opargs_known(args, keys, cause) != 0)
		return -1;
	if (v == NULL || v->type != MSGPACK_OBJECT_ARRAY ||
	    v->via.array.size == 0 || v->via.array.size > INPUT_MAX_ACTIONS) {
		*cause = xasprintf("\"actions\" must be an array of 1-%d "
		                   "actions",
		    INPUT_MAX_ACTIONS);
		return -1;
	}
	p->actions = xcalloc(v->via.array.size, sizeof *p->actions);
	for (i = 0; i < v->via.array.size; i++) {
		p->n = i + 1;
		if (input_parse_action(
		        &v->via.array.ptr[i], &p->actions[i], cause) != 0) {
			*cause = input_where(&p->actions[i], i, *cause);
			return -1;
		}
		if (p->actions[i].kind != INPUT_TYPE || p->actions[i].nsyms < 2)
			continue;
		total += (uint64_t)p->actions[i].delay_ms *
		    (p->actions[i].nsyms - 1);
		if (total > INPUT_MAX_TOTAL_DELAY_MS) {
			*cause =
			    xasprintf("the request's delays add up to %" PRIu64
			              " ms here, more than %d: send the "
			              "text in parts",
			        total, INPUT_MAX_TOTAL_DELAY_MS);
			*cause = input_where(&p->actions[i], i, *cause);
			return -1;
		}
	}
	return 0;
}

int
input_parse_args(const msgpack_object *args, char **cause)
{
	struct input_plan p = {NULL, 0, NULL};
	int r;

	*cause = NULL;
	r = input_parse(args, &p, cause);
	input_plan_free(&p);
	return r;
}

/* ---- checking the plan against the display */

static bool
input_needs_keys(const struct input_plan *p)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		if (p->actions[i].syms != NULL)
			return true;
	return false;
}

static int
input_on_screen(const struct input_point *pt, unsigned w, unsigned h,
    const char *what, char **cause)
{
	if (!pt->set)
		return 0;
	if ((unsigned)pt->x >= w) {
		*cause = xasprintf("%s\"x\" %d is outside the screen (0-%u)",
		    what, pt->x, w - 1);
		return -1;
	}
	if ((unsigned)pt->y >= h) {
		*cause = xasprintf("%s\"y\" %d is outside the screen (0-%u)",
		    what, pt->y, h - 1);
		return -1;
	}
	return 0;
}

/* A keysym for messages: the characters' by their code point (as the
 * text named them; Xlib would also allocate the names of Unicode keysyms
 * and never free them), others by name. */
static const char *
input_sym_name(KeySym sym, char *buf, size_t len)
{
	const char *name;

	if ((sym & 0xff000000) == 0x01000000)
		snprintf(buf, len, "U+%04lX", (unsigned long)(sym & 0xffffff));
	else if ((sym >= 0x20 && sym <= 0x7e) || (sym >= 0xa0 && sym <= 0xff))
		snprintf(buf, len, "U+%04lX", (unsigned long)sym);
	else if ((name = XKeysymToString(sym)) != NULL)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "0x%lx", (unsigned long)sym);
	return buf;
}

/* The keys of action a exist, or can be bound to spare keycodes: all of
 * a combo's at once, a text's at least one at a time. */
static int
input_check_keys(const struct input_plan *p, const struct input_action *a,
    const char **code, char **cause)
{
	size_t i, j, missing = 0;
	char name[32];
	KeyCode kc;
	bool shift;

	for (i = 0; i < a->nsyms; i++) {
		if (keymap_lookup(p->km, a->syms[i], &kc, &shift) == 0)
			continue;
		input_sym_name(a->syms[i], name, sizeof name);
		if (a->kind == INPUT_KEY_DOWN || a->kind == INPUT_KEY_UP) {
			*code = PROTO_E_BAD_ARGS;
			*cause =
			    xasprintf("no key of the keyboard map gives %s "
			              "(key_down and key_up bind none)",
			        name);
			return -1;
		}
		for (j = 0; j < i && a->syms[j] != a->syms[i]; j++)
			;
		if (j == i)
			missing++;
		if (keymap_spares(p->km) <
		    (a->kind == INPUT_TYPE ? 1 : missing)) {
			*code = PROTO_E_UNAVAILABLE;
			*cause =
			    xasprintf("%s is not in the keyboard map, and no "
			              "keycode is free to bind it to",
			        name);
			return -1;
		}
	}
	return 0;
}

/*
 * Everything that can fail before a key is pressed: XTEST, the screen's
 * bounds (read from the server: it may have been resized since Xlib last
 * looked), and the keys, against the map. *code says which error.
 */
static int
input_check(struct input *in, Display *dpy, struct input_plan *p,
    const char **code, char **cause)
{
	int ev, err, major, minor, x, y;
	unsigned w, h, bw, depth;
	struct input_action *a;
	Window root;
	size_t i;

	*code = PROTO_E_UNAVAILABLE;
	if (!XTestQueryExtension(dpy, &ev, &err, &major, &minor)) {
		*cause = xstrdup("the X server has no XTEST extension");
		return -1;
	}
	if (!XGetGeometry(dpy, DefaultRootWindow(dpy), &root, &x, &y, &w, &h,
	        &bw, &depth)) {
		*cause = xstrdup("the X server did not give its screen size");
		return -1;
	}
	if (input_needs_keys(p) &&
	    (p->km = keymap_load(dpy, &in->changed_at, cause)) == NULL)
		return -1;
	for (i = 0; i < p->n; i++) {
		a = &p->actions[i];
		*code = PROTO_E_BAD_ARGS;
		if (input_on_screen(&a->at, w, h,
		        a->kind == INPUT_DRAG ? "\"from\": " : "",
		        cause) != 0 ||
		    input_on_screen(&a->to, w, h, "\"to\": ", cause) != 0 ||
		    (a->syms != NULL &&
		        input_check_keys(p, a, code, cause) != 0)) {
			*cause = input_where(a, i, *cause);
			return -1;
		}
	}
	return 0;
}

/* ---- performing */

static void
input_sleep_ms(unsigned ms)
{
	struct timespec ts;

	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (long)(ms % 1000) * 1000000;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Waits for the server to have done everything sent: -1 if the
 * connection broke (the Display is gone then, and must not be used). */
static int
input_sync(struct input_run *r)
{
	XSync(r->dpy, False);
	return xconn_get(r->xc) != NULL ? 0 : -1;
}

static void
input_move(struct input_run *r, int x, int y)
{
	XTestFakeMotionEvent(r->dpy, r->screen, x, y, CurrentTime);
}

static void
input_press(struct input_run *r, unsigned button, unsigned times)
{
	while (times-- > 0) {
		XTestFakeButtonEvent(r->dpy, button, True, CurrentTime);
		XTestFakeButtonEvent(r->dpy, button, False, CurrentTime);
	}
}

static void
input_drag(struct input_run *r, const struct input_action *a)
{
	long dx = a->to.x - a->at.x, dy = a->to.y - a->at.y;
	unsigned i;

	input_move(r, a->at.x, a->at.y);
	XTestFakeButtonEvent(r->dpy, a->button, True, CurrentTime);
	for (i = 1; i <= a->count; i++)
		input_move(r, a->at.x + (int)(dx * (long)i / (long)a->count),
		    a->at.y + (int)(dy * (long)i / (long)a->count));
	XTestFakeButtonEvent(r->dpy, a->button, False, CurrentTime);
}

static void
input_scroll(struct input_run *r, const struct input_action *a)
{
	if (a->at.set)
		input_move(r, a->at.x, a->at.y);
	if (a->dy != 0)
		input_press(r, a->dy > 0 ? 5 : 4, (unsigned)abs(a->dy));
	if (a->dx != 0)
		input_press(r, a->dx > 0 ? 7 : 6, (unsigned)abs(a->dx));
}

/* Presses kc unless this combo already holds it. */
static void
input_key_press(struct input_run *r, KeyCode *down, size_t *n, KeyCode kc)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (down[i] == kc)
			return;
	XTestFakeKeyEvent(r->dpy, kc, True, CurrentTime);
	down[(*n)++] = kc;
}

/* The keys in order, shift before the last if its keysym needs it and
 * the combo has none, then all released in reverse: nothing stays down. */
static void
input_combo(struct input_run *r, const struct input_action *a)
{
	KeyCode down[INPUT_MAX_COMBO + 1], kc, shift_kc = keymap_shift(r->km);
	bool shift, has_shift = false;
	size_t n = 0, i;

	for (i = 0; i < a->nsyms; i++)
		if (a->syms[i] == XK_Shift_L || a->syms[i] == XK_Shift_R)
			has_shift = true;
	keymap_prepare(r->km, a->syms, a->nsyms);
	for (i = 0; i < a->nsyms; i++) {
		if (keymap_key(r->km, a->syms[i], &kc, &shift) != 0)
			break;
		if (shift && i + 1 == a->nsyms && !has_shift)
			input_key_press(r, down, &n, shift_kc);
		input_key_press(r, down, &n, kc);
	}
	while (n > 0)
		XTestFakeKeyEvent(r->dpy, down[--n], False, CurrentTime);
}

static void
input_one_key(struct input_run *r, const struct input_action *a)
{
	KeyCode kc;
	bool shift;

	if (keymap_lookup(r->km, a->syms[0], &kc, &shift) == 0)
		XTestFakeKeyEvent(
		    r->dpy, kc, a->kind == INPUT_KEY_DOWN, CurrentTime);
}

static void
input_unhold(struct input_run *r, struct input_held *h)
{
	char down[32];
	XkbStateRec st;
	int kc;

	memset(h, 0, sizeof *h);
	memset(down, 0, sizeof down);
	XQueryKeymap(r->dpy, down);
	for (kc = 0; kc < 256 && h->n < sizeof h->keys / sizeof h->keys[0];
	     kc++) {
		if ((down[kc / 8] & (1 << (kc % 8))) == 0 ||
		    !keymap_is_modifier(r->km, (KeyCode)kc))
			continue;
		XTestFakeKeyEvent(r->dpy, (unsigned)kc, False, CurrentTime);
		h->keys[h->n++] = (KeyCode)kc;
	}
	if (XkbGetState(r->dpy, XkbUseCoreKbd, &st) != Success)
		return;
	h->xkb = true;
	h->lock = st.locked_mods & LockMask;
	h->group = st.locked_group;
	if (h->lock != 0)
		XkbLockModifiers(r->dpy, XkbUseCoreKbd, LockMask, 0);
	if (h->group != 0)
		XkbLockGroup(r->dpy, XkbUseCoreKbd, 0);
}

static void
input_rehold(struct input_run *r, const struct input_held *h)
{
	size_t i;

	if (h->xkb && h->lock != 0)
		XkbLockModifiers(r->dpy, XkbUseCoreKbd, LockMask, h->lock);
	if (h->xkb && h->group != 0)
		XkbLockGroup(r->dpy, XkbUseCoreKbd, (unsigned)h->group);
	for (i = 0; i < h->n; i++)
		XTestFakeKeyEvent(r->dpy, h->keys[i], True, CurrentTime);
}

/* One character, with shift around it when it sits at the second level,
 * and synced: -1 if the connection broke. */
static int
input_type_one(struct input_run *r, KeySym sym)
{
	KeyCode kc, shift_kc = keymap_shift(r->km);
	bool shift;

	if (keymap_key(r->km, sym, &kc, &shift) != 0)
		return 0;
	if (shift)
		XTestFakeKeyEvent(r->dpy, shift_kc, True, CurrentTime);
	XTestFakeKeyEvent(r->dpy, kc, True, CurrentTime);
	XTestFakeKeyEvent(r->dpy, kc, False, CurrentTime);
	if (shift)
		XTestFakeKeyEvent(r->dpy, shift_kc, False, CurrentTime);
	return input_sync(r);
}

/* The text in runs that the spare keycodes can hold at once, each bound
 * in one burst before it is typed. -1 if the connection broke (or, which
 * the check rules out, a character had no key). */
static int
input_type(struct input_run *r, const struct input_action *a)
{
	struct input_held held;
	size_t i = 0, end;

	input_unhold(r, &held);
	while (i < a->nsyms) {
		end = i + keymap_prepare(r->km, a->syms + i, a->nsyms - i);
		if (input_sync(r) != 0)
			return -1;
		if (end == i)
			break;
		for (; i < end; i++) {
			if (input_type_one(r, a->syms[i]) != 0)
				return -1;
			if (a->delay_ms > 0 && i + 1 < a->nsyms)
				input_sleep_ms(a->delay_ms);
		}
	}
	input_rehold(r, &held);
	return i == a->nsyms ? 0 : -1;
}

static int
input_do(struct input_run *r, const struct input_action *a)
{
	switch (a->kind) {
	case INPUT_MOVE: input_move(r, a->at.x, a->at.y); break;
	case INPUT_DOWN:
	case INPUT_UP:
		XTestFakeButtonEvent(
		    r->dpy, a->button, a->kind == INPUT_DOWN, CurrentTime);
		break;
	case INPUT_CLICK:
		if (a->at.set)
			input_move(r, a->at.x, a->at.y);
		input_press(r, a->button, a->count);
		break;
	case INPUT_DRAG: input_drag(r, a); break;
	case INPUT_SCROLL: input_scroll(r, a); break;
	case INPUT_KEY: input_combo(r, a); break;
	case INPUT_KEY_DOWN:
	case INPUT_KEY_UP: input_one_key(r, a); break;
	case INPUT_TYPE:
		if (input_type(r, a) != 0)
			return -1;
		break;
	}
	return input_sync(r);
}

/* Performs the plan in order; returns how many actions were done: all,
 * unless the connection broke. Spare keycodes bound on the way are
 * restored unless the connection (and with it the Display) is gone. */
static size_t
input_perform(struct input *in, Display *dpy, struct input_plan *p)
{
	struct input_run r;
	size_t done = 0;

	r.xc = in->xc;
	r.dpy = dpy;
	r.screen = DefaultScreen(dpy);
	r.km = p->km;
	while (done < p->n && input_do(&r, &p->actions[done]) == 0)
		done++;
	if (p->km != NULL && xconn_get(in->xc) != NULL)
		keymap_restore(p->km);
	return done;
}

static void
input_op_cb(
    struct serve *sv, uint64_t id, const msgpack_object *args, void *arg)
{
	struct input *in = arg;
	struct input_plan plan;
	msgpack_packer *pk;
	const char *code;
	char *cause = NULL;
	Display *dpy;
	size_t done;

	memset(&plan, 0, sizeof plan);
	if ((dpy = xconn_get(in->xc)) == NULL) {
		serve_reply_error(sv, id, PROTO_E_UNAVAILABLE,
		    "the X server is not connected");
		return;
	}
	if (input_parse(args, &plan, &cause) != 0) {
		serve_reply_error(sv, id, PROTO_E_BAD_ARGS, "%s", cause);
		goto out;
	}
	if (input_check(in, dpy, &plan, &code, &cause) != 0) {
		if (xconn_get(in->xc) == NULL)
			serve_reply_error(sv, id, PROTO_E_UNAVAILABLE,
			    "the X server connection was lost");
		else
			serve_reply_error(sv, id, code, "%s", cause);
		goto out;
	}
	done = input_perform(in, dpy, &plan);
	log_debug("%s: %zu of %zu actions done", __func__, done, plan.n);
	if (done < plan.n) {
		if (xconn_get(in->xc) == NULL)
			serve_reply_error(sv, id, PROTO_E_UNAVAILABLE,
			    "the X server connection was lost after %zu of %zu "
			    "actions",
			    done, plan.n);
		else
			serve_reply_error(sv, id, PROTO_E_INTERNAL,
			    "actions[%zu] could not be performed", done);
		goto out;
	}
	pk = serve_reply_begin(sv, id);
	msgpack_pack_map(pk, 1);
	proto_pack_kv_u64(pk, "done", done);
	serve_reply_end(sv);
out:
	input_plan_free(&plan);
	free(cause);
}

struct input *
input_create(struct xconn *xc)
{
	struct input *in;

	in = xcalloc(1, sizeof *in);
	in->xc = xc;
	return in;
}

void
input_free(struct input *in)
{
	free(in);
}

void
input_register(struct serve *sv, struct input *in)
{
	serve_add(sv, CATALOG_OP_DESKTOP_INPUT, input_op_cb, in);
}
