/*
 * verify.h
 *	  Compares the cache with the tables: for inventory.verify() and the
 *	  worker's background verify.  See verify.c.
 */
#ifndef INVENTORY_VERIFY_H
#define INVENTORY_VERIFY_H

#include "postgres.h"

#include "access/tupdesc.h"
#include "nodes/pg_list.h"
#include "utils/tuplestore.h"

/* Where the differences go: rows of ts, when it is set, and a count. */
typedef struct VerifyOut
{
	Tuplestorestate *ts;		/* NULL: only count */
	TupleDesc	desc;
	int64		differences;
} VerifyOut;

extern int64 VerifyRun(VerifyOut *out, int64 *skipped, List **busy_skus);

#endif							/* INVENTORY_VERIFY_H */
