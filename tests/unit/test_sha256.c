/* test_sha256: unit tests of the SHA-256 digest (sha256.c) — the FIPS
 * 180-4 / NIST example vectors, and digests that must not depend on how
 * the input is cut into sha256_update calls. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sha256.h"
#include "tap.h"

static void
digest_hex(const void *data, size_t len, char *out)
{
	struct sha256 s;
	uint8_t d[SHA256_LEN];

	sha256_init(&s);
	sha256_update(&s, data, len);
	sha256_final(&s, d);
	sha256_hex(d, out);
}

static void
expect_digest(const char *msg, const char *want)
{
	char got[SHA256_HEX];

	digest_hex(msg, strlen(msg), got);
	ck_assert_str_eq(got, want);
}

START_TEST(test_empty)
{
	expect_digest("",
	    "e3b0c44298fc1c149afbf4c8996fb924"
	    "27ae41e4649b934ca495991b7852b855");
}
END_TEST

START_TEST(test_abc)
{
	expect_digest("abc",
	    "ba7816bf8f01cfea414140de5dae2223"
	    "b00361a396177a9cb410ff61f20015ad");
}
END_TEST

START_TEST(test_448_bits)
{
	expect_digest(
	    "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
	    "248d6a61d20638b8e5c026930c3e6039"
	    "a33ce45964ff2167f6ecedd419db06c1");
}
END_TEST

START_TEST(test_896_bits)
{
	expect_digest(
	    "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
	    "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
	    "cf5b16a778af8380036ce59e7b049237"
	    "0b249b11e8f07a51afac45037afee9d1");
}
END_TEST

/* One million 'a', fed 1000 at a time as the NIST example describes. */
START_TEST(test_million_a)
{
	struct sha256 s;
	uint8_t d[SHA256_LEN];
	char block[1000], got[SHA256_HEX];
	int i;

	memset(block, 'a', sizeof block);
	sha256_init(&s);
	for (i = 0; i < 1000; i++)
		sha256_update(&s, block, sizeof block);
	sha256_final(&s, d);
	sha256_hex(d, got);
	ck_assert_str_eq(got,
	    "cdc76e5c9914fb9281a1c7e284d73e67"
	    "f1809a48a497200e046d39ccc7112cd0");
}
END_TEST

/* Lengths around the padding boundaries: 55 bytes still fit the length in
 * the last block, 56 need one more block; the digests come from an
 * independent implementation (coreutils sha256sum). */
START_TEST(test_padding_edges)
{
	static const struct {
		size_t len;
		const char *want;
	} cases[] = {
	    {55,
	        "9f4390f8d30c2dd92ec9f095b65e2b9a"
	        "e9b0a925a5258e241c9f1e910f734318"},
	    {56,
	        "b35439a4ac6f0948b6d6f9e3c6af0f5f"
	        "590ce20f1bde7090ef7970686ec6738a"},
	    {63,
	        "7d3e74a05d7db15bce4ad9ec0658ea98"
	        "e3f06eeecf16b4c6fff2da457ddc2f34"},
	    {64,
	        "ffe054fe7ae0cb6dc65c3af9b61d5209"
	        "f439851db43d0ba5997337df154668eb"},
	    {65,
	        "635361c48bb9eab14198e76ea8ab7f1a"
	        "41685d6ad62aa9146d301d4f17eb0ae0"},
	};
	char msg[65], got[SHA256_HEX];
	size_t i;

	memset(msg, 'a', sizeof msg);
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		digest_hex(msg, cases[i].len, got);
		ck_assert_msg(strcmp(got, cases[i].want) == 0,
		    "%zu 'a': got %s, want %s", cases[i].len, got,
		    cases[i].want);
	}
}
END_TEST

/* Random inputs of every length up to 300 bytes and a few large ones,
 * each cut at random places: every cutting gives the one-shot digest. */
START_TEST(test_chunking)
{
	static const size_t big[] = {1000, 4096, 65536 + 17, 1 << 20};
	uint8_t *data, d[SHA256_LEN];
	char one[SHA256_HEX], cut[SHA256_HEX];
	struct sha256 s;
	size_t len, pos, n, k, trial;
	unsigned seed = 12345;

	data = malloc(1 << 20);
	ck_assert_ptr_nonnull(data);
	for (pos = 0; pos < 1 << 20; pos++)
		data[pos] = (uint8_t)rand_r(&seed);
	for (trial = 0; trial < 301 + sizeof big / sizeof big[0]; trial++) {
		len = trial <= 300 ? trial : big[trial - 301];
		digest_hex(data, len, one);
		for (k = 0; k < 8; k++) {
			sha256_init(&s);
			for (pos = 0; pos < len; pos += n) {
				n = (size_t)rand_r(&seed) % (k < 4 ? 70 : 5000);
				if (n > len - pos)
					n = len - pos;
				sha256_update(&s, data + pos, n);
			}
			sha256_final(&s, d);
			sha256_hex(d, cut);
			ck_assert_msg(strcmp(one, cut) == 0,
			    "%zu bytes, cutting %zu: %s != %s", len, k, cut,
			    one);
		}
	}
	free(data);
}
END_TEST

START_TEST(test_hex)
{
	uint8_t d[SHA256_LEN];
	char out[SHA256_HEX + 1];
	int i;

	for (i = 0; i < SHA256_LEN; i++)
		d[i] = (uint8_t)(i * 8 + (i & 1 ? 0xf0 : 0x0f));
	memset(out, 'X', sizeof out);
	sha256_hex(d, out);
	ck_assert_uint_eq(strlen(out), 64);
	ck_assert_str_eq(out,
	    "0ff81f082f183f284f385f486f587f68"
	    "8f789f88af98bfa8cfb8dfc8efd8ffe8");
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("sha256");
	TCase *tc = tcase_create("sha256");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_abc);
	tcase_add_test(tc, test_448_bits);
	tcase_add_test(tc, test_896_bits);
	tcase_add_test(tc, test_million_a);
	tcase_add_test(tc, test_padding_edges);
	tcase_add_test(tc, test_chunking);
	tcase_add_test(tc, test_hex);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
