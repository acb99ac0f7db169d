/* keymap: the keyboard map as desktop.input presses keys on it. Which
 * keycode gives a keysym (and whether with shift); spare keycodes bound
 * for a while to keysyms the map lacks, as xdotool does to type any
 * character; and key names and characters turned into keysyms. */
#ifndef BERTH_KEYMAP_H
#define BERTH_KEYMAP_H

#include <X11/Xlib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The pause that lets clients catch up with a change of the map. A client
 * reads the map when it handles the change, which may be after the next
 * one: bind a key again too soon after it was pressed and a slow client
 * looks it up in a map that no longer holds its keysym. And Xlib (with
 * XKB) forgets a change that arrives while it is fetching the one before,
 * so changes come in bursts, one request per spare, at least this far
 * apart.
 */
#define KEYMAP_SETTLE_MS 50

/*
 * A snapshot of the map and modifiers of one display, with the spare
 * keycodes (no keysym, no modifier, not down) bound meanwhile.
 * keymap_load allocates it, keymap_free frees it; keymap_restore must
 * come first if any spare was bound, or the server keeps the bindings.
 */
struct keymap;

/* Reads the map. *changed_at (clock_mono_ms of the last change of the
 * map made through a keymap; 0 if none) is the caller's, kept from one
 * keymap to the next, and must outlive this one. Returns NULL with *cause
 * set (the caller frees it) if the server does not answer. */
struct keymap *keymap_load(Display *dpy, uint64_t *changed_at, char **cause);
void keymap_free(struct keymap *km);

/* The keycode that gives sym at its first level, or else at its second
 * (*shift then true); -1 if none does. Spares bound meanwhile do not
 * count. */
int keymap_lookup(
    const struct keymap *km, KeySym sym, KeyCode *kc, bool *shift);
/* How many spare keycodes there are to bind. */
size_t keymap_spares(const struct keymap *km);
/* Binds spares, in one burst, to the keysyms of syms[0..n) that the map
 * lacks, as many as there are spares for. Returns how many of syms, from
 * the first, can be pressed now (0 only if there is no spare). */
size_t keymap_prepare(struct keymap *km, const KeySym *syms, size_t n);
/* The keycode to press for sym, found in the map or bound by
 * keymap_prepare; -1 if neither. */
int keymap_key(struct keymap *km, KeySym sym, KeyCode *kc, bool *shift);
/* A keycode of the shift modifier, 0 if none. */
KeyCode keymap_shift(const struct keymap *km);
/* Whether kc is one of the modifier keys. */
bool keymap_is_modifier(const struct keymap *km, KeyCode kc);
/* Unbinds every spare bound, KEYMAP_SETTLE_MS after the last key event
 * on one, and syncs. */
void keymap_restore(struct keymap *km);

/* A key name: an alias (case-insensitive: ctrl, shift, alt, super, enter,
 * esc, f1...; see docs/protocol.md), an X keysym name (XStringToKeysym),
 * or one character. NoSymbol if it is none of these. */
KeySym keymap_name(const char *name);
/* The keysym that types code point cp: Latin-1 as itself, \n and \r as
 * Return, \t as Tab, other control characters NoSymbol, the rest as its
 * Unicode keysym. */
KeySym keymap_char(uint32_t cp);
/* Decodes the UTF-8 character at *p (before end) into *cp and advances
 * *p. Returns -1 on a malformed, overlong, surrogate or out-of-range
 * sequence (*p unchanged). */
int keymap_utf8(const char **p, const char *end, uint32_t *cp);

#endif
