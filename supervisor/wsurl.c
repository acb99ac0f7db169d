/* wsurl: the repository URLs workspace.prepare takes (see wsurl.h). */
#include <stdbool.h>
#include <string.h>

#include "wsurl.h"

static bool
wsurl_alnum(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch >= '0' && ch <= '9');
}

/* A host name or IPv4 address, or an IPv6 address in brackets. */
static bool
wsurl_host(const char *h, size_t n)
{
	size_t i;

	if (n == 0 || n > 255)
		return false;
	if (h[0] == '[') {
		if (n < 3 || h[n - 1] != ']')
			return false;
		for (i = 1; i < n - 1; i++)
			if (!(wsurl_alnum(h[i]) || h[i] == ':' || h[i] == '.'))
				return false;
		return true;
	}
	if (h[0] == '-' || h[0] == '.')
		return false;
	for (i = 0; i < n; i++)
		if (!(wsurl_alnum(h[i]) || h[i] == '-' || h[i] == '.'))
			return false;
	return true;
}

static bool
wsurl_port(const char *p, size_t n)
{
	unsigned long v = 0;
	size_t i;

	if (n == 0 || n > 5 || p[0] == '0')
		return false;
	for (i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		v = v * 10 + (unsigned long)(p[i] - '0');
	}
	return v <= 65535;
}

/* A path of RFC 3986's unreserved, sub-delims, ':', '@', '/' and '%'. */
static bool
wsurl_path(const char *p, size_t n)
{
	size_t i;

	if (n < 2 || p[0] != '/')
		return false;
	for (i = 0; i < n; i++)
		if (!wsurl_alnum(p[i]) &&
		    strchr("-._~!$&'()*+,;=:@/%", p[i]) == NULL)
			return false;
	return true;
}

const char *
wsurl_check(const char *url, size_t len)
{
	const char *auth, *end, *colon;
	size_t i, alen;

	if (len == 0 || len > WSURL_MAX)
		return "repo must be an https URL of 1 to 2048 bytes";
	for (i = 0; i < len; i++)
		if ((unsigned char)url[i] <= 0x20 || url[i] == 0x7f ||
		    url[i] == '\\')
			return "the URL has a space, a control byte or a "
			       "backslash";
	if (len < 8 || memcmp(url, "https://", 8) != 0)
		return "the URL's scheme must be https (https://HOST/PATH)";
	auth = url + 8;
	end = url + len;
	alen = 0;
	while (auth + alen < end && strchr("/?#", auth[alen]) == NULL)
		alen++;
	if (memchr(auth, '@', alen) != NULL)
		return "the URL has a username/password: pass it as credential";
	if (memchr(auth, '?', (size_t)(end - auth)) != NULL ||
	    memchr(auth, '#', (size_t)(end - auth)) != NULL)
		return "the URL has a query or a fragment: give none";
	colon = NULL;
	for (i = alen; i > 0; i--)
		if (auth[i - 1] == ':' || auth[i - 1] == ']') {
			colon = auth[i - 1] == ':' ? auth + i - 1 : NULL;
			break;
		}
	if (colon != NULL &&
	    (!wsurl_host(auth, (size_t)(colon - auth)) ||
	        !wsurl_port(colon + 1, (size_t)(auth + alen - colon - 1))))
		return "the URL's host or port is malformed";
	if (colon == NULL && !wsurl_host(auth, alen))
		return "the URL's host is malformed";
	if (!wsurl_path(auth + alen, (size_t)(end - auth - alen)))
		return "the URL's path is missing or malformed";
	return NULL;
}
