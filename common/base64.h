/* base64: RFC 4648's standard alphabet, with padding. */
#ifndef BERTH_BASE64_H
#define BERTH_BASE64_H

#include <stddef.h>

/* How many bytes base64_encode writes for n bytes, its NUL included. */
#define BASE64_SIZE(n) (((n) + 2) / 3 * 4 + 1)

/* Writes the encoding of p[0..n) and a NUL into out, which holds at
 * least BASE64_SIZE(n) bytes. */
void base64_encode(const void *p, size_t n, char *out);

#endif
