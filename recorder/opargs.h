/* opargs: reading a desktop op's arguments with their limits. Each reader
 * says what is wrong in a message the handler answers bad_args with, so
 * that every op speaks of its arguments in one voice. Owns nothing: the
 * objects read belong to the request. */
#ifndef BERTH_OPARGS_H
#define BERTH_OPARGS_H

#include <msgpack.h>
#include <stdbool.h>
#include <stdint.h>

/* A rectangle of the screen, in pixels. */
struct opargs_rect {
	int x;
	int y;
	int width;
	int height;
};

/*
 * Every reader takes the request's args map and a key. An absent key, or
 * one whose value is nil, leaves *out as it is and returns 0; a value
 * read returns 1; a wrong one returns -1 with *cause (the caller frees
 * it) naming the key and what it must be.
 */

/* args is a map in which no key of keys (NULL-terminated) is given
 * twice: 0, or -1 with *cause. Every other key is ignored. */
int opargs_known(
    const msgpack_object *args, const char *const *keys, char **cause);
/* An integer in [lo, hi]. */
int opargs_int(const msgpack_object *args, const char *key, int64_t lo,
    int64_t hi, int64_t *out, char **cause);
/* A number (integer or float) in [lo, hi]. */
int opargs_number(const msgpack_object *args, const char *key, double lo,
    double hi, double *out, char **cause);
int opargs_bool(
    const msgpack_object *args, const char *key, bool *out, char **cause);
/* One of the strings in words (NULL-terminated): *out is its index. */
int opargs_word(const msgpack_object *args, const char *key,
    const char *const *words, int *out, char **cause);
/* A map {x, y, width, height} that lies within a screen of width x
 * height pixels, at least 1x1. */
int opargs_rect(const msgpack_object *args, const char *key, int width,
    int height, struct opargs_rect *out, char **cause);

#endif
