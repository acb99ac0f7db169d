/* gw_auth: finding the credential a request presents (see gw_auth.h).
 * Owns nothing; pure. */
#include <string.h>
#include <strings.h>

#include "gw_auth.h"

int
gw_auth_trim(const char **p, size_t *len)
{
	while (*len > 0 && (**p == ' ' || **p == '\t')) {
		(*p)++;
		(*len)--;
	}
	while (*len > 0 && ((*p)[*len - 1] == ' ' || (*p)[*len - 1] == '\t'))
		(*len)--;
	return *len == 0 ? -1 : 0;
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

int
gw_auth_presented(const char *authz, size_t alen, const char *jar, size_t jlen,
    const char **cred, size_t *len, const char **reason)
{
	*reason = "malformed";
	if (authz != NULL) {
		if (alen < 7 || strncasecmp(authz, "Bearer ", 7) != 0)
			return -1;
		*cred = authz + 7;
		*len = alen - 7;
		return gw_auth_trim(cred, len);
	}
	if (jar != NULL && gw_auth_cookie(jar, jlen, cred, len) == 0)
		return gw_auth_trim(cred, len);
	*reason = "missing";
	return -1;
}
