/*
 * batch.c
 *	  reserve_many(): independent reservations in one call and one
 *	  transaction -- a gateway that gathers a millisecond of buyers, or the
 *	  consumer of a queue -- committed together, so they share one WAL
 *	  flush.
 *
 * Each element has exactly the outcome a reserve() of its own would have
 * had at its place in the array: the elements are reserved in array order,
 * and an element sees those before it (two of one buyer count together;
 * the same key twice is a duplicate).  The locks that can make a call
 * wait -- the keys', then the buyers' -- are taken first, each kind in one
 * fixed order (bytes of the key; bytes of the SKU, then of the buyer), as
 * reserve() and reserve_cart() take them one kind after the other, so two
 * batches never deadlock with each other or with those calls.  Each element
 * is admitted under the rules committed when its turn comes.
 */
#include "postgres.h"

#include "access/xact.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "api/args.h"
#include "enforce/rules.h"
#include "movement/movement.h"
#include "movement/outcome.h"
#include "tables/ledger_row.h"

/* An element whose lock is to be taken: (first, second) in byte order. */
typedef struct LockOrder
{
	text	   *first;
	text	   *second;			/* NULL for a key's lock */
} LockOrder;

static int
CompareLockOrder(const void *a, const void *b)
{
	const LockOrder *x = a;
	const LockOrder *y = b;
	int			c = LedgerCompareText(x->first, y->first);

	if (c != 0 || x->second == NULL)
		return c;
	return LedgerCompareText(x->second, y->second);
}

/*
 * The keys' locks, then the buyers', in byte order.  Every element with a
 * buyer takes its buyer's lock, limited SKU or not: a limit set while the
 * batch waits would otherwise make it take one later, out of order.
 */
static void
LockInOrder(text **skus, text **order_ids, text **buyer_ids, int n)
{
	LockOrder  *order = palloc(n * sizeof(LockOrder));
	int			nbuyers = 0;

	for (int i = 0; i < n; i++)
	{
		order[i].first = order_ids[i];
		order[i].second = NULL;
	}
	qsort(order, n, sizeof(LockOrder), CompareLockOrder);
	for (int i = 0; i < n; i++)
		MovementLockKey(order[i].first, 1);

	for (int i = 0; i < n && buyer_ids != NULL; i++)
	{
		if (buyer_ids[i] == NULL)
			continue;
		order[nbuyers].first = skus[i];
		order[nbuyers].second = buyer_ids[i];
		nbuyers++;
	}
	qsort(order, nbuyers, sizeof(LockOrder), CompareLockOrder);
	for (int i = 0; i < nbuyers; i++)
		RulesLockBuyer(order[i].first, order[i].second);
	pfree(order);
}

PG_FUNCTION_INFO_V1(inventory_reserve_many);
Datum
inventory_reserve_many(PG_FUNCTION_ARGS)
{
	text	  **skus;
	int64	   *qtys;
	text	  **order_ids;
	text	  **buyer_ids;
	int			n = ArgTextArray(fcinfo, 0, "skus", LedgerCheckSku, false, &skus);
	int			nqtys = ArgQuantityArray(fcinfo, 1, "qtys", &qtys);
	int			norders = ArgTextArray(fcinfo, 2, "order_ids", LedgerCheckOrderId,
									   false, &order_ids);
	TimestampTz expires_at = ArgExpiresAt(fcinfo, 3, GetCurrentStatementStartTimestamp());
	int			nbuyers = ArgTextArray(fcinfo, 4, "buyer_ids", LedgerCheckBuyerId,
									   true, &buyer_ids);
	LedgerWriter writer;
	OutcomeSet	set;

	ArgCheckWritable("inventory.reserve_many()");
	if (nqtys != n || norders != n || (nbuyers >= 0 && nbuyers != n))
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("skus, qtys, order_ids and buyer_ids must have the same number of elements"),
				 nbuyers >= 0 ?
				 errdetail_plural("skus has %d element, qtys %d, order_ids %d and buyer_ids %d.",
								  "skus has %d elements, qtys %d, order_ids %d and buyer_ids %d.",
								  n, n, nqtys, norders, nbuyers) :
				 errdetail_plural("skus has %d element, qtys %d and order_ids %d.",
								  "skus has %d elements, qtys %d and order_ids %d.",
								  n, n, nqtys, norders)));

	OutcomeSetInit(&set, INV_CALL_RESERVE_MANY, fcinfo);
	if (n == 0)
		return (Datum) 0;

	LockInOrder(skus, order_ids, buyer_ids, n);
	/* the ledger and its indexes opened once for the batch's rows */
	LedgerWriterInit(&writer);
	for (int i = 0; i < n; i++)
	{
		Outcome		o;

		CHECK_FOR_INTERRUPTS();
		MovementReserve(skus[i], qtys[i], order_ids[i], 1, expires_at, NULL,
				   buyer_ids ? buyer_ids[i] : NULL, &writer, &o);
		OutcomePut(&set, &o);
	}
	LedgerWriterClose(&writer);
	OutcomeSetDone(&set);
	return (Datum) 0;
}
