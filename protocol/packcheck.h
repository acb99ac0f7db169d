/* packcheck: whether what berth packed is one whole message.
 *
 * A map's count is written before its pairs, by hand
 * (msgpack_pack_map(pk, 8), then eight pairs): one pair too many or too
 * few makes a message that ends short, or leaves bytes a reader takes for
 * the next message. packcheck_whole tells, walking the headers as mpcheck
 * does. PACKCHECK_SENT stands where a program finishes a message to send
 * or journal: in builds configured with --enable-sanitizers or
 * --enable-fuzzing (which define BERTH_CHECKED) it aborts the program,
 * showing the message's head, so that every test that runs berth's
 * programs runs it too. Elsewhere it compiles to nothing: PID 1 must not abort.
 */
#ifndef BERTH_PACKCHECK_H
#define BERTH_PACKCHECK_H

#include <stddef.h>

/* Returns 0 if buf[0..len) is exactly one complete msgpack object (of any
 * size, nested up to MPCHECK_DEPTH_CEILING), else -1 with *why set to a
 * static reason. Allocates nothing. */
int packcheck_whole(const void *buf, size_t len, const char **why);

#ifdef BERTH_CHECKED
/* Aborts, showing the message's first bytes (its envelope's head) and
 * serving (the op being answered, if not NULL), unless buf[0..len) is one
 * whole message. */
void packcheck_sent(const void *buf, size_t len, const char *serving);
#define PACKCHECK_SENT(buf, len, serving) packcheck_sent(buf, len, serving)
#else
#define PACKCHECK_SENT(buf, len, serving)                                      \
	((void)sizeof(buf), (void)sizeof(len), (void)sizeof(serving))
#endif

#endif
