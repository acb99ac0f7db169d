/* rand: cryptographic randomness from the kernel (tokens, boot ids). */
#include <errno.h>
#include <sys/random.h>

#include "log.h"
#include "rand.h"

void
rand_bytes(void *buf, size_t n)
{
	unsigned char *p = buf;

	while (n > 0) {
		ssize_t got = getrandom(p, n, 0);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			log_fatal("getrandom: %m");
		}
		p += got;
		n -= (size_t)got;
	}
}

void
rand_hex(char *out, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	unsigned char b[64];
	size_t i, done = 0;

	while (done < n) {
		size_t chunk = n - done < sizeof b ? n - done : sizeof b;
		rand_bytes(b, chunk);
		for (i = 0; i < chunk; i++) {
			out[2 * (done + i)] = digits[b[i] >> 4];
			out[2 * (done + i) + 1] = digits[b[i] & 15];
		}
		done += chunk;
	}
	out[2 * n] = '\0';
}
