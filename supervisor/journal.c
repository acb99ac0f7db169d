/* journal: the durable, sequenced event log in the state directory.
 * Owns the segment files, the write fd of the newest segment, and the
 * sorted in-memory list of segments that cursors consult. */
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "journal.h"
#include "log.h"
#include "xmalloc.h"

/*
 * A record on disk, every integer big-endian:
 *
 *	u32 payload length | u32 CRC-32C | u64 seq | payload
 *
 * The CRC covers the 8 seq bytes and the payload, so a damaged seq fails
 * the check just as damaged payload does.
 */
#define JOURNAL_HDR_LEN 0
#define JOURNAL_HDR_CRC 4
#define JOURNAL_HDR_SEQ 8
#define JOURNAL_HDR_SIZE 16

/* Segment files are named by the first seq they hold, zero padded so that
 * names sort as seqs do. */
#define JOURNAL_SEG_FMT "%020" PRIu64 ".seg"
#define JOURNAL_SEG_DIGITS 20
#define JOURNAL_SEG_SUFFIX ".seg"
#define JOURNAL_SEG_NAMESIZE 32

struct journal_hdr {
	uint32_t len;
	uint32_t crc;
	uint64_t seq;
};

/* A growable byte buffer; whoever embeds it frees p. */
struct journal_buf {
	uint8_t *p;
	size_t size;
};

/* One segment file, an element of journal.segs. */
struct journal_seg {
	uint64_t first_seq;
	uint64_t bytes; /* what appends have completed: readers stop here */
};

/* Allocated by journal_open, freed by journal_close with its fds. segs is
 * sorted by first_seq; the last element is the one appends go to. */
struct journal {
	char *dir;
	int dirfd;
	struct journal_opts opts;
	struct journal_seg *segs;
	size_t nsegs;
	size_t segs_alloc;
	int wfd; /* the last segment, -1 when there is none */
	uint64_t next_seq;
	uint64_t total_bytes;
};

/* Allocated by journal_cursor_open, freed by journal_cursor_close with its
 * fd and buffer. Until positioned, seq is only an estimate and the next
 * journal_cursor_next retries the positioning. Once positioned, fd -1
 * means "open the first segment after seg_first". */
struct journal_cursor {
	struct journal *j;
	uint64_t from_seq;
	int positioned;
	int fd;
	uint64_t seg_first;
	uint64_t off;
	uint64_t seq;
	struct journal_buf buf;
};

/* Why the scan of a segment stopped before its end: the torn tail. */
struct journal_scan {
	uint64_t end;  /* the offset after the last intact record */
	uint64_t next; /* the seq after the last intact record */
	const char *why;
};

/* CRC-32C (Castagnoli), reflected polynomial 0x82f63b78. */
/* clang-format off */
static const uint32_t journal_crc_table[256] = {
	0x00000000, 0xf26b8303, 0xe13b70f7, 0x1350f3f4,
	0xc79a971f, 0x35f1141c, 0x26a1e7e8, 0xd4ca64eb,
	0x8ad958cf, 0x78b2dbcc, 0x6be22838, 0x9989ab3b,
	0x4d43cfd0, 0xbf284cd3, 0xac78bf27, 0x5e133c24,
	0x105ec76f, 0xe235446c, 0xf165b798, 0x030e349b,
	0xd7c45070, 0x25afd373, 0x36ff2087, 0xc494a384,
	0x9a879fa0, 0x68ec1ca3, 0x7bbcef57, 0x89d76c54,
	0x5d1d08bf, 0xaf768bbc, 0xbc267848, 0x4e4dfb4b,
	0x20bd8ede, 0xd2d60ddd, 0xc186fe29, 0x33ed7d2a,
	0xe72719c1, 0x154c9ac2, 0x061c6936, 0xf477ea35,
	0xaa64d611, 0x580f5512, 0x4b5fa6e6, 0xb93425e5,
	0x6dfe410e, 0x9f95c20d, 0x8cc531f9, 0x7eaeb2fa,
	0x30e349b1, 0xc288cab2, 0xd1d83946, 0x23b3ba45,
	0xf779deae, 0x05125dad, 0x1642ae59, 0xe4292d5a,
	0xba3a117e, 0x4851927d, 0x5b016189, 0xa96ae28a,
	0x7da08661, 0x8fcb0562, 0x9c9bf696, 0x6ef07595,
	0x417b1dbc, 0xb3109ebf, 0xa0406d4b, 0x522bee48,
	0x86e18aa3, 0x748a09a0, 0x67dafa54, 0x95b17957,
	0xcba24573, 0x39c9c670, 0x2a993584, 0xd8f2b687,
	0x0c38d26c, 0xfe53516f, 0xed03a29b, 0x1f682198,
	0x5125dad3, 0xa34e59d0, 0xb01eaa24, 0x42752927,
	0x96bf4dcc, 0x64d4cecf, 0x77843d3b, 0x85efbe38,
	0xdbfc821c, 0x2997011f, 0x3ac7f2eb, 0xc8ac71e8,
	0x1c661503, 0xee0d9600, 0xfd5d65f4, 0x0f36e6f7,
	0x61c69362, 0x93ad1061, 0x80fde395, 0x72966096,
	0xa65c047d, 0x5437877e, 0x4767748a, 0xb50cf789,
	0xeb1fcbad, 0x197448ae, 0x0a24bb5a, 0xf84f3859,
	0x2c855cb2, 0xdeeedfb1, 0xcdbe2c45, 0x3fd5af46,
	0x7198540d, 0x83f3d70e, 0x90a324fa, 0x62c8a7f9,
	0xb602c312, 0x44694011, 0x5739b3e5, 0xa55230e6,
	0xfb410cc2, 0x092a8fc1, 0x1a7a7c35, 0xe811ff36,
	0x3cdb9bdd, 0xceb018de, 0xdde0eb2a, 0x2f8b6829,
	0x82f63b78, 0x709db87b, 0x63cd4b8f, 0x91a6c88c,
	0x456cac67, 0xb7072f64, 0xa457dc90, 0x563c5f93,
	0x082f63b7, 0xfa44e0b4, 0xe9141340, 0x1b7f9043,
	0xcfb5f4a8, 0x3dde77ab, 0x2e8e845f, 0xdce5075c,
	0x92a8fc17, 0x60c37f14, 0x73938ce0, 0x81f80fe3,
	0x55326b08, 0xa759e80b, 0xb4091bff, 0x466298fc,
	0x1871a4d8, 0xea1a27db, 0xf94ad42f, 0x0b21572c,
	0xdfeb33c7, 0x2d80b0c4, 0x3ed04330, 0xccbbc033,
	0xa24bb5a6, 0x502036a5, 0x4370c551, 0xb11b4652,
	0x65d122b9, 0x97baa1ba, 0x84ea524e, 0x7681d14d,
	0x2892ed69, 0xdaf96e6a, 0xc9a99d9e, 0x3bc21e9d,
	0xef087a76, 0x1d63f975, 0x0e330a81, 0xfc588982,
	0xb21572c9, 0x407ef1ca, 0x532e023e, 0xa145813d,
	0x758fe5d6, 0x87e466d5, 0x94b49521, 0x66df1622,
	0x38cc2a06, 0xcaa7a905, 0xd9f75af1, 0x2b9cd9f2,
	0xff56bd19, 0x0d3d3e1a, 0x1e6dcdee, 0xec064eed,
	0xc38d26c4, 0x31e6a5c7, 0x22b65633, 0xd0ddd530,
	0x0417b1db, 0xf67c32d8, 0xe52cc12c, 0x1747422f,
	0x49547e0b, 0xbb3ffd08, 0xa86f0efc, 0x5a048dff,
	0x8ecee914, 0x7ca56a17, 0x6ff599e3, 0x9d9e1ae0,
	0xd3d3e1ab, 0x21b862a8, 0x32e8915c, 0xc083125f,
	0x144976b4, 0xe622f5b7, 0xf5720643, 0x07198540,
	0x590ab964, 0xab613a67, 0xb831c993, 0x4a5a4a90,
	0x9e902e7b, 0x6cfbad78, 0x7fab5e8c, 0x8dc0dd8f,
	0xe330a81a, 0x115b2b19, 0x020bd8ed, 0xf0605bee,
	0x24aa3f05, 0xd6c1bc06, 0xc5914ff2, 0x37faccf1,
	0x69e9f0d5, 0x9b8273d6, 0x88d28022, 0x7ab90321,
	0xae7367ca, 0x5c18e4c9, 0x4f48173d, 0xbd23943e,
	0xf36e6f75, 0x0105ec76, 0x12551f82, 0xe03e9c81,
	0x34f4f86a, 0xc69f7b69, 0xd5cf889d, 0x27a40b9e,
	0x79b737ba, 0x8bdcb4b9, 0x988c474d, 0x6ae7c44e,
	0xbe2da0a5, 0x4c4623a6, 0x5f16d052, 0xad7d5351,
};
/* clang-format on */

static uint32_t
journal_crc32c(uint32_t crc, const uint8_t *p, size_t len)
{
	crc = ~crc;
	while (len-- > 0)
		crc = journal_crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

static void
journal_put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static void
journal_put64(uint8_t *p, uint64_t v)
{
	journal_put32(p, v >> 32);
	journal_put32(p + 4, (uint32_t)v);
}

static uint32_t
journal_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

static uint64_t
journal_get64(const uint8_t *p)
{
	return (uint64_t)journal_get32(p) << 32 | journal_get32(p + 4);
}

static uint32_t
journal_record_crc(uint64_t seq, const uint8_t *payload, size_t len)
{
	uint8_t b[8];

	journal_put64(b, seq);
	return journal_crc32c(journal_crc32c(0, b, sizeof b), payload, len);
}

static void
journal_hdr_pack(uint8_t *hdr, uint64_t seq, const uint8_t *payload, size_t len)
{
	journal_put32(hdr + JOURNAL_HDR_LEN, (uint32_t)len);
	journal_put64(hdr + JOURNAL_HDR_SEQ, seq);
	journal_put32(
	    hdr + JOURNAL_HDR_CRC, journal_record_crc(seq, payload, len));
}

static void
journal_hdr_unpack(const uint8_t *hdr, struct journal_hdr *h)
{
	h->len = journal_get32(hdr + JOURNAL_HDR_LEN);
	h->crc = journal_get32(hdr + JOURNAL_HDR_CRC);
	h->seq = journal_get64(hdr + JOURNAL_HDR_SEQ);
}

static uint8_t *
journal_buf_reserve(struct journal_buf *b, size_t len)
{
	size_t size;

	if (b->size < len || b->p == NULL) {
		/* Never empty, so a zero-length payload is still a pointer. */
		size = len < 64 ? 64 : len;
		b->p = xrealloc(b->p, size);
		b->size = size;
	}
	return b->p;
}

/* pread that retries on EINTR and short reads: returns len, fewer only at
 * the end of the file, or -1 with errno set. */
static ssize_t
journal_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = pread(
		    fd, (uint8_t *)buf + done, len - done, (off_t)(off + done));
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return -1;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* pwritev of everything, at off, across EINTR and short writes. */
static int
journal_pwritev_full(int fd, struct iovec *iov, int iovcnt, uint64_t off)
{
	ssize_t n;
	size_t left;

	while (iovcnt > 0) {
		n = pwritev(fd, iov, iovcnt, (off_t)off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return -1;
		if (n == 0) {
			errno = EIO;
			return -1;
		}
		off += (uint64_t)n;
		left = (size_t)n;
		while (iovcnt > 0 && left >= iov->iov_len) {
			left -= iov->iov_len;
			iov++;
			iovcnt--;
		}
		if (iovcnt > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + left;
			iov->iov_len -= left;
		}
	}
	return 0;
}

static void
journal_seg_name(char *name, uint64_t first)
{
	snprintf(name, JOURNAL_SEG_NAMESIZE, JOURNAL_SEG_FMT, first);
}

/* A segment's name is exactly its first seq in 20 digits and the suffix;
 * anything else in the directory is not ours and is left alone. */
static int
journal_seg_parse(const char *name, uint64_t *first)
{
	uint64_t v = 0;
	size_t i;

	if (strlen(name) != JOURNAL_SEG_DIGITS + strlen(JOURNAL_SEG_SUFFIX))
		return 0;
	if (strcmp(name + JOURNAL_SEG_DIGITS, JOURNAL_SEG_SUFFIX) != 0)
		return 0;
	for (i = 0; i < JOURNAL_SEG_DIGITS; i++) {
		if (name[i] < '0' || name[i] > '9')
			return 0;
		if (v > (UINT64_MAX - (uint64_t)(name[i] - '0')) / 10)
			return 0;
		v = v * 10 + (uint64_t)(name[i] - '0');
	}
	if (v == 0)
		return 0;
	*first = v;
	return 1;
}

static char *
journal_errno_cause(const struct journal *j, const char *what, uint64_t first)
{
	char name[JOURNAL_SEG_NAMESIZE];

	journal_seg_name(name, first);
	return xasprintf("%s %s/%s: %s", what, j->dir, name, strerror(errno));
}

static void
journal_seg_push(struct journal *j, uint64_t first, uint64_t bytes)
{
	if (j->nsegs == j->segs_alloc) {
		j->segs_alloc = j->segs_alloc == 0 ? 8 : j->segs_alloc * 2;
		j->segs =
		    xreallocarray(j->segs, j->segs_alloc, sizeof *j->segs);
	}
	j->segs[j->nsegs].first_seq = first;
	j->segs[j->nsegs].bytes = bytes;
	j->nsegs++;
	j->total_bytes += bytes;
}

/* The index of the first segment whose first seq is above seq, nsegs if
 * none: cursors move on to it, and the one before holds seq. */
static size_t
journal_seg_after(const struct journal *j, uint64_t seq)
{
	size_t lo = 0, hi = j->nsegs, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (j->segs[mid].first_seq <= seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int
journal_seq_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The first seqs of the segment files in the directory, sorted. */
static int
journal_list(struct journal *j, uint64_t **out, size_t *n, char **cause)
{
	DIR *d;
	struct dirent *de;
	uint64_t *firsts = NULL, first;
	size_t alloc = 0;

	*n = 0;
	if ((d = opendir(j->dir)) == NULL) {
		*cause = xasprintf("opendir %s: %s", j->dir, strerror(errno));
		return -1;
	}
	while ((errno = 0, de = readdir(d)) != NULL) {
		if (!journal_seg_parse(de->d_name, &first))
			continue;
		if (*n == alloc) {
			alloc = alloc == 0 ? 16 : alloc * 2;
			firsts = xreallocarray(firsts, alloc, sizeof *firsts);
		}
		firsts[(*n)++] = first;
	}
	if (errno != 0) {
		*cause = xasprintf("readdir %s: %s", j->dir, strerror(errno));
		closedir(d);
		free(firsts);
		return -1;
	}
	closedir(d);
	if (*n > 0)
		qsort(firsts, *n, sizeof *firsts, journal_seq_cmp);
	*out = firsts;
	return 0;
}

/*
 * Reads the records of one segment from its start, expecting the first to
 * carry the seq in the segment's name and each next one the seq after.
 * Stops at the first record that is not whole and intact: that and
 * everything after it is the torn tail. -1 only when the file cannot be
 * read.
 */
static int
journal_scan_seg(struct journal *j, int fd, uint64_t first, uint64_t size,
    struct journal_buf *b, struct journal_scan *s, char **cause)
{
	uint8_t raw[JOURNAL_HDR_SIZE];
	struct journal_hdr h;
	ssize_t n;

	s->end = 0;
	s->next = first;
	s->why = NULL;
	while (s->end < size) {
		if (size - s->end < JOURNAL_HDR_SIZE) {
			s->why = "partial header";
			return 0;
		}
		n = journal_pread_full(fd, raw, sizeof raw, s->end);
		if (n == -1) {
			*cause = journal_errno_cause(j, "read", first);
			return -1;
		}
		if (n != sizeof raw) {
			s->why = "partial header";
			return 0;
		}
		journal_hdr_unpack(raw, &h);
		if (h.len > j->opts.max_record) {
			s->why = "length over the record limit";
			return 0;
		}
		if (h.len > size - s->end - JOURNAL_HDR_SIZE) {
			s->why = "record runs past the end of the file";
			return 0;
		}
		n = journal_pread_full(fd, journal_buf_reserve(b, h.len), h.len,
		    s->end + JOURNAL_HDR_SIZE);
		if (n == -1) {
			*cause = journal_errno_cause(j, "read", first);
			return -1;
		}
		if ((size_t)n != h.len) {
			s->why = "record runs past the end of the file";
			return 0;
		}
		if (journal_record_crc(h.seq, b->p, h.len) != h.crc) {
			s->why = "checksum mismatch";
			return 0;
		}
		if (h.seq != s->next) {
			s->why = "seq out of order";
			return 0;
		}
		s->end += JOURNAL_HDR_SIZE + h.len;
		s->next++;
	}
	return 0;
}

/* Validates one segment and cuts its torn tail. Returns 1 and the seq after
 * its last record in *next if it is kept, 0 if it held nothing and was
 * removed, -1 on error. */
static int
journal_recover_seg(struct journal *j, uint64_t first, struct journal_buf *b,
    uint64_t *next, char **cause)
{
	char name[JOURNAL_SEG_NAMESIZE];
	struct journal_scan s;
	struct stat st;
	int fd;

	journal_seg_name(name, first);
	if ((fd = openat(j->dirfd, name, O_RDWR | O_CLOEXEC)) == -1) {
		*cause = journal_errno_cause(j, "open", first);
		return -1;
	}
	if (fstat(fd, &st) != 0) {
		*cause = journal_errno_cause(j, "stat", first);
		close(fd);
		return -1;
	}
	if (journal_scan_seg(
	        j, fd, first, (uint64_t)st.st_size, b, &s, cause) != 0) {
		close(fd);
		return -1;
	}
	if (s.why != NULL) {
		if (ftruncate(fd, (off_t)s.end) != 0) {
			*cause = journal_errno_cause(j, "truncate", first);
			close(fd);
			return -1;
		}
		log_warn("journal %s/%s: cut %" PRIu64
		         " bytes at offset %" PRIu64 " (%s)",
		    j->dir, name, (uint64_t)st.st_size - s.end, s.end, s.why);
	}
	close(fd);
	if (s.end == 0) {
		if (unlinkat(j->dirfd, name, 0) != 0 && errno != ENOENT) {
			*cause = journal_errno_cause(j, "unlink", first);
			return -1;
		}
		return 0;
	}
	journal_seg_push(j, first, s.end);
	*next = s.next;
	return 1;
}

/* A segment named below a seq already held would make seqs go backwards
 * for a reader; it can only be left over from tampering, and is dropped. */
static int
journal_drop_seg(struct journal *j, uint64_t first, uint64_t held, char **cause)
{
	char name[JOURNAL_SEG_NAMESIZE];
	struct stat st;

	journal_seg_name(name, first);
	if (fstatat(j->dirfd, name, &st, 0) != 0)
		st.st_size = 0;
	if (unlinkat(j->dirfd, name, 0) != 0 && errno != ENOENT) {
		*cause = journal_errno_cause(j, "unlink", first);
		return -1;
	}
	log_warn("journal %s/%s: cut %" PRIu64 " bytes (seqs up to %" PRIu64
	         " were already held)",
	    j->dir, name, (uint64_t)st.st_size, held - 1);
	return 0;
}

/*
 * Validates every segment in order (the total is bounded by max_bytes, so
 * this is affordable, and a crash without sync can tear any of them, not
 * only the last). A hole left between two segments stays a hole: readers
 * see it as a jump in seq. next_seq never goes below a seq named by any
 * segment file, even an empty one, because that seq may have been sent.
 */
static int
journal_recover(
    struct journal *j, const uint64_t *firsts, size_t n, char **cause)
{
	struct journal_buf b = {NULL, 0};
	uint64_t held = 0, next = 0, highest = 1;
	size_t i;
	int r;

	for (i = 0; i < n; i++) {
		if (firsts[i] > highest)
			highest = firsts[i];
		if (held != 0 && firsts[i] < held) {
			if (journal_drop_seg(j, firsts[i], held, cause) != 0)
				goto fail;
			continue;
		}
		r = journal_recover_seg(j, firsts[i], &b, &next, cause);
		if (r == -1)
			goto fail;
		if (r == 0)
			continue;
		if (held != 0 && firsts[i] > held) {
			log_warn("journal %s: seqs %" PRIu64 " to %" PRIu64
			         " are missing",
			    j->dir, held, firsts[i] - 1);
		}
		held = next;
	}
	free(b.p);
	j->next_seq = held > highest ? held : highest;
	return 0;

fail:
	free(b.p);
	return -1;
}

static int
journal_remove_all(
    struct journal *j, const uint64_t *firsts, size_t n, char **cause)
{
	char name[JOURNAL_SEG_NAMESIZE];
	size_t i;

	for (i = 0; i < n; i++) {
		journal_seg_name(name, firsts[i]);
		if (unlinkat(j->dirfd, name, 0) != 0 && errno != ENOENT) {
			*cause = journal_errno_cause(j, "unlink", firsts[i]);
			return -1;
		}
	}
	j->next_seq = 1;
	return 0;
}

static int
journal_open_writer(struct journal *j, char **cause)
{
	char name[JOURNAL_SEG_NAMESIZE];
	uint64_t first;

	if (j->nsegs == 0)
		return 0;
	first = j->segs[j->nsegs - 1].first_seq;
	journal_seg_name(name, first);
	if ((j->wfd = openat(j->dirfd, name, O_WRONLY | O_CLOEXEC)) == -1) {
		*cause = journal_errno_cause(j, "open", first);
		return -1;
	}
	return 0;
}

struct journal *
journal_open(
    const char *dir, const struct journal_opts *opts, bool fresh, char **cause)
{
	struct journal *j;
	uint64_t *firsts = NULL;
	size_t n;

	if (opts->max_record > UINT32_MAX) {
		*cause = xasprintf("journal %s: max record of %zu bytes is "
		                   "over the format's limit",
		    dir, opts->max_record);
		return NULL;
	}
	j = xcalloc(1, sizeof *j);
	j->dir = xstrdup(dir);
	j->opts = *opts;
	j->dirfd = -1;
	j->wfd = -1;
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		*cause = xasprintf("mkdir %s: %s", dir, strerror(errno));
		goto fail;
	}
	j->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (j->dirfd == -1) {
		*cause = xasprintf("open %s: %s", dir, strerror(errno));
		goto fail;
	}
	if (journal_list(j, &firsts, &n, cause) != 0)
		goto fail;
	if (fresh) {
		if (journal_remove_all(j, firsts, n, cause) != 0)
			goto fail;
	} else if (journal_recover(j, firsts, n, cause) != 0)
		goto fail;
	if (journal_open_writer(j, cause) != 0)
		goto fail;
	free(firsts);
	return j;

fail:
	free(firsts);
	journal_close(j);
	return NULL;
}

void
journal_close(struct journal *j)
{
	if (j->wfd != -1)
		close(j->wfd);
	if (j->dirfd != -1)
		close(j->dirfd);
	free(j->segs);
	free(j->dir);
	free(j);
}

uint64_t
journal_next_seq(const struct journal *j)
{
	return j->next_seq;
}

uint64_t
journal_first_seq(const struct journal *j)
{
	return j->nsegs == 0 ? j->next_seq : j->segs[0].first_seq;
}

/* Starts the segment that the record with seq will open. The previous
 * writer fd is kept until the new file exists, so a failure changes
 * nothing. */
static int
journal_new_seg(struct journal *j, uint64_t seq, char **cause)
{
	char name[JOURNAL_SEG_NAMESIZE];
	int fd;

	journal_seg_name(name, seq);
	fd = openat(
	    j->dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd == -1) {
		*cause = journal_errno_cause(j, "create", seq);
		return -1;
	}
	if (j->opts.sync && fsync(j->dirfd) != 0) {
		*cause = xasprintf("fsync %s: %s", j->dir, strerror(errno));
		close(fd);
		unlinkat(j->dirfd, name, 0);
		return -1;
	}
	if (j->wfd != -1)
		close(j->wfd);
	j->wfd = fd;
	journal_seg_push(j, seq, 0);
	return 0;
}

/* Deletes the oldest segments while the total is over the bound; the
 * newest is never deleted. Cursors reading a deleted file keep their fd. */
static void
journal_trim(struct journal *j)
{
	char name[JOURNAL_SEG_NAMESIZE];

	while (j->total_bytes > j->opts.max_bytes && j->nsegs > 1) {
		journal_seg_name(name, j->segs[0].first_seq);
		if (unlinkat(j->dirfd, name, 0) != 0 && errno != ENOENT)
			log_warn("journal unlink %s/%s: %s", j->dir, name,
			    strerror(errno));
		j->total_bytes -= j->segs[0].bytes;
		j->nsegs--;
		memmove(j->segs, j->segs + 1, j->nsegs * sizeof *j->segs);
	}
}

int
journal_append(struct journal *j, uint64_t seq, const void *payload, size_t len,
    char **cause)
{
	uint8_t hdr[JOURNAL_HDR_SIZE];
	struct iovec iov[2];
	struct journal_seg *seg;
	uint64_t rec = JOURNAL_HDR_SIZE + (uint64_t)len;

	if (seq != j->next_seq) {
		*cause = xasprintf("journal %s: append of seq %" PRIu64
		                   ", expected %" PRIu64,
		    j->dir, seq, j->next_seq);
		return -1;
	}
	if (len > j->opts.max_record) {
		*cause = xasprintf("journal %s: record of %zu bytes is over "
		                   "the limit of %zu",
		    j->dir, len, j->opts.max_record);
		return -1;
	}
	seg = j->nsegs == 0 ? NULL : &j->segs[j->nsegs - 1];
	if (seg == NULL ||
	    (seg->bytes > 0 && seg->bytes + rec > j->opts.segment_bytes)) {
		if (journal_new_seg(j, seq, cause) != 0)
			return -1;
		seg = &j->segs[j->nsegs - 1];
	}

	journal_hdr_pack(hdr, seq, payload, len);
	iov[0].iov_base = hdr;
	iov[0].iov_len = sizeof hdr;
	iov[1].iov_base = (void *)payload;
	iov[1].iov_len = len;
	if (journal_pwritev_full(j->wfd, iov, len == 0 ? 1 : 2, seg->bytes) !=
	        0 ||
	    (j->opts.sync && fdatasync(j->wfd) != 0)) {
		*cause = journal_errno_cause(j, "write", seg->first_seq);
		/* Readers stop at seg->bytes and the next append overwrites
		 * from there, so a failed cut only leaves bytes that the next
		 * open cuts as a torn tail. */
		if (ftruncate(j->wfd, (off_t)seg->bytes) != 0)
			log_warn("journal %s: cannot cut a failed append: %s",
			    j->dir, strerror(errno));
		return -1;
	}
	seg->bytes += rec;
	j->total_bytes += rec;
	j->next_seq++;
	journal_trim(j);
	return 0;
}

/* Where the records of the cursor's segment end: what appends completed
 * while the journal still lists it, the file's size once rotation deleted
 * it (a deleted file no longer changes). */
static int
journal_cursor_limit(struct journal_cursor *c, uint64_t *limit, char **cause)
{
	struct journal *j = c->j;
	size_t i;
	struct stat st;

	i = journal_seg_after(j, c->seg_first);
	if (i > 0 && j->segs[i - 1].first_seq == c->seg_first) {
		*limit = j->segs[i - 1].bytes;
		return 0;
	}
	if (fstat(c->fd, &st) != 0) {
		*cause = journal_errno_cause(j, "stat", c->seg_first);
		return -1;
	}
	*limit = (uint64_t)st.st_size;
	return 0;
}

static char *
journal_damaged(const struct journal_cursor *c)
{
	return xasprintf("journal %s/" JOURNAL_SEG_FMT
	                 ": damaged record at offset %" PRIu64,
	    c->j->dir, c->seg_first, c->off);
}

static int
journal_cursor_enter(struct journal_cursor *c, size_t i, char **cause)
{
	struct journal *j = c->j;
	char name[JOURNAL_SEG_NAMESIZE];
	uint64_t first = j->segs[i].first_seq;
	int fd;

	journal_seg_name(name, first);
	if ((fd = openat(j->dirfd, name, O_RDONLY | O_CLOEXEC)) == -1) {
		*cause = journal_errno_cause(j, "open", first);
		return -1;
	}
	c->fd = fd;
	c->seg_first = first;
	c->off = 0;
	return 0;
}

/*
 * The header of the record at the cursor, moving on to the next segment
 * at the end of one: to the segment after the cursor's own, which is the
 * oldest one left if rotation deleted everything up to it. Returns 1 when
 * a whole record is there, 0 when the cursor has caught up.
 */
static int
journal_cursor_peek(
    struct journal_cursor *c, struct journal_hdr *h, char **cause)
{
	struct journal *j = c->j;
	uint8_t raw[JOURNAL_HDR_SIZE];
	uint64_t limit;
	ssize_t n;
	size_t i;

	for (;;) {
		if (c->fd == -1) {
			i = journal_seg_after(j, c->seg_first);
			if (i == j->nsegs)
				return 0;
			if (journal_cursor_enter(c, i, cause) != 0)
				return -1;
		}
		if (journal_cursor_limit(c, &limit, cause) != 0)
			return -1;
		if (limit >= JOURNAL_HDR_SIZE &&
		    c->off <= limit - JOURNAL_HDR_SIZE) {
			n = journal_pread_full(c->fd, raw, sizeof raw, c->off);
			if (n == -1) {
				*cause = journal_errno_cause(
				    j, "read", c->seg_first);
				return -1;
			}
			if (n == sizeof raw) {
				journal_hdr_unpack(raw, h);
				if (h->len > j->opts.max_record) {
					*cause = journal_damaged(c);
					return -1;
				}
				if (h->len <= limit - c->off - JOURNAL_HDR_SIZE)
					return 1;
			}
		}
		if (j->nsegs == 0 ||
		    j->segs[j->nsegs - 1].first_seq <= c->seg_first)
			return 0;
		close(c->fd);
		c->fd = -1;
	}
}

static int
journal_cursor_position(struct journal_cursor *c, char **cause)
{
	struct journal *j = c->j;
	struct journal_hdr h;
	size_t i;
	int r;

	if (j->nsegs == 0 || c->from_seq >= j->next_seq) {
		c->seg_first = 0;
		c->off = 0;
		if (j->nsegs > 0) {
			if (journal_cursor_enter(c, j->nsegs - 1, cause) != 0)
				return -1;
			c->off = j->segs[j->nsegs - 1].bytes;
		}
		c->seq = j->next_seq;
		c->positioned = 1;
		return 0;
	}
	i = journal_seg_after(j, c->from_seq);
	if (journal_cursor_enter(c, i == 0 ? 0 : i - 1, cause) != 0)
		return -1;
	/* Headers only: skipped records are not checked, just stepped over. */
	while (
	    (r = journal_cursor_peek(c, &h, cause)) == 1 && h.seq < c->from_seq)
		c->off += JOURNAL_HDR_SIZE + h.len;
	if (r == -1) {
		if (c->fd != -1)
			close(c->fd);
		c->fd = -1;
		return -1;
	}
	c->seq = r == 1 ? h.seq : j->next_seq;
	c->positioned = 1;
	return 0;
}

struct journal_cursor *
journal_cursor_open(struct journal *j, uint64_t from_seq)
{
	struct journal_cursor *c;
	char *cause = NULL;
	uint64_t first = journal_first_seq(j);

	c = xcalloc(1, sizeof *c);
	c->j = j;
	c->fd = -1;
	c->from_seq = from_seq;
	c->seq = from_seq < first ? first : from_seq;
	if (c->seq > j->next_seq)
		c->seq = j->next_seq;
	/* A failure here is met again, and reported, by the first
	 * journal_cursor_next, which retries. */
	if (journal_cursor_position(c, &cause) != 0)
		free(cause);
	return c;
}

uint64_t
journal_cursor_seq(const struct journal_cursor *c)
{
	return c->seq;
}

/*
 * Returns the record at the cursor and steps past it. Seqs come back
 * strictly increasing; a record is checked against its checksum and
 * against the seq it must carry (the segment's name for the first record
 * of a segment, one more than the last one returned after that).
 *
 * A gap mid-stream: when the reader fell so far behind that rotation
 * deleted the segments after the one it was reading, it finishes that one
 * (its fd still reads the deleted file) and then jumps to the oldest
 * segment left, so the seq returned jumps past the records it lost. The
 * caller sees the gap as *seq above journal_cursor_seq before the call.
 */
int
journal_cursor_next(struct journal_cursor *c, const uint8_t **payload,
    size_t *len, uint64_t *seq, char **cause)
{
	struct journal *j = c->j;
	struct journal_hdr h;
	uint64_t want;
	uint8_t *p;
	ssize_t n;
	int r;

	if (!c->positioned && journal_cursor_position(c, cause) != 0)
		return -1;
	if ((r = journal_cursor_peek(c, &h, cause)) != 1)
		return r;
	want = c->off == 0 ? c->seg_first : c->seq;
	if (h.seq != want || h.seq < c->seq) {
		*cause = xasprintf("journal %s/" JOURNAL_SEG_FMT
		                   ": seq %" PRIu64 " at offset %" PRIu64
		                   " where %" PRIu64 " was due",
		    j->dir, c->seg_first, h.seq, c->off, want);
		return -1;
	}
	p = journal_buf_reserve(&c->buf, h.len);
	n = journal_pread_full(c->fd, p, h.len, c->off + JOURNAL_HDR_SIZE);
	if (n == -1) {
		*cause = journal_errno_cause(j, "read", c->seg_first);
		return -1;
	}
	if ((size_t)n != h.len ||
	    journal_record_crc(h.seq, p, h.len) != h.crc) {
		*cause = journal_damaged(c);
		return -1;
	}
	c->off += JOURNAL_HDR_SIZE + h.len;
	c->seq = h.seq + 1;
	*payload = p;
	*len = h.len;
	*seq = h.seq;
	return 1;
}

void
journal_cursor_close(struct journal_cursor *c)
{
	if (c->fd != -1)
		close(c->fd);
	free(c->buf.p);
	free(c);
}
