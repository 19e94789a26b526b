/*
 * outcome.c
 *	  What a call of the SQL API answers: one inventory.result row whose
 *	  status says what happened.  Business outcomes are results, not
 *	  errors: a flash sale refuses most calls, and an ERROR would abort the
 *	  caller's transaction.  A key reused for a different movement is
 *	  misuse, and an ERROR.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "common/int.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "movement/outcome.h"
#include "shmem/express.h"
#include "tables/catalog.h"
#include "xact/pending.h"

#define RESULT_NATTS 8

/*
 * The descriptor of inventory.result, kept across calls: looking it up for
 * every call would cost more than the rest of a refused reserve.
 */
static TupleDesc
OutcomeDesc(void)
{
	static TupleDesc desc = NULL;
	static uint64 desc_epoch = 0;
	const InvCatalog *cat = InvGetCatalog();

	if (desc == NULL || desc_epoch != cat->epoch)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
		TupleDesc	d = lookup_rowtype_tupdesc_copy(cat->result_type, -1);

		MemoryContextSwitchTo(old);
		if (d->natts != RESULT_NATTS)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("type inventory.result has %d attributes, expected %d",
							d->natts, RESULT_NATTS),
					 errhint("Bring the extension's objects in line with the installed library with ALTER EXTENSION inventory UPDATE; dropping the extension would drop its data.")));
		if (desc)
			FreeTupleDesc(desc);
		desc = d;
		desc_epoch = cat->epoch;
	}
	return desc;
}

/*
 * The available units the call answers: those that will be available once
 * the caller's transaction commits, if nothing else commits or aborts
 * meanwhile -- the live count at the call, which has every hold of every
 * transaction taken out, plus what this transaction adds, which counts for
 * others only at its commit.  So a restock answers with its units on sale.
 * A refused reserve answers what a reserve can take now, the live count:
 * the units its own transaction adds are not on sale to it before they
 * commit, and an answer counting them would contradict the refusal.
 */
static int64
OutcomeAvailable(const Outcome *o)
{
	int64		available;

	if (o->sku == NULL || o->takeable_only ||
		pg_add_s64_overflow(o->available, PendingOwnAvailable(o->sku), &available))
		return o->available;
	return available;
}

static HeapTuple
OutcomeTuple(const Outcome *o)
{
	TupleDesc	desc = OutcomeDesc();
	Datum		values[RESULT_NATTS];
	bool		nulls[RESULT_NATTS];

	memset(nulls, 0, sizeof(nulls));
	values[0] = BoolGetDatum(o->ok);
	values[1] = CStringGetTextDatum(inv_status_names[o->status]);
	nulls[2] = (o->sku == NULL);
	values[2] = PointerGetDatum(o->sku);
	nulls[3] = !o->has_qty;
	values[3] = Int64GetDatum(o->qty);
	nulls[4] = !o->has_state;
	values[4] = InvStateGetDatum(o->state);
	nulls[5] = !o->has_counters;
	values[5] = Int64GetDatum(o->has_counters ? OutcomeAvailable(o) : 0);
	nulls[6] = !o->has_counters;
	values[6] = Int64GetDatum(o->version);
	nulls[7] = !o->has_expires_at;
	values[7] = TimestampTzGetDatum(o->expires_at);

	return heap_form_tuple(desc, values, nulls);
}

/* The row a call answers, counted as told. */
Datum
OutcomeAnswer(InvCall call, const Outcome *o)
{
	Datum		d = HeapTupleGetDatum(OutcomeTuple(o));

	MetricsTold(call, o->status, 1);
	return d;
}

void
OutcomeSetInit(OutcomeSet *set, InvCall call, FunctionCallInfo fcinfo)
{
	memset(set, 0, sizeof(OutcomeSet));
	set->call = call;
	set->rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	InitMaterializedSRF(fcinfo, 0);
}

void
OutcomePut(OutcomeSet *set, const Outcome *o)
{
	tuplestore_puttuple(set->rsinfo->setResult, OutcomeTuple(o));
	set->told[o->status]++;
}

/* The call has answered every row: counts them as told. */
void
OutcomeSetDone(OutcomeSet *set)
{
	for (int st = 0; st < INV_NUM_STATUSES; st++)
		if (set->told[st] > 0)
			MetricsTold(set->call, (InvStatus) st, set->told[st]);
}

void
OutcomeSetCounters(Outcome *o, const InvView *view)
{
	o->has_counters = view->exists;
	o->available = InvViewAvailable(view);
	o->version = view->version;
}

/* Live counters of the outcome's SKU, from the cache. */
void
OutcomeReadCounters(Outcome *o)
{
	InvKey		key;
	InvView		view;

	CacheMakeKey(&key, VARDATA_ANY(o->sku), VARSIZE_ANY_EXHDR(o->sku));
	if (CacheRead(&key, true, &view))
		OutcomeSetCounters(o, &view);
}

void
OutcomeSetMovement(Outcome *o, const LedgerRow *m)
{
	o->sku = m->sku;
	o->has_qty = true;
	o->qty = m->kind == INV_KIND_ADJUST && m->has_counted ? m->counted : m->qty;
	o->has_state = m->has_state;
	o->state = m->state;
	o->has_expires_at = m->has_expires_at;
	o->expires_at = m->expires_at;
}

void
OutcomeKeyReuseError(text *order_id, int32 batch_id, const LedgerRow *m)
{
	char	   *order = text_to_cstring(order_id);
	char	   *sku = text_to_cstring(m->sku);

	if (m->kind == INV_KIND_ADJUST)
		ereport(ERROR,
				(errcode(ERRCODE_UNIQUE_VIOLATION),
				 errmsg("key (order_id, batch_id)=(%s, %d) is already used by another movement",
						order, batch_id),
				 errdetail_plural("The key belongs to a stocktake of sku \"%s\" to %lld unit.",
								  "The key belongs to a stocktake of sku \"%s\" to %lld units.",
								  m->counted,
								  sku, (long long) m->counted),
				 errhint("Give each movement its own (order_id, batch_id).")));
	if (m->buyer_id != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNIQUE_VIOLATION),
				 errmsg("key (order_id, batch_id)=(%s, %d) is already used by another movement",
						order, batch_id),
				 errdetail_plural("The key belongs to a reservation of %lld unit of sku \"%s\" for buyer \"%s\".",
								  "The key belongs to a reservation of %lld units of sku \"%s\" for buyer \"%s\".",
								  m->qty,
								  (long long) m->qty, sku, text_to_cstring(m->buyer_id)),
				 errhint("Give each movement its own (order_id, batch_id).")));
	ereport(ERROR,
			(errcode(ERRCODE_UNIQUE_VIOLATION),
			 errmsg("key (order_id, batch_id)=(%s, %d) is already used by another movement",
					order, batch_id),
			 m->kind == INV_KIND_RESERVE ?
			 errdetail_plural("The key belongs to a reservation of %lld unit of sku \"%s\".",
							  "The key belongs to a reservation of %lld units of sku \"%s\".",
							  m->qty, (long long) m->qty, sku) :
			 m->kind == INV_KIND_WITHDRAW ?
			 errdetail_plural("The key belongs to a withdrawal of %lld unit of sku \"%s\".",
							  "The key belongs to a withdrawal of %lld units of sku \"%s\".",
							  m->qty, (long long) m->qty, sku) :
			 errdetail_plural("The key belongs to a restock of %lld unit of sku \"%s\".",
							  "The key belongs to a restock of %lld units of sku \"%s\".",
							  m->qty, (long long) m->qty, sku),
			 errhint("Give each movement its own (order_id, batch_id).")));
}

/*
 * Reports a movement found under the caller's key: a replay of the same
 * movement is a duplicate, anything else an error.
 */
void
OutcomeReplay(text *order_id, int32 batch_id, const LedgerRow *m,
			  InvKind kind, text *sku, int64 qty, text *buyer_id, Outcome *o)
{
	int64		other = (m->kind == INV_KIND_ADJUST) ? m->counted : m->qty;
	bool		same_buyer = (m->buyer_id == NULL) ? buyer_id == NULL :
		(buyer_id != NULL &&
		 VARSIZE_ANY_EXHDR(m->buyer_id) == VARSIZE_ANY_EXHDR(buyer_id) &&
		 memcmp(VARDATA_ANY(m->buyer_id), VARDATA_ANY(buyer_id),
				VARSIZE_ANY_EXHDR(buyer_id)) == 0);

	/*
	 * The movement may be an express writer's, committed but not yet
	 * flushed: whatever is answered from it, duplicate or the key's reuse,
	 * is told once its commit is durable.
	 */
	ExpressFlushCommitted();
	if (m->kind != kind || !LedgerRowIsSku(m, sku) || other != qty || !same_buyer)
		OutcomeKeyReuseError(order_id, batch_id, m);
	OutcomeSetMovement(o, m);
	o->ok = true;
	o->status = INV_STATUS_DUPLICATE;
	OutcomeReadCounters(o);
}

void
OutcomeInit(Outcome *o, text *sku, int64 qty)
{
	memset(o, 0, sizeof(Outcome));
	o->sku = sku;
	o->has_qty = true;
	o->qty = qty;
}

/* The status of an admission that did not succeed. */
InvStatus
OutcomeRefusalStatus(InvAdmit admit)
{
	switch (admit)
	{
		case INV_ADMIT_UNKNOWN:
			return INV_STATUS_UNKNOWN_SKU;
		case INV_ADMIT_CONFLICT:
			return INV_STATUS_VERSION_CONFLICT;
		case INV_ADMIT_INSUFFICIENT:
			return INV_STATUS_INSUFFICIENT;
		case INV_ADMIT_NOT_ON_SALE:
			return INV_STATUS_NOT_ON_SALE;
		case INV_ADMIT_BUYER_REQUIRED:
			return INV_STATUS_BUYER_REQUIRED;
		case INV_ADMIT_OK:
			break;
	}
	elog(ERROR, "inventory: an admitted change has no refusal status");
	pg_unreachable();
}

/* The status of a call on a reservation that is already settled. */
void
OutcomeSettled(ReservationOp op, InvState state, Outcome *o)
{
	switch (state)
	{
		case INV_CONFIRMED:
			o->ok = (op == OP_CONFIRM);
			o->status = op == OP_CONFIRM ? INV_STATUS_DUPLICATE : INV_STATUS_CONFIRMED;
			break;
		case INV_CANCELLED:
			o->ok = (op == OP_CANCEL);
			o->status = op == OP_CANCEL ? INV_STATUS_DUPLICATE : INV_STATUS_CANCELLED;
			break;
		case INV_EXPIRED:
			/* cancel wanted the units back on sale, and they are */
			o->ok = (op == OP_CANCEL);
			o->status = INV_STATUS_EXPIRED;
			break;
		case INV_PENDING:
			elog(ERROR, "inventory: reservation is not settled");
	}
}
