/*
 * cart.c
 *	  Calls on whole orders: reserve_cart(), confirm_order(), cancel_order().
 *
 * A cart is reserved whole or not at all, in one call.  Its lines' demand
 * is summed per SKU before anything is asked, so two lines of one SKU, and
 * a buyer's limit, are checked on the sum.  The SKUs are taken in one fixed
 * order (their bytes, as COLLATE "C" sorts them): holds in shared memory
 * never wait, and of the locks that can, the keys of the lines come first
 * (in line order, all of one order_id), then the buyer's, one per SKU in
 * that order, so two carts that share SKUs never deadlock.
 * Line i of a cart is the movement (order_id, i), or (order_id,
 * batch_ids[i]) when the caller numbers the lines: a router reserving on
 * each node its part of a cart that spans nodes keeps the cart's numbers.
 *
 * When any SKU cannot serve its demand, the cart is refused: the holds
 * taken are given back and nothing is written; the lines of that SKU carry
 * its own status, the others cart_refused.
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/int.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "api/args.h"
#include "enforce/rules.h"
#include "movement/movement.h"
#include "movement/outcome.h"
#include "shmem/cache.h"
#include "shmem/escrow.h"
#include "tables/ledger_row.h"
#include "tables/ledger_table.h"
#include "xact/pending.h"

/* The demand of a cart for one SKU. */
typedef struct CartSku
{
	text	   *sku;
	InvKey		key;
	int64		demand;
	bool		held;			/* a hold of demand units was taken */
	bool		buyer_locked;	/* this call took the buyer's lock */
	bool		refused;		/* it cannot be served: */
	InvStatus	status;			/* why */
	InvView		view;
} CartSku;

/* Orders line numbers by their SKUs (arg), then by number. */
static int
CompareLines(const void *a, const void *b, void *arg)
{
	text	  **skus = arg;
	int			ia = *(const int *) a;
	int			ib = *(const int *) b;
	int			c = LedgerCompareText(skus[ia], skus[ib]);

	return c != 0 ? c : (ia > ib) - (ia < ib);
}

/*
 * Groups the lines by SKU, in byte order.  Returns the number of SKUs;
 * group[i] is line i's SKU.
 */
static int
GroupLines(text **skus, int64 *qtys, int n, CartSku **cart_skus, int *group)
{
	int		   *order = palloc(n * sizeof(int));
	CartSku    *g = palloc0(n * sizeof(CartSku));
	int			ng = 0;

	for (int i = 0; i < n; i++)
		order[i] = i;
	qsort_arg(order, n, sizeof(int), CompareLines, skus);

	for (int k = 0; k < n; k++)
	{
		int			i = order[k];

		if (ng == 0 || LedgerCompareText(g[ng - 1].sku, skus[i]) != 0)
		{
			g[ng].sku = skus[i];
			CacheMakeKey(&g[ng].key, VARDATA_ANY(skus[i]), VARSIZE_ANY_EXHDR(skus[i]));
			ng++;
		}
		if (pg_add_s64_overflow(g[ng - 1].demand, qtys[i], &g[ng - 1].demand))
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("the demand of the cart for sku \"%s\" is out of range",
							text_to_cstring(skus[i]))));
		group[i] = ng - 1;
	}
	pfree(order);
	*cart_skus = g;
	return ng;
}

static void
CartReuseError(text *order_id, int n, bool numbered)
{
	if (numbered)
		ereport(ERROR,
				(errcode(ERRCODE_UNIQUE_VIOLATION),
				 errmsg("order_id \"%s\" is already used by other movements",
						text_to_cstring(order_id)),
				 errdetail_plural("A cart of %d line is the movement (order_id, batch_ids[1]), and the ledger holds it as another movement.",
								  "A cart of %d lines is the movements (order_id, batch_ids[i]), and the ledger holds some of them as other movements.",
								  n, n),
				 errhint("Give each cart its own order_id.")));
	ereport(ERROR,
			(errcode(ERRCODE_UNIQUE_VIOLATION),
			 errmsg("order_id \"%s\" is already used by other movements",
					text_to_cstring(order_id)),
			 errdetail_plural("A cart of %d line is the movement (order_id, %d), and the ledger holds others under this order_id.",
							  "A cart of %d lines is the movements (order_id, 1) to (order_id, %d), and the ledger holds others under this order_id.",
							  n, n, n),
			 errhint("Give each cart its own order_id.")));
}

/* Gives back the holds and buyer locks of a cart that writes nothing. */
static void
GiveBack(CartSku *g, int ng, text *buyer_id, int mark, int changes_mark)
{
	InvKey	   *keys = palloc(ng * sizeof(InvKey));
	int			nkeys = 0;

	for (int k = 0; k < ng; k++)
	{
		/* the counters as the cart found them, without its own hold */
		if (g[k].held)
		{
			keys[nkeys++] = g[k].key;
			g[k].view.holds -= g[k].demand;
		}
		g[k].held = false;
		if (g[k].buyer_locked)
			RulesReleaseBuyer(g[k].sku, buyer_id);
		g[k].buyer_locked = false;
	}
	PendingGiveBack(keys, nkeys, mark, changes_mark);
	pfree(keys);
}

PG_FUNCTION_INFO_V1(inventory_reserve_cart);
Datum
inventory_reserve_cart(PG_FUNCTION_ARGS)
{
	text	   *order_id = ArgOrderId(fcinfo, 0);
	text	  **skus;
	int64	   *qtys;
	int			n = ArgTextArray(fcinfo, 1, "skus", LedgerCheckSku, false, &skus);
	int			nqtys = ArgQuantityArray(fcinfo, 2, "qtys", &qtys);
	TimestampTz now = GetCurrentStatementStartTimestamp();
	TimestampTz expires_at = ArgExpiresAt(fcinfo, 3, now);
	text	   *buyer_id = ArgBuyerId(fcinfo, 4);
	int32	   *batches;
	int			nbatches = ArgBatchIdArray(fcinfo, 5, "batch_ids", &batches);
	InvSale		sale = {now, buyer_id != NULL};
	int			mark = PendingMark();
	int			changes_mark = PendingChangesMark();
	CartSku    *g;
	int		   *group;
	LedgerRow  *found;
	int			ng;
	int			nfound = 0;
	bool		refused = false;
	LedgerWriter writer;
	LedgerRow	extra;
	OutcomeSet	set;

	ArgCheckWritable("inventory.reserve_cart()");
	if (n != nqtys)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("skus and qtys must have the same number of elements"),
				 errdetail_plural("skus has %d element and qtys %d.",
								  "skus has %d elements and qtys %d.",
								  n, n, nqtys)));
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a cart must have at least one line")));
	if (nbatches >= 0 && nbatches != n)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("skus and batch_ids must have the same number of elements"),
				 errdetail_plural("skus has %d element and batch_ids %d.",
								  "skus has %d elements and batch_ids %d.",
								  n, n, nbatches)));
	if (nbatches < 0)
	{
		batches = palloc(n * sizeof(int32));
		for (int i = 0; i < n; i++)
			batches[i] = i + 1;
	}

	OutcomeSetInit(&set, INV_CALL_RESERVE_CART, fcinfo);
	group = palloc(n * sizeof(int));
	ng = GroupLines(skus, qtys, n, &g, group);

	/* on sale, enough of each?  Holds until the first SKU that is refused */
	for (int k = 0; k < ng; k++)
	{
		InvAdmit	admit;

		if (!refused)
		{
			admit = PendingReserve(&g[k].key, g[k].demand, NULL, &sale, &g[k].view);
			g[k].held = (admit == INV_ADMIT_OK);
		}
		else
			admit = PendingAsk(&g[k].key, g[k].demand, &sale, &g[k].view);
		if (admit != INV_ADMIT_OK)
		{
			g[k].refused = true;
			g[k].status = OutcomeRefusalStatus(admit);
			refused = true;
		}
	}

	/* is the cart a replay?  Its lines' keys, in line order */
	found = palloc(n * sizeof(LedgerRow));
	for (int i = 0; i < n; i++)
	{
		MovementLockKey(order_id, batches[i]);
		if (MovementFindKey(order_id, batches[i], &found[i]))
			nfound++;
	}
	if (nfound > 0)
	{
		GiveBack(g, ng, buyer_id, mark, changes_mark);
		/* numbered by us, a longer cart under this order_id has line n + 1 */
		if (nfound < n || (nbatches < 0 && MovementFindKey(order_id, n + 1, &extra)))
			CartReuseError(order_id, n, nbatches >= 0);
		for (int i = 0; i < n; i++)
		{
			Outcome		o;

			OutcomeInit(&o, skus[i], qtys[i]);
			OutcomeReplay(order_id, batches[i], &found[i], INV_KIND_RESERVE,
						  skus[i], qtys[i], buyer_id, &o);
			OutcomePut(&set, &o);
		}
		OutcomeSetDone(&set);
		return (Datum) 0;
	}

	/* is the buyer within each SKU's limit, on the cart's sum? */
	for (int k = 0; k < ng; k++)
	{
		int64		holding;

		if (!g[k].refused && g[k].view.rules.max_per_buyer > 0 &&
			!RulesAdmitBuyer(g[k].sku, buyer_id, g[k].demand,
							 g[k].view.rules.max_per_buyer, &holding,
							 &g[k].buyer_locked))
		{
			g[k].refused = true;
			g[k].status = INV_STATUS_LIMIT_EXCEEDED;
			refused = true;
		}
	}

	if (refused)
	{
		GiveBack(g, ng, buyer_id, mark, changes_mark);
		for (int i = 0; i < n; i++)
		{
			Outcome		o;

			OutcomeInit(&o, skus[i], qtys[i]);
			o.status = g[group[i]].refused ? g[group[i]].status : INV_STATUS_CART_REFUSED;
			o.takeable_only = true;
			OutcomeSetCounters(&o, &g[group[i]].view);
			OutcomePut(&set, &o);
		}
		OutcomeSetDone(&set);
		return (Datum) 0;
	}

	/* every line, in line order: each binds part of its SKU's hold */
	LedgerWriterInit(&writer);
	for (int i = 0; i < n; i++)
	{
		LedgerNew	m;
		Outcome		o;

		MovementNew(&m, order_id, batches[i], INV_KIND_RESERVE, skus[i], qtys[i]);
		m.has_expires_at = true;
		m.expires_at = expires_at;
		m.buyer_id = buyer_id;
		m.rules_checked = true;
		LedgerWriterInsert(&writer, &m);

		OutcomeInit(&o, skus[i], qtys[i]);
		OutcomeSetCounters(&o, &g[group[i]].view);
		o.ok = true;
		o.status = INV_STATUS_OK;
		o.has_state = true;
		o.state = INV_PENDING;
		o.has_expires_at = true;
		o.expires_at = expires_at;
		OutcomePut(&set, &o);
	}
	LedgerWriterClose(&writer);
	OutcomeSetDone(&set);
	return (Datum) 0;
}

/* Settles every line of an order, in batch_id order. */
static Datum
OrderCall(FunctionCallInfo fcinfo, ReservationOp op)
{
	text	   *order_id = ArgOrderId(fcinfo, 0);
	TimestampTz now = GetCurrentStatementStartTimestamp();
	int32	   *batches;
	int			n;
	OutcomeSet	set;

	ArgCheckWritable(op == OP_CONFIRM ? "inventory.confirm_order()" :
				  "inventory.cancel_order()");
	OutcomeSetInit(&set, op == OP_CONFIRM ? INV_CALL_CONFIRM_ORDER :
				   INV_CALL_CANCEL_ORDER, fcinfo);

	n = LedgerOrderBatches(order_id, &batches);
	if (n == 0)
	{
		Outcome		o;

		memset(&o, 0, sizeof(o));
		o.status = INV_STATUS_NOT_FOUND;
		OutcomePut(&set, &o);
	}
	for (int i = 0; i < n; i++)
	{
		Outcome		o;

		MovementSettle(op, order_id, batches[i], now, 0, &o);
		OutcomePut(&set, &o);
	}
	OutcomeSetDone(&set);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(inventory_confirm_order);
Datum
inventory_confirm_order(PG_FUNCTION_ARGS)
{
	return OrderCall(fcinfo, OP_CONFIRM);
}

PG_FUNCTION_INFO_V1(inventory_cancel_order);
Datum
inventory_cancel_order(PG_FUNCTION_ARGS)
{
	return OrderCall(fcinfo, OP_CANCEL);
}
