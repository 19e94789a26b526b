/*
 * ledger.c
 *	  The rules of the ledger's data.
 *
 * A SKU's counters are the fold of its base row in inventory.sku and its
 * unfolded ledger rows.  LedgerEffect() is the one definition of what a row
 * contributes; the inventory.stock view calls it through the effect_*
 * functions, the trigger calls it to turn a row change into a change of the
 * counters, and LedgerReadTruth() to load the cache.  Nothing else computes
 * counters from rows.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "commands/trigger.h"
#include "common/hashfn.h"
#include "common/int.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "catalog.h"
#include "ledger.h"

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
 * An index scan of one of the extension's tables with a snapshot of the
 * caller's.  Open it, set its keys against ks->index, start it, read
 * ks->slot, end it.  The locks stay to the end of the transaction, as the
 * executor keeps them.
 */
typedef struct KeyScan
{
	Relation	heap;
	Relation	index;
	TupleTableSlot *slot;
	IndexScanDesc scan;
} KeyScan;

static void
KeyScanOpen(KeyScan *ks, Oid heapid, Oid indexid)
{
	ks->heap = table_open(heapid, AccessShareLock);
	ks->index = index_open(indexid, AccessShareLock);
	ks->slot = table_slot_create(ks->heap, NULL);
	ks->scan = NULL;
}

/* the key on the index's first column, a text */
static void
KeyScanTextKey(KeyScan *ks, ScanKey key, text *value)
{
	ScanKeyEntryInitialize(key, 0, 1, BTEqualStrategyNumber, InvalidOid,
						   ks->index->rd_indcollation[0], F_TEXTEQ,
						   PointerGetDatum(value));
}

static void
KeyScanStart(KeyScan *ks, Snapshot snapshot, ScanKey keys, int nkeys)
{
	ks->scan = index_beginscan(ks->heap, ks->index, snapshot, nkeys, 0);
	index_rescan(ks->scan, keys, nkeys, NULL, 0);
}

static bool
KeyScanNext(KeyScan *ks)
{
	return index_getnext_slot(ks->scan, ForwardScanDirection, ks->slot);
}

static void
KeyScanEnd(KeyScan *ks)
{
	index_endscan(ks->scan);
	ExecDropSingleTupleTableSlot(ks->slot);
	index_close(ks->index, NoLock);
	table_close(ks->heap, NoLock);
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

/*
 * Looks a movement up by its key, reading only the key's index entry and its
 * row, with a fresh snapshot: what is committed now, and what this
 * transaction wrote.  The caller holds the key's lock (LedgerLockKey), so no
 * call with the same key is half-way through.  A row that another
 * transaction is updating at this moment (a confirm, a fold) stays visible
 * to the snapshot; a dirty read could miss both of its versions.
 */
bool
LedgerFindMovement(const char *order_id, int len, int32 batch_id,
				   LedgerRow *movement)
{
	const InvCatalog *cat = InvGetCatalog();
	text	   *order_text = cstring_to_text_with_len(order_id, len);
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	ScanKeyData keys[2];
	KeyScan		ks;
	bool		found;

	KeyScanOpen(&ks, cat->ledger_rel, cat->ledger_key_index);
	KeyScanTextKey(&ks, &keys[0], order_text);
	ScanKeyEntryInitialize(&keys[1], 0, 2, BTEqualStrategyNumber, InvalidOid,
						   InvalidOid, F_INT4EQ, Int32GetDatum(batch_id));
	KeyScanStart(&ks, snapshot, keys, 2);
	found = KeyScanNext(&ks);
	/* a copy of the row, which the movement's text fields outlive the scan in */
	if (found)
		LedgerDecode(ExecCopySlotHeapTuple(ks.slot), RelationGetDescr(ks.heap), movement);
	KeyScanEnd(&ks);

	UnregisterSnapshot(snapshot);
	pfree(order_text);
	return found;
}

/*
 * Takes a lock on a key for the rest of the transaction, so that calls with
 * the same key take turns: the second looks the key up only once the first
 * has committed or rolled back.  pg_locks shows it as an object lock whose
 * classid is inventory.ledger and whose objid is a hash of the key.
 */
void
LedgerLockKey(const char *order_id, int len, int32 batch_id)
{
	LOCKTAG		tag;
	uint32		hash = hash_combine(hash_bytes((const unsigned char *) order_id, len),
									hash_uint32((uint32) batch_id));

	SET_LOCKTAG_OBJECT(tag, MyDatabaseId, InvGetCatalog()->ledger_rel, hash, 0);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/* the movement LedgerInsert() is writing had the SKU's rules applied */
static bool insert_rules_checked = false;

/*
 * Is the row that the trigger sees being written by LedgerInsert() for a
 * caller that applied the SKU's rules already (and answered with a status
 * rather than an error)?
 */
bool
LedgerInsertRulesChecked(void)
{
	return insert_rules_checked;
}

/*
 * Writes a new movement, as an INSERT would -- the trigger, the constraints
 * and the indexes all see it -- but without planning and starting a query
 * for one row, in the way logical replication applies a row.  The caller
 * holds the key's lock and has looked the key up.
 */
void
LedgerInsert(const LedgerNew *m)
{
	const InvCatalog *cat = InvGetCatalog();
	Relation	rel = table_open(cat->ledger_rel, RowExclusiveLock);
	TupleDesc	desc = RelationGetDescr(rel);
	EState	   *estate = CreateExecutorState();
	RangeTblEntry *rte = makeNode(RangeTblEntry);
	ResultRelInfo *rri = makeNode(ResultRelInfo);
	TupleTableSlot *slot;

	rte->rtekind = RTE_RELATION;
	rte->relid = RelationGetRelid(rel);
	rte->relkind = rel->rd_rel->relkind;
	rte->rellockmode = RowExclusiveLock;
	ExecInitRangeTable(estate, list_make1(rte));
	InitResultRelInfo(rri, rel, 1, NULL, 0);
	estate->es_opened_result_relations = list_make1(rri);
	estate->es_output_cid = GetCurrentCommandId(true);

	slot = ExecInitExtraTupleSlot(estate, desc, &TTSOpsVirtual);
	ExecClearTuple(slot);
	memset(slot->tts_isnull, true, desc->natts * sizeof(bool));
#define SET(att, value) \
	(slot->tts_values[(att) - 1] = (value), slot->tts_isnull[(att) - 1] = false)
	SET(cat->l_order_id, PointerGetDatum(m->order_id));
	SET(cat->l_batch_id, Int32GetDatum(m->batch_id));
	SET(cat->l_kind, CStringGetTextDatum(kind_names[m->kind]));
	SET(cat->l_sku, PointerGetDatum(m->sku));
	SET(cat->l_qty, Int64GetDatum(m->qty));
	if (m->has_counted)
		SET(cat->l_counted, Int64GetDatum(m->counted));
	if (m->kind == INV_KIND_RESERVE)
		SET(cat->l_state, InvStateGetDatum(INV_PENDING));
	SET(cat->l_created_at, TimestampTzGetDatum(GetCurrentStatementStartTimestamp()));
	if (m->has_expires_at)
		SET(cat->l_expires_at, TimestampTzGetDatum(m->expires_at));
	SET(cat->l_folded, BoolGetDatum(false));
	if (m->buyer_id)
	{
		if (cat->l_buyer_id == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"buyer_id\" of relation \"inventory.ledger\" does not exist"),
					 errhint("Bring the extension's objects in line with the installed library with ALTER EXTENSION inventory UPDATE; dropping the extension would drop its data.")));
		SET(cat->l_buyer_id, PointerGetDatum(m->buyer_id));
	}
#undef SET
	ExecStoreVirtualTuple(slot);

	ExecOpenIndices(rri, false);
	AfterTriggerBeginQuery();
	insert_rules_checked = m->rules_checked;
	PG_TRY();
	{
		ExecSimpleRelationInsert(rri, estate, slot);
		AfterTriggerEndQuery(estate);
	}
	PG_FINALLY();
	{
		insert_rules_checked = false;
	}
	PG_END_TRY();
	ExecCloseIndices(rri);
	ExecResetTupleTable(estate->es_tupleTable, false);
	FreeExecutorState(estate);
	table_close(rel, NoLock);

	/* later statements of the transaction see the movement */
	CommandCounterIncrement();
}

/*
 * Reads a SKU's counters from the tables: its base row in inventory.sku plus
 * the effect of its unfolded movements, as inventory.stock adds them up.
 * With a fresh snapshot rather than the transaction's: the cache must hold
 * what is committed now, whatever the caller's isolation level.  Returns
 * false when the SKU does not exist; its counters are then the sum of its
 * movements alone, which only a restore that loads the ledger before
 * inventory.sku leaves there for a while (restore.c).  *unfolded, if asked,
 * counts the settled movements not folded yet.
 *
 * The movements are read by a plain scan of ledger_sku_idx for (sku, not
 * folded), never through the planner: right after a fold the index still
 * holds an entry for each replaced row version, and a plan chosen on stale
 * statistics (a bitmap scan, or the expiry index) would read them all on
 * every load.  An index scan reads them once and marks them dead, so the
 * next load of the SKU skips them even before VACUUM.
 */
bool
LedgerReadTruth(const char *sku, InvEffect *truth, int64 *unfolded,
				InvRules *rules)
{
	const InvCatalog *cat = InvGetCatalog();
	text	   *sku_text = cstring_to_text(sku);
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	ScanKeyData keys[2];
	KeyScan		ks;
	bool		found;
	bool		isnull;

	memset(truth, 0, sizeof(*truth));
	if (unfolded)
		*unfolded = 0;
	if (rules)
		InvRulesNone(rules);

	/* the base row */
	KeyScanOpen(&ks, cat->sku_rel, cat->sku_key_index);
	KeyScanTextKey(&ks, &keys[0], sku_text);
	KeyScanStart(&ks, snapshot, keys, 1);
	found = KeyScanNext(&ks);
	if (found)
	{
		truth->on_hand = DatumGetInt64(slot_getattr(ks.slot, cat->s_on_hand, &isnull));
		truth->version = DatumGetInt64(slot_getattr(ks.slot, cat->s_version, &isnull));
		if (rules)
		{
			bool		should_free;
			HeapTuple	tup = ExecFetchSlotHeapTuple(ks.slot, false, &should_free);

			RulesDecode(tup, RelationGetDescr(ks.heap), rules);
			if (should_free)
				heap_freetuple(tup);
		}
	}
	KeyScanEnd(&ks);

	/* and its unfolded movements */
	{
		KeyScanOpen(&ks, cat->ledger_rel, cat->ledger_sku_index);
		KeyScanTextKey(&ks, &keys[0], sku_text);
		ScanKeyEntryInitialize(&keys[1], 0, 2, BTEqualStrategyNumber, InvalidOid,
							   InvalidOid, F_BOOLEQ, BoolGetDatum(false));
		KeyScanStart(&ks, snapshot, keys, 2);
		while (KeyScanNext(&ks))
		{
			LedgerRow	m;
			InvEffect	effect;
			bool		should_free;
			HeapTuple	tup = ExecFetchSlotHeapTuple(ks.slot, false, &should_free);

			CHECK_FOR_INTERRUPTS();
			LedgerDecode(tup, RelationGetDescr(ks.heap), &m);
			LedgerRowEffect(&m, &effect);
			if (pg_add_s64_overflow(truth->on_hand, effect.on_hand, &truth->on_hand) ||
				pg_add_s64_overflow(truth->reserved, effect.reserved, &truth->reserved) ||
				pg_add_s64_overflow(truth->version, effect.version, &truth->version))
				ereport(ERROR,
						(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
						 errmsg("counters of sku \"%s\" are out of range for type bigint", sku),
						 errhint("Let the worker fold the SKU's settled movements, or run inventory.fold().")));
			if (unfolded && LedgerRowIsSettled(&m))
				(*unfolded)++;
			if (should_free)
				heap_freetuple(tup);
		}
		KeyScanEnd(&ks);
	}

	UnregisterSnapshot(snapshot);
	pfree(sku_text);
	return found;
}

/*
 * The units of sku that buyer_id holds: the qty of their PENDING and
 * CONFIRMED reservations, folded or not, read through ledger_buyer_idx with
 * a fresh snapshot (what is committed now, and what this transaction
 * wrote).  The caller holds the buyer's lock (rules.c).
 */
int64
LedgerBuyerHolding(text *sku, text *buyer_id)
{
	const InvCatalog *cat = InvGetCatalog();
	Snapshot	snapshot;
	ScanKeyData keys[2];
	KeyScan		ks;
	int64		holding = 0;

	if (!OidIsValid(cat->ledger_buyer_index))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("index \"inventory.ledger_buyer_idx\" does not exist"),
				 errhint("Bring the extension's objects in line with the installed library with ALTER EXTENSION inventory UPDATE; dropping the extension would drop its data.")));

	snapshot = RegisterSnapshot(GetLatestSnapshot());
	KeyScanOpen(&ks, cat->ledger_rel, cat->ledger_buyer_index);
	KeyScanTextKey(&ks, &keys[0], buyer_id);
	ScanKeyEntryInitialize(&keys[1], 0, 2, BTEqualStrategyNumber, InvalidOid,
						   ks.index->rd_indcollation[1], F_TEXTEQ,
						   PointerGetDatum(sku));
	KeyScanStart(&ks, snapshot, keys, 2);
	while (KeyScanNext(&ks))
	{
		LedgerRow	m;
		bool		should_free;
		HeapTuple	tup = ExecFetchSlotHeapTuple(ks.slot, false, &should_free);

		LedgerDecode(tup, RelationGetDescr(ks.heap), &m);
		if (m.kind == INV_KIND_RESERVE && m.has_state &&
			(m.state == INV_PENDING || m.state == INV_CONFIRMED) &&
			pg_add_s64_overflow(holding, m.qty, &holding))
			holding = PG_INT64_MAX;
		if (should_free)
			heap_freetuple(tup);
	}
	KeyScanEnd(&ks);
	UnregisterSnapshot(snapshot);
	return holding;
}

/*
 * The batch_ids of an order's movements, in ascending order, read from the
 * key's index with a fresh snapshot.  Returns how many; *batch_ids is
 * palloc'd.
 */
int
LedgerOrderBatches(text *order_id, int32 **batch_ids)
{
	const InvCatalog *cat = InvGetCatalog();
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	ScanKeyData key;
	KeyScan		ks;
	int			n = 0;
	int			cap = 8;

	*batch_ids = palloc(cap * sizeof(int32));
	KeyScanOpen(&ks, cat->ledger_rel, cat->ledger_key_index);
	KeyScanTextKey(&ks, &key, order_id);
	KeyScanStart(&ks, snapshot, &key, 1);
	while (KeyScanNext(&ks))
	{
		bool		isnull;
		Datum		d = slot_getattr(ks.slot, cat->l_batch_id, &isnull);

		if (n == cap)
		{
			cap *= 2;
			*batch_ids = repalloc(*batch_ids, cap * sizeof(int32));
		}
		(*batch_ids)[n++] = DatumGetInt32(d);
	}
	KeyScanEnd(&ks);
	UnregisterSnapshot(snapshot);
	return n;
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
