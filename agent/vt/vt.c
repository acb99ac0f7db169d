/* vt: berth-vt, the terminal emulator of one PTY session, run by berthd as
 * its child so that no byte a program prints is parsed inside PID 1. Owns
 * the session's vt_screen and speaks the record protocol on stdin/stdout. */
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "frame.h"
#include "log.h"
#include "vt_screen.h"
#include "xmalloc.h"

/*
 * Records in: a type byte, a u32 big-endian length, the payload.
 *   'D' output of the PTY (at most VT_MAX_DATA bytes), fed to the emulator
 *   'Z' resize: u16 cols, u16 rows (1 - VT_SCREEN_MAX each)
 *   'S' snapshot: empty; answered on stdout by a u32 big-endian length and
 *       the redraw bytes, in the order asked
 * Anything else ends the program with status 2; EOF between records with 0.
 */
#define VT_HDR 5
#define VT_MAX_DATA (1024 * 1024)
#define VT_BUF 65536

/* Buffered reading of stdin; the buffer is static, the program has one. */
struct vt_in {
	unsigned char buf[VT_BUF];
	size_t off;
	size_t len;
};

static struct vt_in vt_in;

/* Status 2: the peer broke the protocol; it gets the reason on stderr. */
static _Noreturn void __attribute__((format(printf, 1, 2)))
vt_bad(const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	log_warn("%s", msg);
	exit(2);
}

/* Returns the bytes ready (at most want), 0 at EOF. */
static size_t
vt_in_fill(size_t want)
{
	ssize_t n;

	if (vt_in.off == vt_in.len) {
		vt_in.off = vt_in.len = 0;
		for (;;) {
			n = read(STDIN_FILENO, vt_in.buf, sizeof vt_in.buf);
			if (n >= 0)
				break;
			if (errno != EINTR)
				log_fatal("read: %m");
		}
		vt_in.len = (size_t)n;
	}
	return vt_in.len - vt_in.off < want ? vt_in.len - vt_in.off : want;
}

/* Reads exactly len bytes; returns how many came before EOF. */
static size_t
vt_in_read(void *dst, size_t len)
{
	unsigned char *p = dst;
	size_t got = 0, n;

	while (got < len && (n = vt_in_fill(len - got)) > 0) {
		memcpy(p + got, vt_in.buf + vt_in.off, n);
		vt_in.off += n;
		got += n;
	}
	return got;
}

static void
vt_write(const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len > 0) {
		n = write(STDOUT_FILENO, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			log_fatal("write: %m");
		p += n;
		len -= (size_t)n;
	}
}

/* Feeds the payload as it arrives: no copy of a whole record is kept. */
static void
vt_data(struct vt_screen *vs, uint32_t len)
{
	size_t n;

	if (len > VT_MAX_DATA)
		vt_bad(
		    "data record of %u bytes (at most %d)", len, VT_MAX_DATA);
	while (len > 0) {
		n = vt_in_fill(len);
		if (n == 0)
			vt_bad("end of input inside a data record");
		vt_screen_feed(vs, vt_in.buf + vt_in.off, n);
		vt_in.off += n;
		len -= (uint32_t)n;
	}
}

static void
vt_resize(struct vt_screen *vs, uint32_t len)
{
	unsigned char p[4];
	int cols, rows;

	if (len != sizeof p)
		vt_bad("resize record of %u bytes (not 4)", len);
	if (vt_in_read(p, sizeof p) != sizeof p)
		vt_bad("end of input inside a resize record");
	cols = p[0] << 8 | p[1];
	rows = p[2] << 8 | p[3];
	if (cols < 1 || cols > VT_SCREEN_MAX || rows < 1 ||
	    rows > VT_SCREEN_MAX)
		vt_bad(
		    "resize to %dx%d (1-%d each)", cols, rows, VT_SCREEN_MAX);
	vt_screen_resize(vs, cols, rows);
}

static void
vt_snapshot(struct vt_screen *vs, uint32_t len)
{
	unsigned char hdr[4];
	size_t n;
	char *buf;

	if (len != 0)
		vt_bad("snapshot record of %u bytes (not 0)", len);
	buf = vt_screen_redraw(vs, &n);
	if (n > UINT32_MAX)
		log_fatal("redraw of %zu bytes", n);
	hdr[0] = (unsigned char)(n >> 24);
	hdr[1] = (unsigned char)(n >> 16);
	hdr[2] = (unsigned char)(n >> 8);
	hdr[3] = (unsigned char)n;
	vt_write(hdr, sizeof hdr);
	vt_write(buf, n);
	free(buf);
}

static int
vt_size_arg(const char *s, const char *what)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || n < 1 ||
	    n > VT_SCREEN_MAX)
		vt_bad("%s: \"%s\" is not a number from 1 to %d", what, s,
		    VT_SCREEN_MAX);
	return (int)n;
}

/*
 * Started by root, the emulator keeps nothing of it: parsing what any
 * program prints is the riskiest thing berth does, and it needs no more
 * than the two pipes it already holds.
 */
static void
vt_drop_privileges(void)
{
	const struct passwd *pw;
	uid_t uid = 65534;
	gid_t gid = 65534;

	if (geteuid() != 0)
		return;
	if ((pw = getpwnam("nobody")) != NULL) {
		uid = pw->pw_uid;
		gid = pw->pw_gid;
	}
	if (setgroups(0, NULL) != 0 || setresgid(gid, gid, gid) != 0 ||
	    setresuid(uid, uid, uid) != 0)
		log_fatal("dropping root: %m");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		log_fatal("prctl(PR_SET_NO_NEW_PRIVS): %m");
}

int
main(int argc, char **argv)
{
	unsigned char hdr[VT_HDR];
	struct vt_screen *vs;
	uint32_t len;
	size_t got;

	log_init("berth-vt", 0);
	if (argc != 3)
		vt_bad("usage: berth-vt COLS ROWS");
	signal(SIGPIPE, SIG_IGN); /* a write error says it, and exits */
	vt_drop_privileges();
	vs = vt_screen_create(
	    vt_size_arg(argv[1], "COLS"), vt_size_arg(argv[2], "ROWS"));

	while ((got = vt_in_read(hdr, sizeof hdr)) == sizeof hdr) {
		len = frame_length(hdr + 1);
		switch (hdr[0]) {
		case 'D': vt_data(vs, len); break;
		case 'Z': vt_resize(vs, len); break;
		case 'S': vt_snapshot(vs, len); break;
		default: vt_bad("unknown record type 0x%02x", hdr[0]);
		}
	}
	if (got != 0)
		vt_bad("end of input inside a record header");
	vt_screen_free(vs);
	return 0;
}
