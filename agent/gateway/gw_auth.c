/* gw_auth: the token check of every door of the gateway (see gw_auth.h).
 * Owns nothing; compares in time that depends on the presented length
 * only. */
#include <string.h>
#include <strings.h>

#include "gw_auth.h"

/* Whether presented[0..plen) is the token: every presented byte is
 * compared (against the token, repeated) whatever the lengths, and the
 * length difference is folded in last, so no early exit tells how much
 * of a guess was right. */
static int
gw_auth_equal(
    const char *presented, size_t plen, const char *token, size_t tlen)
{
	volatile unsigned char diff = 0;
	size_t i;

	for (i = 0; i < plen; i++)
		diff |= (unsigned char)(presented[i] ^ token[i % tlen]);
	return (diff | (unsigned char)((plen ^ tlen) != 0)) == 0;
}

const char *
gw_auth_token(const char *p, size_t len, const char *token, size_t tlen)
{
	while (len > 0 && (*p == ' ' || *p == '\t')) {
		p++;
		len--;
	}
	while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
		len--;
	if (len == 0)
		return "malformed";
	if (!gw_auth_equal(p, len, token, tlen))
		return "invalid";
	return NULL;
}

/* The value of GW_AUTH_COOKIE among the jar's "name=value" pairs, quotes
 * removed; -1 if it is not there. */
static int
gw_auth_cookie(const char *v, size_t n, const char **out, size_t *outlen)
{
	static const char name[] = GW_AUTH_COOKIE;
	size_t i = 0, a, b, nl = sizeof name - 1;
	const char *eq;

	while (i < n) {
		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ';'))
			i++;
		a = i;
		while (i < n && v[i] != ';')
			i++;
		b = i;
		while (b > a && (v[b - 1] == ' ' || v[b - 1] == '\t'))
			b--;
		eq = memchr(v + a, '=', b - a);
		if (eq == NULL || (size_t)(eq - (v + a)) != nl ||
		    memcmp(v + a, name, nl) != 0)
			continue;
		a = (size_t)(eq - v) + 1;
		if (b - a >= 2 && v[a] == '"' && v[b - 1] == '"') {
			a++;
			b--;
		}
		*out = v + a;
		*outlen = b - a;
		return 0;
	}
	return -1;
}

const char *
gw_auth_check(const char *authz, size_t alen, const char *jar, size_t jlen,
    const char *token, size_t tlen)
{
	const char *v;
	size_t vlen;

	if (authz != NULL) {
		if (alen < 7 || strncasecmp(authz, "Bearer ", 7) != 0)
			return "malformed";
		return gw_auth_token(authz + 7, alen - 7, token, tlen);
	}
	if (jar != NULL && gw_auth_cookie(jar, jlen, &v, &vlen) == 0)
		return gw_auth_token(v, vlen, token, tlen);
	return "missing";
}
