/*
 * state.h
 *	  The reservation state type: PENDING, CONFIRMED, CANCELLED, EXPIRED.
 */
#ifndef INVENTORY_STATE_H
#define INVENTORY_STATE_H

#include "postgres.h"

/*
 * On disk a state is one byte.  The codes order the states by their place in
 * the lifecycle, which is also the sort order of the btree operator class.
 */
typedef enum InvState
{
	INV_PENDING = 1,
	INV_CONFIRMED = 2,
	INV_CANCELLED = 3,
	INV_EXPIRED = 4
} InvState;

#define DatumGetInvState(d)		((InvState) DatumGetChar(d))
#define InvStateGetDatum(s)		CharGetDatum((char) (s))

extern const char *InvStateName(InvState state);
extern bool InvStateIsFinal(InvState state);
extern bool InvStateCanTransition(InvState from, InvState to);

#endif							/* INVENTORY_STATE_H */
