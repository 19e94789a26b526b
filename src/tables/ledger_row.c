/*
 * ledger_row.c
 *	  A ledger row: the kinds of movement, what each contributes to its
 *	  SKU's counters, its decoding, and the checks of its keys.
 *
 * A SKU's counters are the fold of its base row in inventory.sku and its
 * unfolded ledger rows.  LedgerEffect() is the one definition of what a row
 * contributes; the inventory.stock view calls it through the effect_*
 * functions, the trigger calls it to turn a row change into a change of the
 * counters, and LedgerReadTruth() (ledger_table.c) to load the cache.
 * Nothing else computes counters from rows.
 */
#include "postgres.h"

#include <limits.h>

#include "access/htup_details.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "inventory.h"
#include "tables/catalog.h"
#include "tables/ledger_row.h"

static int	inv_default_ttl = 15 * 60;	/* seconds */

void
LedgerRowInit(void)
{
	DefineCustomIntVariable("inventory.default_ttl",
							"Time a reservation is held when reserve() is given no ttl.",
							NULL,
							&inv_default_ttl,
							15 * 60, 1, INT_MAX,
							PGC_USERSET, GUC_UNIT_S,
							NULL, NULL, NULL);
}

/* When a reservation made at now expires if nobody says: inventory.default_ttl. */
TimestampTz
LedgerDefaultExpiresAt(TimestampTz now)
{
	return now + (TimestampTz) inv_default_ttl * USECS_PER_SEC;
}

static const char *const kind_names[] = {
	[INV_KIND_RESERVE] = "reserve",
	[INV_KIND_RESTOCK] = "restock",
	[INV_KIND_ADJUST] = "adjust",
	[INV_KIND_WITHDRAW] = "withdraw",
};

InvKind
LedgerParseKind(const char *str, int len)
{
	for (int k = INV_KIND_RESERVE; k <= INV_KIND_WITHDRAW; k++)
	{
		if ((size_t) len == strlen(kind_names[k]) &&
			memcmp(str, kind_names[k], len) == 0)
			return (InvKind) k;
	}
	ereport(ERROR,
			(errcode(ERRCODE_CHECK_VIOLATION),
			 errmsg("invalid ledger kind \"%.*s\"", len, str),
			 errdetail("A movement is a reserve, a restock, an adjust or a withdraw.")));
	pg_unreachable();
}

const char *
LedgerKindName(InvKind kind)
{
	return kind_names[kind];
}

static const char *const settled_by_names[] = {
	[INV_SETTLED_BY_STATEMENT] = "statement",
	[INV_SETTLED_BY_CALL] = "call",
	[INV_SETTLED_BY_EXPIRY] = "expiry",
	[INV_SETTLED_BY_RECONCILER] = "reconciler",
};

const char *
LedgerSettledByName(InvSettledBy by)
{
	return settled_by_names[by];
}

/* Is name one of settled_by's values?  For a restored row. */
bool
LedgerSettledByValid(text *name)
{
	for (int b = INV_SETTLED_BY_STATEMENT; b <= INV_SETTLED_BY_RECONCILER; b++)
	{
		if (VARSIZE_ANY_EXHDR(name) == strlen(settled_by_names[b]) &&
			memcmp(VARDATA_ANY(name), settled_by_names[b], strlen(settled_by_names[b])) == 0)
			return true;
	}
	return false;
}

/*
 * A reservation holds its quantity while PENDING and removes it from on_hand
 * once CONFIRMED.  Every committed change counts one version: a reservation
 * counts one when made and one when settled; a restock, a stocktake or a
 * withdrawal one.
 */
void
LedgerEffect(InvKind kind, bool has_state, InvState state, int64 qty,
			 InvEffect *effect)
{
	effect->on_hand = 0;
	effect->reserved = 0;
	effect->version = 1;

	switch (kind)
	{
		case INV_KIND_RESERVE:
			if (!has_state || state == INV_PENDING)
				effect->reserved = qty;
			else
			{
				effect->version = 2;
				if (state == INV_CONFIRMED)
					effect->on_hand = -qty;
			}
			break;
		case INV_KIND_RESTOCK:
		case INV_KIND_ADJUST:
			effect->on_hand = qty;
			break;
		case INV_KIND_WITHDRAW:
			effect->on_hand = -qty;
			break;
	}
}

static void
CheckKey(const char *what, const char *str, int len, int maxlen)
{
	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be empty", what)));
	if (len > maxlen)
		ereport(ERROR,
				(errcode(ERRCODE_STRING_DATA_RIGHT_TRUNCATION),
				 errmsg("%s is too long", what),
				 errdetail("It has %d bytes; at most %d are allowed.", len, maxlen)));
}

void
LedgerCheckSku(const char *sku, int len)
{
	CheckKey("sku", sku, len, INV_SKU_MAXLEN);
}

void
LedgerCheckOrderId(const char *order_id, int len)
{
	CheckKey("order_id", order_id, len, INV_ORDER_ID_MAXLEN);
}

void
LedgerCheckBuyerId(const char *buyer_id, int len)
{
	CheckKey("buyer_id", buyer_id, len, INV_ORDER_ID_MAXLEN);
}

/*
 * Decodes a ledger row.  The one place that knows the ledger's columns
 * besides the insert below and the catalog's column numbers.  The row is
 * deformed in one pass: its NULLs and text columns would make each column
 * read on its own walk the row from its start.
 */
void
LedgerDecode(HeapTuple tup, TupleDesc desc, LedgerRow *row)
{
	const InvCatalog *cat = InvGetCatalog();
	Datum		values_buf[32];
	bool		nulls_buf[32];
	Datum	   *values = values_buf;
	bool	   *nulls = nulls_buf;
	text	   *kind;

	if (desc->natts > (int) lengthof(values_buf))
	{
		values = palloc(desc->natts * sizeof(Datum));
		nulls = palloc(desc->natts * sizeof(bool));
	}
	heap_deform_tuple(tup, desc, values, nulls);

	row->order_id = CatalogNotNullDatum(values[cat->l_order_id - 1],
										nulls[cat->l_order_id - 1], "order_id");
	row->sku = CatalogNotNullDatum(values[cat->l_sku - 1], nulls[cat->l_sku - 1], "sku");
	kind = CatalogNotNullDatum(values[cat->l_kind - 1], nulls[cat->l_kind - 1], "kind");
	row->kind = LedgerParseKind(VARDATA_ANY(kind), VARSIZE_ANY_EXHDR(kind));

	/* a nullable column: has_<field> and <field>, dflt when NULL */
#define COLUMN(field, att, conv, dflt) \
	(row->has_##field = !nulls[(att) - 1], \
	 row->field = nulls[(att) - 1] ? (dflt) : conv(values[(att) - 1]))
	COLUMN(batch_id, cat->l_batch_id, DatumGetInt32, 0);
	COLUMN(qty, cat->l_qty, DatumGetInt64, 0);
	COLUMN(counted, cat->l_counted, DatumGetInt64, 0);
	COLUMN(state, cat->l_state, DatumGetInvState, INV_PENDING);
	COLUMN(created_at, cat->l_created_at, DatumGetTimestampTz, 0);
	COLUMN(expires_at, cat->l_expires_at, DatumGetTimestampTz, 0);
	COLUMN(settled_at, cat->l_settled_at, DatumGetTimestampTz, 0);
#undef COLUMN
	row->folded = !nulls[cat->l_folded - 1] && DatumGetBool(values[cat->l_folded - 1]);
	row->buyer_id = NULL;
	if (cat->l_buyer_id != InvalidAttrNumber && !nulls[cat->l_buyer_id - 1])
		row->buyer_id = DatumGetTextPP(values[cat->l_buyer_id - 1]);
	row->settled_by = NULL;
	if (cat->l_settled_by != InvalidAttrNumber && !nulls[cat->l_settled_by - 1])
		row->settled_by = DatumGetTextPP(values[cat->l_settled_by - 1]);

	if (values != values_buf)
	{
		pfree(values);
		pfree(nulls);
	}
}

/* What a row adds to its SKU's counters now: nothing once folded. */
void
LedgerRowEffect(const LedgerRow *row, InvEffect *effect)
{
	if (row->folded)
		memset(effect, 0, sizeof(InvEffect));
	else
		LedgerEffect(row->kind, row->has_state, row->state, row->qty, effect);
}

/*
 * Can the movement no longer change, so that the worker may fold it?  A
 * restock and a stocktake are settled when made, a reservation once it
 * leaves PENDING.
 */
bool
LedgerRowIsSettled(const LedgerRow *row)
{
	return row->kind != INV_KIND_RESERVE ||
		(row->has_state && row->state != INV_PENDING);
}

/*
 * Orders two SKUs or keys byte for byte, as COLLATE "C" does: the one
 * order in which calls that lock several take their locks.
 */
int
LedgerCompareText(text *a, text *b)
{
	int			la = VARSIZE_ANY_EXHDR(a);
	int			lb = VARSIZE_ANY_EXHDR(b);
	int			c = memcmp(VARDATA_ANY(a), VARDATA_ANY(b), Min(la, lb));

	return c != 0 ? c : (la > lb) - (la < lb);
}

/* Is the row a movement of sku?  Compared byte for byte. */
bool
LedgerRowIsSku(const LedgerRow *row, text *sku)
{
	return VARSIZE_ANY_EXHDR(row->sku) == VARSIZE_ANY_EXHDR(sku) &&
		memcmp(VARDATA_ANY(row->sku), VARDATA_ANY(sku), VARSIZE_ANY_EXHDR(sku)) == 0;
}

/* SQL access to LedgerEffect(), for inventory.stock. */
static void
EffectArgs(FunctionCallInfo fcinfo, InvEffect *effect)
{
	text	   *kind;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("kind and qty must not be null")));
	kind = PG_GETARG_TEXT_PP(0);
	LedgerEffect(LedgerParseKind(VARDATA_ANY(kind), VARSIZE_ANY_EXHDR(kind)),
				 !PG_ARGISNULL(1),
				 PG_ARGISNULL(1) ? INV_PENDING : DatumGetInvState(PG_GETARG_DATUM(1)),
				 PG_GETARG_INT64(2), effect);
}

PG_FUNCTION_INFO_V1(inventory_effect_on_hand);
Datum
inventory_effect_on_hand(PG_FUNCTION_ARGS)
{
	InvEffect	e;

	EffectArgs(fcinfo, &e);
	PG_RETURN_INT64(e.on_hand);
}

PG_FUNCTION_INFO_V1(inventory_effect_reserved);
Datum
inventory_effect_reserved(PG_FUNCTION_ARGS)
{
	InvEffect	e;

	EffectArgs(fcinfo, &e);
	PG_RETURN_INT64(e.reserved);
}

PG_FUNCTION_INFO_V1(inventory_effect_version);
Datum
inventory_effect_version(PG_FUNCTION_ARGS)
{
	InvEffect	e;

	EffectArgs(fcinfo, &e);
	PG_RETURN_INT64(e.version);
}
