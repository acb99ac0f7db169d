/* input: desktop.input, the pointer and the keyboard driven through XTest
 * from inside berth-desktop: no process per action, and every request's
 * actions checked before the first is performed. */
#ifndef BERTH_INPUT_H
#define BERTH_INPUT_H

#include "serve.h"
#include "xconn.h"

/* Limits of one request. */
#define INPUT_MAX_ACTIONS 256
#define INPUT_MAX_TEXT 10000    /* characters of one type action */
#define INPUT_MAX_DELAY_MS 1000 /* type's delay_ms */
/* berth-desktop serves every desktop op from one loop: the delays of one
 * request add up to at most this. */
#define INPUT_MAX_TOTAL_DELAY_MS 10000
#define INPUT_MAX_COMBO 8         /* keys in one key combo */
#define INPUT_MAX_COMBO_BYTES 256 /* the combo string's length */
#define INPUT_MAX_CLICKS 3
#define INPUT_MAX_SCROLL 100 /* clicks of the wheel, each axis */
#define INPUT_MAX_STEPS 1000 /* motions of one drag */

/* The module's state: input_create allocates it, input_free frees it.
 * It borrows xc, which must outlive it. */
struct input;

struct input *input_create(struct xconn *xc);
void input_free(struct input *in);
/* Serves desktop.input on sv. */
void input_register(struct serve *sv, struct input *in);
/* Reads desktop.input's args as the op does, without a display: 0, or -1
 * with *cause (the caller frees it). For the fuzz target. */
int input_parse_args(const msgpack_object *args, char **cause);

#endif
