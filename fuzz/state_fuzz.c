/*
 * fuzz/state_fuzz.c -- libFuzzer target for the state name parser
 *	  (src/types/state_parse.c), the input function of inventory.state.
 *
 * Every input is given to inv_state_parse() and checked against a reference
 * implementation written here from the definition in docs/api.md, independently
 * of the parser's code:
 *
 *	 1. the results agree: 1..4 for PENDING, CONFIRMED, CANCELLED, EXPIRED
 *		compared case-insensitively (ASCII) once the white space of SQL
 *		(' ' \t \n \r \f \v) is trimmed from both ends, 0 for anything else;
 *	 2. the result is always in 0..INV_STATE_LAST;
 *	 3. a non-zero result round-trips: parsing inv_state_names[result]
 *		gives the same code, and that name is the reference's name in upper
 *		case (what the output function prints);
 *	 4. the parser reads only the len bytes it is given: the same bytes
 *		followed by other bytes, with only len passed, give the same result.
 *
 * A disagreement prints the input and the two answers and calls abort(), so
 * libFuzzer reports it and saves the input.  The input buffer libFuzzer
 * passes is exactly `size` bytes long and not NUL-terminated, so
 * AddressSanitizer also catches any read past the end.
 *
 * Build and run: fuzz/run.sh [SECONDS].
 *
 * How the harness was checked to catch bugs: each change below was made to
 * a *copy* of src/types/state_parse.c in a temporary directory (sed on the copy),
 * the target built against the copy with the flags of run.sh
 * (clang-14 -g -O1 -fsanitize=fuzzer,address,undefined -I src
 * fuzz/state_fuzz.c COPY.c) and run as run.sh runs it; the copies were then
 * deleted.  With the seed corpus and fuzz/state.dict every one was found in
 * under a second:
 *	 - '\v' dropped from is_space(): "\f\v\rPending\r\v\f" (reference 1,
 *	   parser 0);
 *	 - the length check `!= n` made `< n` (a prefix match): "EXPIREDX"
 *	   (reference 0, parser 4);
 *	 - to_upper() made `c & 0x5f` (also folds bytes >= 0x80):
 *	   "CON\xc6IRMED" (reference 0, parser 2);
 *	 - the trailing trim reading end[0] instead of end[-1]: AddressSanitizer
 *	   heap-buffer-overflow in inv_state_parse.
 * The first three were also found from an empty corpus with the dictionary
 * alone (in 0.6 to 2.4 s: "\vPENDING", "pending\xfd", "expi\xf2ed"), but
 * not in 30-60 s with neither seeds nor dictionary, even with
 * -use_value_profile=1 (libFuzzer does not guess a whole 7-9 letter name
 * compared byte by byte): keep the dictionary.  (A first try at the third,
 * `c & ~0x20`, was not found in 60 s, rightly: a byte then matches an
 * upper-case letter of a name exactly when it does with to_upper(), so it
 * is no bug.)
 * src/types/state_parse.c itself was never modified.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "types/state_parse.h"

/* the reference: names in lower case, written out again here on purpose */
static const char *const ref_names[] = {
	NULL, "pending", "confirmed", "cancelled", "expired",
};
#define REF_LAST 4

static int
ref_space(unsigned char c)
{
	return memchr(" \t\n\r\f\v", c, 6) != NULL;
}

static unsigned char
ref_lower(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') ? (unsigned char) (c + ('a' - 'A')) : c;
}

static int
ref_parse(const uint8_t *data, size_t size)
{
	size_t		lo = 0,
				hi = size;

	while (lo < hi && ref_space(data[lo]))
		lo++;
	while (hi > lo && ref_space(data[hi - 1]))
		hi--;

	for (int s = 1; s <= REF_LAST; s++)
	{
		const char *name = ref_names[s];
		size_t		n = strlen(name);
		size_t		i;

		if (hi - lo != n)
			continue;
		for (i = 0; i < n; i++)
			if (ref_lower(data[lo + i]) != (unsigned char) name[i])
				break;
		if (i == n)
			return s;
	}
	return 0;
}

static void
fail(const char *what, const uint8_t *data, size_t size, int got, int want)
{
	fprintf(stderr, "state_fuzz: %s: parser %d, expected %d, input (%zu bytes):",
			what, got, want, size);
	for (size_t i = 0; i < size; i++)
		fprintf(stderr, " %02x", data[i]);
	fprintf(stderr, "\n");
	abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int			got = inv_state_parse((const char *) data, size);
	int			want = ref_parse(data, size);

	/* 1 and 2: agreement with the reference, and the range */
	if (got < 0 || got > INV_STATE_LAST)
		fail("result out of range", data, size, got, want);
	if (got != want)
		fail("parser and reference disagree", data, size, got, want);

	/* 3: a state's name round-trips, and is the upper-case name */
	if (got != 0)
	{
		const char *name = inv_state_names[got];
		size_t		n;
		int			again;

		if (name == NULL)
			fail("no name for the result", data, size, got, want);
		n = strlen(name);
		again = inv_state_parse(name, n);
		if (again != got)
			fail("name does not round-trip", (const uint8_t *) name, n, again, got);
		if (n != strlen(ref_names[got]))
			fail("name differs from the reference", (const uint8_t *) name, n, got, want);
		for (size_t i = 0; i < n; i++)
			if (name[i] != ref_names[got][i] - ('a' - 'A'))
				fail("name differs from the reference", (const uint8_t *) name, n, got, want);
	}

	/* 4: only the first size bytes count (append a letter and a space) */
	{
		uint8_t    *longer = malloc(size + 2);

		if (longer == NULL)
			return 0;
		if (size > 0)
			memcpy(longer, data, size);
		longer[size] = 'D';
		longer[size + 1] = ' ';
		got = inv_state_parse((const char *) longer, size);
		free(longer);
		if (got != want)
			fail("parser read past the length", data, size, got, want);
	}
	return 0;
}
