/*
 * ledger_table.c
 *	  Reading and writing inventory.ledger: a movement looked up by its key,
 *	  the key's lock, the insert of a new movement, a SKU's counters read
 *	  from the tables, a buyer's holding and an order's movements.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "commands/trigger.h"
#include "common/hashfn.h"
#include "common/int.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/snapshot.h"

#include "tables/catalog.h"
#include "tables/keyscan.h"
#include "tables/ledger_table.h"
#include "tables/sku_row.h"

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
static void
KeyLockTag(LOCKTAG *tag, const char *order_id, int len, int32 batch_id)
{
	uint32		hash = hash_combine(hash_bytes((const unsigned char *) order_id, len),
									hash_uint32((uint32) batch_id));

	SET_LOCKTAG_OBJECT(*tag, MyDatabaseId, InvGetCatalog()->ledger_rel, hash, 0);
}

void
LedgerLockKey(const char *order_id, int len, int32 batch_id)
{
	LOCKTAG		tag;

	KeyLockTag(&tag, order_id, len, batch_id);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/* Does this transaction hold the key's lock? */
bool
LedgerKeyLockHeld(const char *order_id, int len, int32 batch_id)
{
	LOCKTAG		tag;

	KeyLockTag(&tag, order_id, len, batch_id);
	return LockHeldByMe(&tag, ExclusiveLock);
}

/* The key's lock if it is free now, to the end of the transaction. */
bool
LedgerTryLockKey(const char *order_id, int len, int32 batch_id)
{
	LOCKTAG		tag;

	KeyLockTag(&tag, order_id, len, batch_id);
	return LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
}

/*
 * The transaction, other than the caller's, that is inserting a row under
 * the key right now without holding the key's lock (an INSERT by hand), or
 * InvalidTransactionId: a dirty read of the key's index, which the express
 * lane's writer does instead of waiting on the unique index.
 */
TransactionId
LedgerKeyInsertInFlight(const char *order_id, int len, int32 batch_id)
{
	const InvCatalog *cat = InvGetCatalog();
	text	   *order_text = cstring_to_text_with_len(order_id, len);
	SnapshotData dirty;
	ScanKeyData keys[2];
	KeyScan		ks;
	TransactionId xid = InvalidTransactionId;

	InitDirtySnapshot(dirty);
	KeyScanOpen(&ks, cat->ledger_rel, cat->ledger_key_index);
	KeyScanTextKey(&ks, &keys[0], order_text);
	ScanKeyEntryInitialize(&keys[1], 0, 2, BTEqualStrategyNumber, InvalidOid,
						   InvalidOid, F_INT4EQ, Int32GetDatum(batch_id));
	KeyScanStart(&ks, &dirty, keys, 2);
	while (KeyScanNext(&ks))
	{
		if (TransactionIdIsValid(dirty.xmin) &&
			!TransactionIdIsCurrentTransactionId(dirty.xmin))
		{
			xid = dirty.xmin;
			break;
		}
	}
	KeyScanEnd(&ks);
	pfree(order_text);
	return xid;
}

/*
 * Waits until the key is free: its lock, and any insert under it in
 * flight, then lets the lock go again.  For an express-lane caller whose
 * item the writer sent back, so that it waits in its own backend.
 */
void
LedgerWaitForKey(const char *order_id, int len, int32 batch_id)
{
	LOCKTAG		tag;
	TransactionId xid;

	KeyLockTag(&tag, order_id, len, batch_id);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	while (TransactionIdIsValid(xid = LedgerKeyInsertInFlight(order_id, len, batch_id)))
		XactLockTableWait(xid, NULL, NULL, XLTW_None);
	LockRelease(&tag, ExclusiveLock, false);
}

/* The ledger's lock for inserts, if no one is in the way now. */
bool
LedgerTryLockForInsert(void)
{
	return ConditionalLockRelationOid(InvGetCatalog()->ledger_rel, RowExclusiveLock);
}

/* Does this transaction hold a lock on the ledger, in any mode? */
bool
LedgerLockHeld(void)
{
	LOCKTAG		tag;

	SET_LOCKTAG_RELATION(tag, MyDatabaseId, InvGetCatalog()->ledger_rel);
	for (LOCKMODE mode = AccessShareLock; mode <= AccessExclusiveLock; mode++)
	{
		if (LockHeldByMe(&tag, mode))
			return true;
	}
	return false;
}

/* Waits until the ledger's lock for inserts is free, then lets it go. */
void
LedgerWaitForInsert(void)
{
	Oid			relid = InvGetCatalog()->ledger_rel;

	LockRelationOid(relid, RowExclusiveLock);
	UnlockRelationOid(relid, RowExclusiveLock);
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
 * A writer of new movements opens the ledger, its indexes and the
 * executor's state at its first row and keeps them to its close: once for
 * a batch of movements (reserve_many, a cart), rather than once per row.
 */
void
LedgerWriterInit(LedgerWriter *w)
{
	w->rel = NULL;
}

static void
LedgerWriterOpen(LedgerWriter *w)
{
	const InvCatalog *cat = InvGetCatalog();
	RangeTblEntry *rte = makeNode(RangeTblEntry);

	w->rel = table_open(cat->ledger_rel, RowExclusiveLock);
	w->estate = CreateExecutorState();
	w->rri = makeNode(ResultRelInfo);

	rte->rtekind = RTE_RELATION;
	rte->relid = RelationGetRelid(w->rel);
	rte->relkind = w->rel->rd_rel->relkind;
	rte->rellockmode = RowExclusiveLock;
	ExecInitRangeTable(w->estate, list_make1(rte));
	InitResultRelInfo(w->rri, w->rel, 1, NULL, 0);
	w->estate->es_opened_result_relations = list_make1(w->rri);
	w->slot = ExecInitExtraTupleSlot(w->estate, RelationGetDescr(w->rel),
									 &TTSOpsVirtual);
	ExecOpenIndices(w->rri, false);
}

/*
 * Writes a new movement, as an INSERT would -- the trigger, the constraints
 * and the indexes all see it -- but without planning and starting a query
 * for one row, in the way logical replication applies a row.  The caller
 * holds the key's lock and has looked the key up.  Each row is a query of
 * its own for the trigger, and is seen by the rows after it.
 */
void
LedgerWriterInsert(LedgerWriter *w, const LedgerNew *m)
{
	const InvCatalog *cat = InvGetCatalog();
	TupleTableSlot *slot;

	if (w->rel == NULL)
		LedgerWriterOpen(w);
	slot = w->slot;
	ResetPerTupleExprContext(w->estate);
	w->estate->es_output_cid = GetCurrentCommandId(true);
	ExecClearTuple(slot);
	memset(slot->tts_isnull, true, RelationGetDescr(w->rel)->natts * sizeof(bool));
#define SET(att, value) \
	(slot->tts_values[(att) - 1] = (value), slot->tts_isnull[(att) - 1] = false)
	SET(cat->l_order_id, PointerGetDatum(m->order_id));
	SET(cat->l_batch_id, Int32GetDatum(m->batch_id));
	SET(cat->l_kind, CStringGetTextDatum(LedgerKindName(m->kind)));
	SET(cat->l_sku, PointerGetDatum(m->sku));
	SET(cat->l_qty, Int64GetDatum(m->qty));
	if (m->has_counted)
		SET(cat->l_counted, Int64GetDatum(m->counted));
	if (m->kind == INV_KIND_RESERVE)
		SET(cat->l_state, InvStateGetDatum(INV_PENDING));
	SET(cat->l_created_at, TimestampTzGetDatum(m->has_created_at ? m->created_at :
											   GetCurrentStatementStartTimestamp()));
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

	AfterTriggerBeginQuery();
	insert_rules_checked = m->rules_checked;
	PG_TRY();
	{
		ExecSimpleRelationInsert(w->rri, w->estate, slot);
		AfterTriggerEndQuery(w->estate);
	}
	PG_FINALLY();
	{
		insert_rules_checked = false;
	}
	PG_END_TRY();

	/* later rows and statements of the transaction see the movement */
	CommandCounterIncrement();
}

void
LedgerWriterClose(LedgerWriter *w)
{
	if (w->rel == NULL)
		return;
	ExecCloseIndices(w->rri);
	ExecResetTupleTable(w->estate->es_tupleTable, false);
	FreeExecutorState(w->estate);
	table_close(w->rel, NoLock);
	w->rel = NULL;
}

/* One new movement. */
void
LedgerInsert(const LedgerNew *m)
{
	LedgerWriter w;

	LedgerWriterInit(&w);
	LedgerWriterInsert(&w, m);
	LedgerWriterClose(&w);
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

	if (unfolded)
		*unfolded = 0;

	/* the base row */
	found = SkuReadBase(sku_text, snapshot, truth, rules);

	/* and its unfolded movements */
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

/*
 * The reservations of an order (of one of its lines when has_batch_id), in
 * the order of batch_id, as the caller's statement sees them: read from the
 * key's index.  Returns how many; *rows is palloc'd, its rows copies that
 * outlive the scan.
 */
int
LedgerOrderReservations(text *order_id, bool has_batch_id, int32 batch_id,
						LedgerRow **rows)
{
	const InvCatalog *cat = InvGetCatalog();
	ScanKeyData keys[2];
	KeyScan		ks;
	int			n = 0;
	int			cap = 4;

	*rows = palloc(cap * sizeof(LedgerRow));
	KeyScanOpen(&ks, cat->ledger_rel, cat->ledger_key_index);
	KeyScanTextKey(&ks, &keys[0], order_id);
	if (has_batch_id)
		ScanKeyEntryInitialize(&keys[1], 0, 2, BTEqualStrategyNumber, InvalidOid,
							   InvalidOid, F_INT4EQ, Int32GetDatum(batch_id));
	KeyScanStart(&ks, GetActiveSnapshot(), keys, has_batch_id ? 2 : 1);
	while (KeyScanNext(&ks))
	{
		LedgerRow	row;

		CHECK_FOR_INTERRUPTS();
		LedgerDecode(ExecCopySlotHeapTuple(ks.slot), RelationGetDescr(ks.heap), &row);
		if (row.kind != INV_KIND_RESERVE)
			continue;
		if (n == cap)
		{
			cap *= 2;
			*rows = repalloc(*rows, cap * sizeof(LedgerRow));
		}
		(*rows)[n++] = row;
	}
	KeyScanEnd(&ks);
	return n;
}
