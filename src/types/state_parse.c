/*
 * state_parse.c
 *	  Reading a state name: case-insensitive, surrounding white space
 *	  ignored.  Returns the state's code, or 0 for anything else.
 */
#include "types/state_parse.h"

const char *const inv_state_names[INV_STATE_LAST + 1] = {
	[0] = NULL,
	[1] = "PENDING",
	[2] = "CONFIRMED",
	[3] = "CANCELLED",
	[4] = "EXPIRED",
};

/* the white space of SQL (scanner_isspace) */
static int
is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static unsigned char
to_upper(unsigned char c)
{
	return (c >= 'a' && c <= 'z') ? (unsigned char) (c - 'a' + 'A') : c;
}

int
inv_state_parse(const char *str, size_t len)
{
	const unsigned char *start = (const unsigned char *) str;
	const unsigned char *end = start + len;

	while (start < end && is_space(*start))
		start++;
	while (end > start && is_space(end[-1]))
		end--;

	for (int s = INV_STATE_FIRST; s <= INV_STATE_LAST; s++)
	{
		const char *name = inv_state_names[s];
		size_t		n = 0;

		while (name[n] != '\0')
			n++;
		if ((size_t) (end - start) != n)
			continue;
		for (size_t i = 0; i < n; i++)
		{
			if (to_upper(start[i]) != (unsigned char) name[i])
				goto next;
		}
		return s;
next:	;
	}
	return 0;
}
