/* sha256: SHA-256 as FIPS 180-4 defines it, in portable C (see sha256.h).
 * Owns nothing: the state lives in the caller's struct sha256. */
#include <string.h>

#include "sha256.h"

/* clang-format off */
static const uint32_t sha256_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};
/* clang-format on */

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))
#define CH(x, y, z) (((x) & (y)) ^ (~(x) & (z)))
#define MAJ(x, y, z) (((x) & (y)) | ((z) & ((x) | (y))))
#define BSIG0(x) (ROR(x, 2) ^ ROR(x, 13) ^ ROR(x, 22))
#define BSIG1(x) (ROR(x, 6) ^ ROR(x, 11) ^ ROR(x, 25))
#define SSIG0(x) (ROR(x, 7) ^ ROR(x, 18) ^ ((x) >> 3))
#define SSIG1(x) (ROR(x, 17) ^ ROR(x, 19) ^ ((x) >> 10))

/* The message schedule as a 16-word ring: word i of the 64 is w[i & 15]. */
#define W(i)                                                                   \
	(w[(i)&15] += SSIG1(w[((i)-2) & 15]) + w[((i)-7) & 15] +               \
	        SSIG0(w[((i)-15) & 15]))

/* One round, with the eight working variables renamed instead of moved. */
#define ROUND(a, b, c, d, e, f, g, h, i, wi)                                   \
	do {                                                                   \
		uint32_t t1 = h + BSIG1(e) + CH(e, f, g) + sha256_k[i] + (wi); \
		d += t1;                                                       \
		h = t1 + BSIG0(a) + MAJ(a, b, c);                              \
	} while (0)

#define ROUND8(i, wf)                                                          \
	do {                                                                   \
		ROUND(a, b, c, d, e, f, g, h, (i) + 0, wf((i) + 0));           \
		ROUND(h, a, b, c, d, e, f, g, (i) + 1, wf((i) + 1));           \
		ROUND(g, h, a, b, c, d, e, f, (i) + 2, wf((i) + 2));           \
		ROUND(f, g, h, a, b, c, d, e, (i) + 3, wf((i) + 3));           \
		ROUND(e, f, g, h, a, b, c, d, (i) + 4, wf((i) + 4));           \
		ROUND(d, e, f, g, h, a, b, c, (i) + 5, wf((i) + 5));           \
		ROUND(c, d, e, f, g, h, a, b, (i) + 6, wf((i) + 6));           \
		ROUND(b, c, d, e, f, g, h, a, (i) + 7, wf((i) + 7));           \
	} while (0)

#define W0(i) (w[i])

static uint32_t
sha256_load32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

static void
sha256_store32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

/* Folds nblocks whole 64-byte blocks of p into the state. */
static void
sha256_blocks(uint32_t st[8], const uint8_t *p, size_t nblocks)
{
	uint32_t a, b, c, d, e, f, g, h, w[16];
	int i;

	while (nblocks-- > 0) {
		for (i = 0; i < 16; i++)
			w[i] = sha256_load32(p + 4 * i);
		a = st[0];
		b = st[1];
		c = st[2];
		d = st[3];
		e = st[4];
		f = st[5];
		g = st[6];
		h = st[7];
		ROUND8(0, W0);
		ROUND8(8, W0);
		ROUND8(16, W);
		ROUND8(24, W);
		ROUND8(32, W);
		ROUND8(40, W);
		ROUND8(48, W);
		ROUND8(56, W);
		st[0] += a;
		st[1] += b;
		st[2] += c;
		st[3] += d;
		st[4] += e;
		st[5] += f;
		st[6] += g;
		st[7] += h;
		p += 64;
	}
}

void
sha256_init(struct sha256 *s)
{
	static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372,
	    0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

	memcpy(s->h, iv, sizeof iv);
	s->len = 0;
	s->nbuf = 0;
}

void
sha256_update(struct sha256 *s, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t take;

	s->len += len;
	if (s->nbuf > 0) {
		take = 64 - s->nbuf < len ? 64 - s->nbuf : len;
		memcpy(s->buf + s->nbuf, p, take);
		s->nbuf += take;
		p += take;
		len -= take;
		if (s->nbuf < 64)
			return;
		sha256_blocks(s->h, s->buf, 1);
		s->nbuf = 0;
	}
	/* Whole blocks straight from the caller's buffer, without a copy. */
	sha256_blocks(s->h, p, len / 64);
	p += len & ~(size_t)63;
	len &= 63;
	memcpy(s->buf, p, len);
	s->nbuf = len;
}

void
sha256_final(struct sha256 *s, uint8_t out[SHA256_LEN])
{
	uint64_t bits = s->len * 8;
	int i;

	/* Padding: 0x80, zeros up to 56 mod 64, the length in bits. */
	s->buf[s->nbuf++] = 0x80;
	if (s->nbuf > 56) {
		memset(s->buf + s->nbuf, 0, 64 - s->nbuf);
		sha256_blocks(s->h, s->buf, 1);
		s->nbuf = 0;
	}
	memset(s->buf + s->nbuf, 0, 56 - s->nbuf);
	sha256_store32(s->buf + 56, (uint32_t)(bits >> 32));
	sha256_store32(s->buf + 60, (uint32_t)bits);
	sha256_blocks(s->h, s->buf, 1);
	for (i = 0; i < 8; i++)
		sha256_store32(out + 4 * i, s->h[i]);
	/* The state says nothing about the message once the digest is out. */
	memset(s, 0, sizeof *s);
}

void
sha256_hex(const uint8_t digest[SHA256_LEN], char *out)
{
	static const char hex[] = "0123456789abcdef";
	int i;

	for (i = 0; i < SHA256_LEN; i++) {
		out[2 * i] = hex[digest[i] >> 4];
		out[2 * i + 1] = hex[digest[i] & 15];
	}
	out[2 * SHA256_LEN] = '\0';
}
