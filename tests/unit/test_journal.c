/* test_journal: the journal's promises: records come back in order with
 * their seqs, survive a reopen, lose only a torn tail after a crash, and
 * rotation bounds the disk while readers see exactly where they lost. */
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "journal.h"
#include "scratch.h"
#include "tap.h"
#include "xmalloc.h"

#define TEST_MAX_PAYLOAD 64

static const struct journal_opts test_opts = {
    .segment_bytes = 1 << 20,
    .max_bytes = 1 << 24,
    .max_record = 4096,
    .sync = false,
};

/* Rotation-sized: records of 16 to 65 bytes in segments of 256. */
static const struct journal_opts small_opts = {
    .segment_bytes = 256,
    .max_bytes = 1024,
    .max_record = TEST_MAX_PAYLOAD,
    .sync = false,
};

/* The payload of seq: its length and bytes both follow from seq, so a
 * record returned with the wrong seq or from the wrong place is caught. */
static size_t
payload_for(uint64_t seq, uint8_t *buf)
{
	size_t len = (size_t)(seq * 13 % 50), i;

	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)(seq * 131 + i * 7);
	return len;
}

static struct journal *
jopen(const char *dir, const struct journal_opts *o, bool fresh)
{
	struct journal *j;
	char *cause = NULL;

	j = journal_open(dir, o, fresh, &cause);
	ck_assert_msg(j != NULL, "journal_open: %s", cause);
	return j;
}

static void
append_one(struct journal *j, uint64_t seq)
{
	uint8_t buf[TEST_MAX_PAYLOAD];
	char *cause = NULL;
	size_t len = payload_for(seq, buf);

	ck_assert_msg(journal_append(j, seq, buf, len, &cause) == 0,
	    "append %" PRIu64 ": %s", seq, cause);
}

static void
append_range(struct journal *j, uint64_t from, uint64_t to)
{
	uint64_t seq;

	for (seq = from; seq <= to; seq++)
		append_one(j, seq);
	ck_assert_uint_eq(journal_next_seq(j), to + 1);
}

static void
expect_record(struct journal_cursor *c, uint64_t want)
{
	uint8_t buf[TEST_MAX_PAYLOAD];
	const uint8_t *p;
	size_t len, wlen = payload_for(want, buf);
	uint64_t seq;
	char *cause = NULL;
	int r;

	ck_assert_uint_eq(journal_cursor_seq(c), want);
	r = journal_cursor_next(c, &p, &len, &seq, &cause);
	ck_assert_msg(r == 1, "next for %" PRIu64 ": %d %s", want, r,
	    cause != NULL ? cause : "");
	ck_assert_uint_eq(seq, want);
	ck_assert_uint_eq(len, wlen);
	ck_assert_mem_eq(p, buf, len);
}

static void
expect_caught_up(struct journal_cursor *c)
{
	const uint8_t *p;
	size_t len;
	uint64_t seq;
	char *cause = NULL;
	int r;

	r = journal_cursor_next(c, &p, &len, &seq, &cause);
	ck_assert_msg(r == 0, "next: %d (seq %" PRIu64 ") %s", r,
	    r == 1 ? seq : 0, cause != NULL ? cause : "");
}

static void
expect_range(struct journal *j, uint64_t from, uint64_t to)
{
	struct journal_cursor *c = journal_cursor_open(j, from);
	uint64_t seq;

	for (seq = from; seq <= to; seq++)
		expect_record(c, seq);
	expect_caught_up(c);
	journal_cursor_close(c);
}

static char *
seg_path(const char *dir, uint64_t first)
{
	return xasprintf("%s/%020" PRIu64 ".seg", dir, first);
}

/* The segments on disk: how many, their bytes, the lowest and highest
 * first seq in their names. */
struct disk {
	size_t nsegs;
	uint64_t bytes;
	uint64_t lowest;
	uint64_t highest;
};

static struct disk
disk_scan(const char *dir)
{
	struct disk dk = {0, 0, UINT64_MAX, 0};
	DIR *d;
	struct dirent *de;
	struct stat st;
	char *path;
	uint64_t first;

	ck_assert_ptr_nonnull(d = opendir(dir));
	while ((de = readdir(d)) != NULL) {
		if (strlen(de->d_name) != 24 ||
		    strcmp(de->d_name + 20, ".seg") != 0)
			continue;
		first = strtoull(de->d_name, NULL, 10);
		path = xasprintf("%s/%s", dir, de->d_name);
		ck_assert_int_eq(stat(path, &st), 0);
		free(path);
		dk.nsegs++;
		dk.bytes += (uint64_t)st.st_size;
		if (first < dk.lowest)
			dk.lowest = first;
		if (first > dk.highest)
			dk.highest = first;
	}
	closedir(d);
	return dk;
}

/* The first seq of the second segment on disk. */
static uint64_t
disk_second(const char *dir)
{
	struct disk dk = disk_scan(dir);
	DIR *d;
	struct dirent *de;
	uint64_t first, second = UINT64_MAX;

	ck_assert_ptr_nonnull(d = opendir(dir));
	while ((de = readdir(d)) != NULL) {
		if (strlen(de->d_name) != 24)
			continue;
		first = strtoull(de->d_name, NULL, 10);
		if (first > dk.lowest && first < second)
			second = first;
	}
	closedir(d);
	ck_assert_uint_ne(second, UINT64_MAX);
	return second;
}

static uint32_t
crc32c_bitwise(uint32_t crc, const uint8_t *p, size_t len)
{
	int k;

	crc = ~crc;
	while (len-- > 0) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = crc & 1 ? (crc >> 1) ^ 0x82f63b78 : crc >> 1;
	}
	return ~crc;
}

static void
put_be(uint8_t *p, uint64_t v, int n)
{
	while (n-- > 0) {
		p[n] = (uint8_t)v;
		v >>= 8;
	}
}

/* A well-formed record, as the format defines it; returns its size. */
static size_t
record_bytes(uint8_t *out, uint64_t seq, const uint8_t *payload, size_t len)
{
	uint32_t crc;

	put_be(out, len, 4);
	put_be(out + 8, seq, 8);
	if (len > 0)
		memcpy(out + 16, payload, len);
	crc = crc32c_bitwise(0, out + 8, 8);
	crc = crc32c_bitwise(crc, payload, len);
	put_be(out + 4, crc, 4);
	return 16 + len;
}

static void
file_write_at(const char *path, uint64_t off, const void *buf, size_t len)
{
	int fd;

	ck_assert_int_ge(fd = open(path, O_WRONLY), 0);
	ck_assert_int_eq(pwrite(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

static uint8_t
file_byte(const char *path, uint64_t off)
{
	uint8_t b;
	int fd;

	ck_assert_int_ge(fd = open(path, O_RDONLY), 0);
	ck_assert_int_eq(pread(fd, &b, 1, (off_t)off), 1);
	close(fd);
	return b;
}

static uint64_t
file_size(const char *path)
{
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	return (uint64_t)st.st_size;
}

START_TEST(test_append_and_read)
{
	char *dir = scratch_make("test_journal");
	struct journal *j = jopen(dir, &test_opts, true);
	struct journal_cursor *c;

	ck_assert_uint_eq(journal_next_seq(j), 1);
	ck_assert_uint_eq(journal_first_seq(j), 1);
	append_range(j, 1, 100);
	ck_assert_uint_eq(journal_first_seq(j), 1);
	expect_range(j, 1, 100);
	expect_range(j, 57, 100);

	/* From beyond the end: nothing until the next append. */
	c = journal_cursor_open(j, 101);
	ck_assert_uint_eq(journal_cursor_seq(c), 101);
	expect_caught_up(c);
	expect_caught_up(c);
	append_one(j, 101);
	expect_record(c, 101);
	expect_caught_up(c);
	journal_cursor_close(c);

	/* Far beyond the end: the next append is still what it returns. */
	c = journal_cursor_open(j, 5000);
	expect_caught_up(c);
	append_one(j, 102);
	expect_record(c, 102);
	journal_cursor_close(c);

	journal_close(j);
	scratch_remove(dir);
}
END_TEST

START_TEST(test_empty_journal_cursor)
{
	char *dir = scratch_make("test_journal");
	struct journal *j = jopen(dir, &test_opts, true);
	struct journal_cursor *c = journal_cursor_open(j, 1);

	/* No segment exists yet: the cursor must find the first one. */
	expect_caught_up(c);
	append_range(j, 1, 3);
	expect_record(c, 1);
	expect_record(c, 2);
	expect_record(c, 3);
	expect_caught_up(c);
	journal_cursor_close(c);
	journal_close(j);
	scratch_remove(dir);
}
END_TEST

START_TEST(test_on_disk_format)
{
	char *dir = scratch_make("test_journal");
	struct journal *j = jopen(dir, &test_opts, true);
	char *path = seg_path(dir, 1), *cause = NULL;
	uint8_t want[64], got[64];
	size_t n;
	int fd;

	ck_assert_uint_eq(
	    crc32c_bitwise(0, (const uint8_t *)"123456789", 9), 0xe3069283);
	ck_assert_int_eq(journal_append(j, 1, "hello", 5, &cause), 0);
	ck_assert_int_eq(journal_append(j, 2, NULL, 0, &cause), 0);
	n = record_bytes(want, 1, (const uint8_t *)"hello", 5);
	n += record_bytes(want + n, 2, NULL, 0);
	ck_assert_uint_eq(file_size(path), n);
	ck_assert_int_ge(fd = open(path, O_RDONLY), 0);
	ck_assert_int_eq(read(fd, got, sizeof got), (ssize_t)n);
	close(fd);
	ck_assert_mem_eq(got, want, n);
	free(path);
	journal_close(j);
	scratch_remove(dir);
}
END_TEST

START_TEST(test_reopen_continues)
{
	char *dir = scratch_make("test_journal");
	struct journal_opts o = test_opts;
	struct journal *j;

	o.sync = true;
	j = jopen(dir, &o, true);
	append_range(j, 1, 20);
	journal_close(j);

	j = jopen(dir, &o, false);
	ck_assert_uint_eq(journal_next_seq(j), 21);
	ck_assert_uint_eq(journal_first_seq(j), 1);
	expect_range(j, 1, 20);
	append_range(j, 21, 25);
	expect_range(j, 1, 25);
	journal_close(j);

	/* Across many segments too. */
	j = jopen(dir, &small_opts, true);
	append_range(j, 1, 12);
	journal_close(j);
	ck_assert_uint_gt(disk_scan(dir).nsegs, 1);
	j = jopen(dir, &small_opts, false);
	ck_assert_uint_eq(journal_next_seq(j), 13);
	expect_range(j, 1, 12);
	journal_close(j);
	scratch_remove(dir);
}
END_TEST

START_TEST(test_fresh_starts_over)
{
	char *dir = scratch_make("test_journal");
	struct journal *j = jopen(dir, &small_opts, true);
	struct journal_cursor *c;

	append_range(j, 1, 30);
	journal_close(j);
	j = jopen(dir, &small_opts, true);
	ck_assert_uint_eq(journal_next_seq(j), 1);
	ck_assert_uint_eq(journal_first_seq(j), 1);
	ck_assert_uint_eq(disk_scan(dir).nsegs, 0);
	c = journal_cursor_open(j, 1);
	expect_caught_up(c);
	journal_cursor_close(c);
	append_range(j, 1, 2);
	expect_range(j, 1, 2);
	journal_close(j);
	scratch_remove(dir);
}
END_TEST

START_TEST(test_creates_dir)
{
	char *dir = scratch_make("test_journal"),
	     *sub = xasprintf("%s/state", dir);
	struct journal *j = jopen(sub, &test_opts, false);
	struct stat st;

	ck_assert_int_eq(stat(sub, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0700);
	append_range(j, 1, 1);
	journal_close(j);
	scratch_remove(sub);
	scratch_remove(dir);
}
END_TEST

START_TEST(test_open_error_names_dir)
{
	char *dir = scratch_make("test_journal"),
	     *file = xasprintf("%s/plain", dir);
	char *under = xasprintf("%s/sub", file), *cause = NULL;
	int fd;

	ck_assert_int_ge(fd = open(file, O_CREAT | O_WRONLY, 0600), 0);
	close(fd);
	ck_assert_ptr_null(journal_open(file, &test_opts, false, &cause));
	ck_assert_ptr_nonnull(strstr(cause, file));
	ck_assert_ptr_nonnull(strstr(cause, strerror(ENOTDIR)));
	free(cause);
	cause = NULL;
	ck_assert_ptr_null(journal_open(under, &test_opts, false, &cause));
	ck_assert_ptr_nonnull(strstr(cause, under));
	free(cause);
	free(under);
	free(file);
	scratch_remove(dir);
}
END_TEST

/* Reopens a damaged journal: records 1..intact must come back whole, the
 * damage must be gone for good, and appends must go on after intact. */
static void
expect_recovered(const char *dir, const struct journal_opts *o, uint64_t intact)
{
	uint8_t buf[TEST_MAX_PAYLOAD];
	struct journal *j = jopen(dir, o, false);
	uint64_t seq, bytes = 0;

	/* Cut on disk, not only skipped: nothing but whole records stays. */
	for (seq = 1; seq <= intact; seq++)
		bytes += 16 + payload_for(seq, buf);
	ck_assert_uint_eq(disk_scan(dir).bytes, bytes);
	ck_assert_uint_eq(journal_next_seq(j), intact + 1);
	expect_range(j, 1, intact);
	append_one(j, intact + 1);
	expect_range(j, 1, intact + 1);
	journal_close(j);

	j = jopen(dir, o, false);
	ck_assert_uint_eq(journal_next_seq(j), intact + 2);
	expect_range(j, 1, intact + 1);
	journal_close(j);
}

/* Writes records 1..n afresh; returns the last segment's path and where
 * record n starts and ends in it. */
static char *
torn_setup(const char *dir, const struct journal_opts *o, uint64_t n,
    uint64_t *start, uint64_t *end)
{
	uint8_t buf[TEST_MAX_PAYLOAD];
	struct journal *j = jopen(dir, o, true);
	char *path;

	append_range(j, 1, n);
	journal_close(j);
	path = seg_path(dir, disk_scan(dir).highest);
	*end = file_size(path);
	*start = *end - 16 - payload_for(n, buf);
	return path;
}

static void
torn_cut_and_flip(const struct journal_opts *o)
{
	char *dir = scratch_make("test_journal"), *path;
	const uint64_t n = 5;
	uint64_t start, end, off;
	uint8_t b;

	for (off = 0;; off++) {
		path = torn_setup(dir, o, n, &start, &end);
		if (start + off >= end) {
			free(path);
			break;
		}
		ck_assert_int_eq(truncate(path, (off_t)(start + off)), 0);
		expect_recovered(dir, o, n - 1);
		free(path);
	}
	ck_assert_uint_gt(off, 16);

	/* Every byte of the last record: its length, CRC, seq, payload. */
	for (off = 0;; off++) {
		path = torn_setup(dir, o, n, &start, &end);
		if (start + off >= end) {
			free(path);
			break;
		}
		b = file_byte(path, start + off) ^ 0x01;
		file_write_at(path, start + off, &b, 1);
		expect_recovered(dir, o, n - 1);
		free(path);
	}
	scratch_remove(dir);
}

START_TEST(test_torn_tail_one_segment)
{
	torn_cut_and_flip(&test_opts);
}
END_TEST

START_TEST(test_torn_tail_own_segment)
{
	struct journal_opts o = test_opts;

	/* Every record in its own segment: the torn one empties its file. */
	o.segment_bytes = 1;
	torn_cut_and_flip(&o);
}
END_TEST

START_TEST(test_torn_tail_garbage)
{
	char *dir = scratch_make("test_journal"), *path;
	uint8_t junk[256], buf[TEST_MAX_PAYLOAD];
	const uint64_t n = 7;
	uint64_t start, end;
	size_t len, i, k;

	for (k = 0; k < 5; k++) {
		path = torn_setup(dir, &test_opts, n, &start, &end);
		switch (k) {
		case 0: /* a partial header */
			memset(junk, 0x5a, 7);
			len = 7;
			break;
		case 1: /* a length past any limit */
			memset(junk, 0xff, 16);
			len = 16;
			break;
		case 2: /* noise longer than a header */
			for (i = 0; i < 200; i++)
				junk[i] = (uint8_t)(i * 37 + 11);
			len = 200;
			break;
		case 3: /* a well-formed record with a seq out of order */
			len = record_bytes(
			    junk, n + 3, buf, payload_for(n + 3, buf));
			break;
		default: /* the last record again */
			len = record_bytes(junk, n, buf, payload_for(n, buf));
			break;
		}
		file_write_at(path, end, junk, len);
		expect_recovered(dir, &test_opts, n);
		free(path);
	}
	scratch_remove(dir);
}
END_TEST

START_TEST(test_torn_middle_segment)
{
	char *dir = scratch_make("test_journal"), *path;
	uint8_t buf[TEST_MAX_PAYLOAD];
	struct journal_opts o = small_opts;
	struct journal *j;
	struct journal_cursor *c;
	const uint8_t *p;
	size_t len;
	uint64_t lost, seq, got;
	char *cause = NULL;

	o.max_bytes = 1 << 20;
	j = jopen(dir, &o, true);
	append_range(j, 1, 40);
	journal_close(j);
	ck_assert_uint_gt(disk_scan(dir).nsegs, 2);

	/* Without sync a crash can tear any segment: cut the first one's
	 * last record, and the segments after it must stay. */
	lost = disk_second(dir) - 1;
	ck_assert_uint_gt(lost, 1);
	path = seg_path(dir, 1);
	ck_assert_int_eq(
	    truncate(
	        path, (off_t)(file_size(path) - 16 - payload_for(lost, buf))),
	    0);
	free(path);

	j = jopen(dir, &o, false);
	ck_assert_uint_eq(journal_next_seq(j), 41);
	ck_assert_uint_eq(journal_first_seq(j), 1);
	c = journal_cursor_open(j, 1);
	for (seq = 1; seq < lost; seq++)
		expect_record(c, seq);
	/* The hole shows as a seq past the one the cursor said was due. */
	ck_assert_uint_eq(journal_cursor_seq(c), lost);
	ck_assert_int_eq(journal_cursor_next(c, &p, &len, &got, &cause), 1);
	ck_assert_uint_eq(got, lost + 1);
	for (seq = lost + 2; seq <= 40; seq++)
		expect_record(c, seq);
	expect_caught_up(c);
	journal_cursor_close(c);

	/* A reader asking for the lost seq learns where the log goes on. */
	c = journal_cursor_open(j, lost);
	ck_assert_uint_eq(journal_cursor_seq(c), lost + 1);
	expect_record(c, lost + 1);
	journal_cursor_close(c);
	journal_close(j);
	scratch_remove(dir);
}
END_TEST

START_TEST(test_empty_segments_keep_seq)
{
	char *dir = scratch_make("test_journal"), *path;
	struct journal *j;
	int fd;

	path = seg_path(dir, 42);
	ck_assert_int_ge(fd = open(path, O_CREAT | O_WRONLY, 0600), 0);
	close(fd);
	j = jopen(dir, &test_opts, false);
	/* Seq 41 may have been sent before the crash: never reuse it. */
	ck_assert_uint_eq(journal_next_seq(j), 42);
	ck_assert_uint_eq(journal_first_seq(j), 42);
	ck_assert_int_ne(access(path, F_OK), 0);
	append_one(j, 42);
	expect_range(j, 42, 42);
	journal_close(j);
	free(path);

	/* Behind intact records too: the highest name wins. */
	j = jopen(dir, &test_opts, true);
	append_range(j, 1, 3);
	journal_close(j);
	path = seg_path(dir, 9);
	ck_assert_int_ge(fd = open(path, O_CREAT | O_WRONLY, 0600), 0);
	close(fd);
	free(path);
	j = jopen(dir, &test_opts, false);
	ck_assert_uint_eq(journal_next_seq(j), 9);
	ck_assert_uint_eq(disk_scan(dir).nsegs, 1);
	journal_close(j);
	scratch_remove(dir);
}
END_TEST

START_TEST(test_overlapping_segment_dropped)
{
	char *dir = scratch_make("test_journal"), *path;
	uint8_t rec[16 + TEST_MAX_PAYLOAD], buf[TEST_MAX_PAYLOAD];
	struct journal *j = jopen(dir, &test_opts, true);
	size_t len;
	int fd;

	append_range(j, 1, 3);
	journal_close(j);
	/* A whole, well-formed segment whose seqs are already held: reading
	 * it would take a reader backwards. */
	path = seg_path(dir, 2);
	len = record_bytes(rec, 2, buf, payload_for(2, buf));
	ck_assert_int_ge(fd = open(path, O_CREAT | O_WRONLY, 0600), 0);
	ck_assert_int_eq(write(fd, rec, len), (ssize_t)len);
	close(fd);

	j = jopen(dir, &test_opts, false);
	ck_assert_int_ne(access(path, F_OK), 0);
	ck_assert_uint_eq(journal_next_seq(j), 4);
	expect_range(j, 1, 3);
	journal_close(j);
	free(path);
	scratch_remove(dir);
}
END_TEST

START_TEST(test_rotation)
{
	char *dir = scratch_make("test_journal"), *path;
	struct journal *j = jopen(dir, &small_opts, true);
	struct journal_cursor *c;
	struct disk dk;
	uint64_t seq, first;

	for (seq = 1; seq <= 500; seq++) {
		append_one(j, seq);
		dk = disk_scan(dir);
		ck_assert_uint_le(
		    dk.bytes, small_opts.max_bytes + small_opts.segment_bytes);
		ck_assert_uint_eq(dk.lowest, journal_first_seq(j));
	}
	first = journal_first_seq(j);
	ck_assert_uint_gt(first, 1);
	ck_assert_uint_gt(disk_scan(dir).nsegs, 1);
	path = seg_path(dir, 1);
	ck_assert_int_ne(access(path, F_OK), 0);
	free(path);

	/* A reader asking for what is gone starts at the oldest left. */
	c = journal_cursor_open(j, 1);
	ck_assert_uint_eq(journal_cursor_seq(c), first);
	for (seq = first; seq <= 500; seq++)
		expect_record(c, seq);
	expect_caught_up(c);
	journal_cursor_close(c);
	journal_close(j);

	j = jopen(dir, &small_opts, false);
	ck_assert_uint_eq(journal_first_seq(j), first);
	ck_assert_uint_eq(journal_next_seq(j), 501);
	expect_range(j, first, 500);
	journal_close(j);
	scratch_remove(dir);
}
END_TEST

START_TEST(test_cursor_outrun_by_rotation)
{
	char *dir = scratch_make("test_journal");
	struct journal *j = jopen(dir, &small_opts, true);
	struct journal_cursor *c;
	const uint8_t *p;
	uint8_t buf[TEST_MAX_PAYLOAD];
	size_t len;
	uint64_t seq, prev, due;
	char *cause = NULL;
	int jumps = 0;

	append_range(j, 1, 3);
	c = journal_cursor_open(j, 1);
	expect_record(c, 1);
	expect_record(c, 2);
	append_range(j, 4, 500);
	ck_assert_uint_gt(journal_first_seq(j), 10);

	/* The rest of its deleted segment still reads through its fd. */
	expect_record(c, 3);
	expect_record(c, 4);
	prev = 4;
	for (;;) {
		due = journal_cursor_seq(c);
		ck_assert_uint_eq(due, prev + 1);
		if (journal_cursor_next(c, &p, &len, &seq, &cause) != 1)
			break;
		ck_assert_uint_ge(seq, due);
		if (seq != due) {
			jumps++;
			ck_assert_uint_eq(seq, journal_first_seq(j));
		}
		ck_assert_uint_eq(len, payload_for(seq, buf));
		ck_assert_mem_eq(p, buf, len);
		prev = seq;
	}
	ck_assert_ptr_null(cause);
	ck_assert_int_eq(jumps, 1);
	ck_assert_uint_eq(prev, 500);
	journal_cursor_close(c);
	journal_close(j);
	scratch_remove(dir);
}
END_TEST

START_TEST(test_wrong_seq)
{
	char *dir = scratch_make("test_journal"), *cause = NULL;
	struct journal *j = jopen(dir, &test_opts, true);

	ck_assert_int_eq(journal_append(j, 2, "x", 1, &cause), -1);
	ck_assert_ptr_nonnull(cause);
	free(cause);
	cause = NULL;
	append_one(j, 1);
	ck_assert_int_eq(journal_append(j, 1, "x", 1, &cause), -1);
	free(cause);
	cause = NULL;
	ck_assert_int_eq(journal_append(j, 3, "x", 1, &cause), -1);
	free(cause);
	ck_assert_uint_eq(journal_next_seq(j), 2);
	append_one(j, 2);
	expect_range(j, 1, 2);
	journal_close(j);
	scratch_remove(dir);
}
END_TEST

START_TEST(test_oversized_record)
{
	char *dir = scratch_make("test_journal"), *cause = NULL, *path;
	struct journal *j = jopen(dir, &small_opts, true);
	uint8_t big[TEST_MAX_PAYLOAD + 1];
	uint64_t size;

	memset(big, 'b', sizeof big);
	append_one(j, 1);
	path = seg_path(dir, 1);
	size = file_size(path);
	ck_assert_int_eq(journal_append(j, 2, big, sizeof big, &cause), -1);
	ck_assert_ptr_nonnull(strstr(cause, "65"));
	free(cause);
	cause = NULL;
	ck_assert_uint_eq(journal_next_seq(j), 2);
	ck_assert_uint_eq(file_size(path), size);
	/* The limit itself is accepted. */
	ck_assert_int_eq(journal_append(j, 2, big, sizeof big - 1, &cause), 0);
	append_one(j, 3);
	journal_close(j);

	j = jopen(dir, &small_opts, false);
	ck_assert_uint_eq(journal_next_seq(j), 4);
	expect_range(j, 3, 3);
	journal_close(j);
	free(path);
	scratch_remove(dir);
}
END_TEST

START_TEST(test_cursor_open_failure_retried)
{
	char *dir = scratch_make("test_journal"), *cause = NULL;
	struct journal *j = jopen(dir, &test_opts, true);
	struct journal_cursor *c;
	struct rlimit old, low;
	const uint8_t *p;
	size_t len, n = 0;
	uint64_t seq;
	int fds[512], fd;

	append_range(j, 1, 3);
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 256;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	while (n < 512 && (fd = dup(0)) != -1)
		fds[n++] = fd;
	ck_assert_int_eq(errno, EMFILE);

	/* Out of fds: the cursor still exists, and says what failed. */
	c = journal_cursor_open(j, 2);
	ck_assert_uint_eq(journal_cursor_seq(c), 2);
	ck_assert_int_eq(journal_cursor_next(c, &p, &len, &seq, &cause), -1);
	ck_assert_ptr_nonnull(strstr(cause, "00000000000000000001.seg"));
	ck_assert_ptr_nonnull(strstr(cause, strerror(EMFILE)));
	free(cause);

	while (n > 0)
		close(fds[--n]);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
	expect_record(c, 2);
	expect_record(c, 3);
	expect_caught_up(c);
	journal_cursor_close(c);
	journal_close(j);
	scratch_remove(dir);
}
END_TEST

static Suite *
journal_suite(void)
{
	Suite *s = suite_create("journal");
	TCase *tc = tcase_create("journal");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_append_and_read);
	tcase_add_test(tc, test_empty_journal_cursor);
	tcase_add_test(tc, test_on_disk_format);
	tcase_add_test(tc, test_reopen_continues);
	tcase_add_test(tc, test_fresh_starts_over);
	tcase_add_test(tc, test_creates_dir);
	tcase_add_test(tc, test_open_error_names_dir);
	tcase_add_test(tc, test_torn_tail_one_segment);
	tcase_add_test(tc, test_torn_tail_own_segment);
	tcase_add_test(tc, test_torn_tail_garbage);
	tcase_add_test(tc, test_torn_middle_segment);
	tcase_add_test(tc, test_empty_segments_keep_seq);
	tcase_add_test(tc, test_overlapping_segment_dropped);
	tcase_add_test(tc, test_rotation);
	tcase_add_test(tc, test_cursor_outrun_by_rotation);
	tcase_add_test(tc, test_cursor_open_failure_retried);
	tcase_add_test(tc, test_wrong_seq);
	tcase_add_test(tc, test_oversized_record);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return tap_run(journal_suite());
}
