/* rand: cryptographic randomness from the kernel (tokens, boot ids). */
#ifndef BERTH_RAND_H
#define BERTH_RAND_H

#include <stddef.h>

/* Fills buf with n random bytes; aborts if the kernel cannot supply them. */
void rand_bytes(void *buf, size_t n);
/* Writes 2*n lowercase hex digits of fresh randomness and a NUL into out
 * (which holds at least 2*n+1 bytes). */
void rand_hex(char *out, size_t n);

#endif
