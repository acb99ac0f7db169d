/* sha256: the SHA-256 digest (FIPS 180-4), for content-addressed
 * artifacts. Ownership: the caller owns the context; nothing allocates. */
#ifndef BERTH_SHA256_H
#define BERTH_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32
#define SHA256_HEX (2 * SHA256_LEN + 1)

struct sha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
	size_t nbuf;
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
void sha256_final(struct sha256 *s, uint8_t out[SHA256_LEN]);
/* out[SHA256_HEX]: lowercase hex and a NUL. */
void sha256_hex(const uint8_t digest[SHA256_LEN], char *out);

#endif
