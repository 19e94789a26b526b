/*
 * state_parse.h
 *	  The names of the reservation states, and reading them.  Plain C with no
 *	  PostgreSQL dependency, so that the fuzzer can build it alone.
 */
#ifndef INVENTORY_STATE_PARSE_H
#define INVENTORY_STATE_PARSE_H

#include <stddef.h>

#define INV_STATE_FIRST 1
#define INV_STATE_LAST	4

/* indexed by state code; entry 0 is unused */
extern const char *const inv_state_names[INV_STATE_LAST + 1];

extern int	inv_state_parse(const char *str, size_t len);

#endif							/* INVENTORY_STATE_PARSE_H */
