/* keymap: keysyms to keycodes on the live keyboard map, and the temporary
 * bindings of spare keycodes that let desktop.input type any character.
 * Owns a snapshot of the map and the list of spares it bound. */
#include <X11/Xatom.h>
#include <X11/Xlib.h>
#include <X11/keysym.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "clock.h"
#include "keymap.h"
#include "log.h"
#include "xmalloc.h"

/* A root window property listing the spares bound now, as pairs of
 * keycode and keysym: a berth-desktop that dies while typing leaves it
 * behind, and the next one unbinds what it lists. Without it every such
 * death would take spares for good. */
#define KEYMAP_PROPERTY "_BERTH_INPUT_KEYS"

/* A keycode with no keysym, lent to one keysym at a time. */
struct keymap_spare {
	KeyCode kc;
	KeySym sym;       /* bound to; NoSymbol while it holds none */
	uint64_t used_at; /* clock_mono_ms of its last binding or use */
	bool keep;        /* needed by the keymap_prepare under way */
};

struct keymap {
	Display *dpy;
	int min, max;          /* the keycodes */
	int per;               /* keysyms per keycode in syms */
	KeySym *syms;          /* the map at load time; Xlib's, XFree'd */
	XModifierKeymap *mods; /* Xlib's, XFreeModifiermap'd */
	KeyCode shift;         /* a key of the shift modifier, 0 if none */
	Atom property;         /* KEYMAP_PROPERTY */
	struct keymap_spare *spares;
	size_t nspares;
	KeySym *fresh;                /* keymap_prepare's keysyms to bind */
	struct keymap_spare **chosen; /* and the spares for them */
	uint64_t *changed_at; /* the caller's: the last change of the map */
};

static const struct {
	const char *name;
	KeySym sym;
} keymap_aliases[] = {
    {"ctrl", XK_Control_L},
    {"control", XK_Control_L},
    {"shift", XK_Shift_L},
    {"alt", XK_Alt_L},
    {"super", XK_Super_L},
    {"win", XK_Super_L},
    {"meta", XK_Super_L},
    {"enter", XK_Return},
    {"return", XK_Return},
    {"esc", XK_Escape},
    {"escape", XK_Escape},
    {"backspace", XK_BackSpace},
    {"tab", XK_Tab},
    {"space", XK_space},
    {"del", XK_Delete},
    {"delete", XK_Delete},
    {"up", XK_Up},
    {"down", XK_Down},
    {"left", XK_Left},
    {"right", XK_Right},
    {"pageup", XK_Prior},
    {"pagedown", XK_Next},
    {"home", XK_Home},
    {"end", XK_End},
    {"insert", XK_Insert},
};

static void
keymap_sleep_until(uint64_t when)
{
	struct timespec ts;
	uint64_t now = clock_mono_ms();

	if (when <= now)
		return;
	ts.tv_sec = (time_t)((when - now) / 1000);
	ts.tv_nsec = (long)((when - now) % 1000) * 1000000;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static KeySym
keymap_sym(const struct keymap *km, int kc, int col)
{
	return km->syms[(kc - km->min) * km->per + col];
}

bool
keymap_is_modifier(const struct keymap *km, KeyCode kc)
{
	int i;

	for (i = 0; i < 8 * km->mods->max_keypermod; i++)
		if (km->mods->modifiermap[i] == kc)
			return true;
	return false;
}

static bool
keymap_empty(const struct keymap *km, int kc)
{
	int col;

	for (col = 0; col < km->per; col++)
		if (keymap_sym(km, kc, col) != NoSymbol)
			return false;
	return true;
}

/* The spares: keycodes with no keysym that no modifier uses and that are
 * not down now (a key held while its keysym changes would be released as
 * another). From the top, where keyboards have no keys. */
static void
keymap_find_spares(struct keymap *km)
{
	char down[32];
	int kc;

	memset(down, 0, sizeof down);
	XQueryKeymap(km->dpy, down);
	km->spares =
	    xcalloc((size_t)(km->max - km->min + 1), sizeof *km->spares);
	for (kc = km->max; kc >= km->min; kc--) {
		if (!keymap_empty(km, kc) ||
		    keymap_is_modifier(km, (KeyCode)kc))
			continue;
		if (down[kc / 8] & (1 << (kc % 8)))
			continue;
		km->spares[km->nspares++].kc = (KeyCode)kc;
	}
}

/* Whether kc holds sym and nothing else, as keymap_bind leaves it (the
 * server's XKB may repeat it in the core map's later columns). */
static bool
keymap_holds(const struct keymap *km, int kc, KeySym sym)
{
	KeySym got;
	int col;

	if (kc < km->min || kc > km->max || keymap_sym(km, kc, 0) != sym)
		return false;
	for (col = 1; col < km->per; col++)
		if ((got = keymap_sym(km, kc, col)) != NoSymbol && got != sym)
			return false;
	return true;
}

/* Unbinds the spares that KEYMAP_PROPERTY lists and that still hold what
 * it says (another client may have bound them since). */
static void
keymap_recover(struct keymap *km)
{
	Window root = DefaultRootWindow(km->dpy);
	unsigned long n = 0, after, i, done = 0;
	unsigned char *data = NULL;
	KeySym none = NoSymbol;
	long *pairs;
	int format, kc, col;
	Atom type;

	if (XGetWindowProperty(km->dpy, root, km->property, 0, 512, False,
	        XA_CARDINAL, &type, &format, &n, &after, &data) != Success)
		return;
	pairs = (long *)data;
	for (i = 0; type == XA_CARDINAL && format == 32 && i + 1 < n; i += 2) {
		kc = (int)pairs[i];
		if (!keymap_holds(km, kc, (KeySym)pairs[i + 1]))
			continue;
		XChangeKeyboardMapping(km->dpy, kc, 1, &none, 1);
		for (col = 0; col < km->per; col++)
			km->syms[(kc - km->min) * km->per + col] = NoSymbol;
		done++;
	}
	if (data != NULL)
		XFree(data);
	if (type == None)
		return;
	XDeleteProperty(km->dpy, root, km->property);
	XSync(km->dpy, False);
	*km->changed_at = clock_mono_ms();
	if (done > 0)
		log_info("unbound %lu spare keycodes left bound by a "
		         "berth-desktop that stopped while typing",
		    done);
}

/* Writes KEYMAP_PROPERTY: the spares bound now. */
static void
keymap_mark(struct keymap *km)
{
	Window root = DefaultRootWindow(km->dpy);
	long *pairs;
	size_t i;
	int n = 0;

	pairs = xcalloc(2 * km->nspares + 1, sizeof *pairs);
	for (i = 0; i < km->nspares; i++) {
		if (km->spares[i].sym == NoSymbol)
			continue;
		pairs[n++] = km->spares[i].kc;
		pairs[n++] = (long)km->spares[i].sym;
	}
	if (n == 0)
		XDeleteProperty(km->dpy, root, km->property);
	else
		XChangeProperty(km->dpy, root, km->property, XA_CARDINAL, 32,
		    PropModeReplace, (unsigned char *)pairs, n);
	free(pairs);
}

struct keymap *
keymap_load(Display *dpy, uint64_t *changed_at, char **cause)
{
	struct keymap *km;
	int i;

	km = xcalloc(1, sizeof *km);
	km->dpy = dpy;
	km->changed_at = changed_at;
	XDisplayKeycodes(dpy, &km->min, &km->max);
	km->syms = XGetKeyboardMapping(
	    dpy, (KeyCode)km->min, km->max - km->min + 1, &km->per);
	km->mods = XGetModifierMapping(dpy);
	if (km->syms == NULL || km->mods == NULL || km->per < 1) {
		*cause = xstrdup("the X server did not give its keyboard map");
		keymap_free(km);
		return NULL;
	}
	km->property = XInternAtom(dpy, KEYMAP_PROPERTY, False);
	keymap_recover(km);
	for (i = 0; i < km->mods->max_keypermod && km->shift == 0; i++)
		km->shift =
		    km->mods
		        ->modifiermap[ShiftMapIndex * km->mods->max_keypermod +
		            i];
	keymap_find_spares(km);
	km->fresh = xcalloc(km->nspares + 1, sizeof *km->fresh);
	km->chosen = xcalloc(km->nspares + 1, sizeof *km->chosen);
	return km;
}

void
keymap_free(struct keymap *km)
{
	if (km->syms != NULL)
		XFree(km->syms);
	if (km->mods != NULL)
		XFreeModifiermap(km->mods);
	free(km->spares);
	free(km->fresh);
	free(km->chosen);
	free(km);
}

int
keymap_lookup(const struct keymap *km, KeySym sym, KeyCode *kc, bool *shift)
{
	int k, col;

	/* The first level anywhere beats the second: no shift to press. */
	for (col = 0; col < 2 && col < km->per; col++) {
		if (col == 1 && km->shift == 0)
			break;
		for (k = km->min; k <= km->max; k++) {
			if (keymap_sym(km, k, col) == sym) {
				*kc = (KeyCode)k;
				*shift = col == 1;
				return 0;
			}
		}
	}
	return -1;
}

size_t
keymap_spares(const struct keymap *km)
{
	return km->nspares;
}

KeyCode
keymap_shift(const struct keymap *km)
{
	return km->shift;
}

static struct keymap_spare *
keymap_bound(struct keymap *km, KeySym sym)
{
	size_t i;

	for (i = 0; i < km->nspares; i++)
		if (km->spares[i].sym == sym)
			return &km->spares[i];
	return NULL;
}

/* The spare to lend next, of those not kept: one never bound, else the
 * one unused longest. */
static struct keymap_spare *
keymap_pick(struct keymap *km)
{
	struct keymap_spare *sp, *best = NULL;
	size_t i;

	for (i = 0; i < km->nspares; i++) {
		sp = &km->spares[i];
		if (sp->keep)
			continue;
		if (sp->used_at == 0)
			return sp;
		if (best == NULL || sp->used_at < best->used_at)
			best = sp;
	}
	return best;
}

/*
 * Binds the keysyms in fresh to spares, each at both of its first levels
 * so that neither shift nor the key's type changes what it gives. One
 * request per keycode: a request over a range would rewrite the real keys
 * between two spares, and the server's XKB rebuilds a key from the core
 * map losing what the core map cannot say.
 */
static void
keymap_bind(struct keymap *km, size_t n)
{
	struct keymap_spare **chosen = km->chosen;
	uint64_t after = *km->changed_at;
	KeySym both[2];
	size_t i;

	for (i = 0; i < n; i++) {
		chosen[i] = keymap_pick(km);
		chosen[i]->keep = true;
		if (chosen[i]->used_at > after)
			after = chosen[i]->used_at;
	}
	if (after != 0)
		keymap_sleep_until(after + KEYMAP_SETTLE_MS);
	for (i = 0; i < n; i++) {
		both[0] = both[1] = km->fresh[i];
		XChangeKeyboardMapping(km->dpy, chosen[i]->kc, 2, both, 1);
		chosen[i]->sym = km->fresh[i];
	}
	keymap_mark(km);
	XSync(km->dpy, False);
	*km->changed_at = clock_mono_ms();
	for (i = 0; i < n; i++)
		chosen[i]->used_at = *km->changed_at;
}

size_t
keymap_prepare(struct keymap *km, const KeySym *syms, size_t n)
{
	struct keymap_spare *sp;
	size_t i, j, nkeep = 0, nfresh = 0;
	KeyCode kc;
	bool shift;

	for (i = 0; i < n; i++) {
		if (keymap_lookup(km, syms[i], &kc, &shift) == 0)
			continue;
		if ((sp = keymap_bound(km, syms[i])) != NULL && sp->keep)
			continue;
		if (sp != NULL) {
			if (nkeep + nfresh == km->nspares)
				break;
			sp->keep = true;
			nkeep++;
			continue;
		}
		for (j = 0; j < nfresh && km->fresh[j] != syms[i]; j++)
			;
		if (j < nfresh)
			continue;
		if (nkeep + nfresh == km->nspares)
			break;
		km->fresh[nfresh++] = syms[i];
	}
	if (nfresh > 0)
		keymap_bind(km, nfresh);
	for (j = 0; j < km->nspares; j++)
		km->spares[j].keep = false;
	return i;
}

int
keymap_key(struct keymap *km, KeySym sym, KeyCode *kc, bool *shift)
{
	struct keymap_spare *sp;

	if (keymap_lookup(km, sym, kc, shift) == 0)
		return 0;
	if ((sp = keymap_bound(km, sym)) == NULL)
		return -1;
	sp->used_at = clock_mono_ms();
	*kc = sp->kc;
	*shift = false;
	return 0;
}

void
keymap_restore(struct keymap *km)
{
	KeySym none = NoSymbol;
	uint64_t last = 0;
	size_t i;

	for (i = 0; i < km->nspares; i++)
		if (km->spares[i].sym != NoSymbol &&
		    km->spares[i].used_at > last)
			last = km->spares[i].used_at;
	if (last == 0)
		return;
	keymap_sleep_until(last + KEYMAP_SETTLE_MS);
	for (i = 0; i < km->nspares; i++) {
		if (km->spares[i].sym == NoSymbol)
			continue;
		XChangeKeyboardMapping(km->dpy, km->spares[i].kc, 1, &none, 1);
		km->spares[i].sym = NoSymbol;
	}
	keymap_mark(km);
	XSync(km->dpy, False);
	*km->changed_at = clock_mono_ms();
}

int
keymap_utf8(const char **p, const char *end, uint32_t *cp)
{
	const unsigned char *s = (const unsigned char *)*p;
	size_t n, i, left = (size_t)(end - *p);
	uint32_t c, min;

	if (left == 0)
		return -1;
	if (s[0] < 0x80) {
		*cp = s[0];
		*p += 1;
		return 0;
	}
	if ((s[0] & 0xe0) == 0xc0) {
		n = 2, c = s[0] & 0x1f, min = 0x80;
	} else if ((s[0] & 0xf0) == 0xe0) {
		n = 3, c = s[0] & 0x0f, min = 0x800;
	} else if ((s[0] & 0xf8) == 0xf0) {
		n = 4, c = s[0] & 0x07, min = 0x10000;
	} else
		return -1;
	if (left < n)
		return -1;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return -1;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return -1;
	*cp = c;
	*p += n;
	return 0;
}

KeySym
keymap_char(uint32_t cp)
{
	if (cp == '\n' || cp == '\r')
		return XK_Return;
	if (cp == '\t')
		return XK_Tab;
	if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0))
		return NoSymbol;
	if (cp <= 0xff)
		return (KeySym)cp;
	return (KeySym)(0x01000000 | cp);
}

KeySym
keymap_name(const char *name)
{
	const char *p = name, *end = name + strlen(name);
	KeySym sym;
	uint32_t cp;
	size_t i;
	int n;

	for (i = 0; i < sizeof keymap_aliases / sizeof keymap_aliases[0]; i++)
		if (strcasecmp(name, keymap_aliases[i].name) == 0)
			return keymap_aliases[i].sym;
	if ((name[0] == 'f' || name[0] == 'F') && name[1] >= '1' &&
	    name[1] <= '9') {
		n = atoi(name + 1);
		if (n >= 1 && n <= 24 &&
		    strspn(name + 1, "0123456789") == strlen(name + 1))
			return XK_F1 + (KeySym)(n - 1);
	}
	sym = XStringToKeysym(name);
	if (sym != NoSymbol && sym != XK_VoidSymbol)
		return sym;
	if (keymap_utf8(&p, end, &cp) == 0 && p == end &&
	    keymap_char(cp) != NoSymbol && cp != '\n' && cp != '\r' &&
	    cp != '\t')
		return keymap_char(cp);
	return NoSymbol;
}
