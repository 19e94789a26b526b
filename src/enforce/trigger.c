/*
 * trigger.c
 *	  The one enforcement point: every write to inventory.sku and
 *	  inventory.ledger -- by the API functions, by the worker, or typed by an
 *	  administrator in psql -- passes inventory_enforce().
 *
 * BEFORE each row it checks the rules (the state machine, the columns that
 * never change, the signs of quantities), fills in what the rules imply
 * (a new reservation is PENDING; settling stamps settled_at), and pins the
 * SKU's cache entry.  AFTER each row -- only rows that really landed, which
 * matters for INSERT ... ON CONFLICT DO NOTHING -- it registers the row's
 * effect on the SKU's counters, taking the escrow hold a decrease of
 * available needs; without enough stock the statement fails.  A change of
 * a SKU's rules is registered in the same way, and a reservation written
 * by hand (not by reserve(), which answers with a status) must follow them
 * (rules.c).  TRUNCATE is refused, and so is a subscription's apply.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "replication/logicalworker.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "enforce/restore.h"
#include "enforce/feed.h"
#include "enforce/rules.h"
#include "inventory.h"
#include "shmem/cache.h"
#include "shmem/cache_stats.h"
#include "shmem/keyfilter.h"
#include "shmem/cache_notify.h"
#include "shmem/pool.h"
#include "tables/catalog.h"
#include "tables/ledger_row.h"
#include "tables/ledger_table.h"
#include "tables/sandbox.h"
#include "tables/stmt.h"
#include "types/state.h"
#include "xact/pending.h"

static void
SkuKey(text *sku, InvKey *key)
{
	LedgerCheckSku(VARDATA_ANY(sku), VARSIZE_ANY_EXHDR(sku));
	CacheMakeKey(key, VARDATA_ANY(sku), VARSIZE_ANY_EXHDR(sku));
}

static void
Immutable(bool changed, const char *column)
{
	if (changed)
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("column \"%s\" of a ledger movement cannot change", column),
				 errdetail("A movement records what happened; only a reservation's state, and its expires_at while PENDING, change.")));
}

static bool
TextEqual(text *a, text *b)
{
	return VARSIZE_ANY_EXHDR(a) == VARSIZE_ANY_EXHDR(b) &&
		memcmp(VARDATA_ANY(a), VARDATA_ANY(b), VARSIZE_ANY_EXHDR(a)) == 0;
}

/* What every movement, new or restored, must be. */
static void
CheckMovement(const LedgerRow *row)
{
	LedgerCheckOrderId(VARDATA_ANY(row->order_id), VARSIZE_ANY_EXHDR(row->order_id));
	if (!row->has_batch_id)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("batch_id must not be null")));
	if (!row->has_qty)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("qty must not be null")));
	if (row->kind != INV_KIND_ADJUST && row->qty <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("qty of a %s must be positive", LedgerKindName(row->kind)),
				 errdetail("The row has qty %lld.", (long long) row->qty)));
	if (row->kind != INV_KIND_RESERVE)
	{
		if (row->has_state || row->has_expires_at || row->has_settled_at ||
			row->settled_by != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("a %s has no state, expires_at, settled_at or settled_by",
							LedgerKindName(row->kind)),
					 errdetail("Only reservations have a lifecycle.")));
		if (row->kind != INV_KIND_ADJUST && row->has_counted)
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("only a stocktake (adjust) has a counted value")));
		if (row->kind == INV_KIND_ADJUST && row->has_counted && row->counted < 0)
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("counted of a stocktake must not be negative")));
	}
	else if (row->has_counted)
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("only a stocktake (adjust) has a counted value")));
	if (row->buyer_id != NULL)
	{
		if (row->kind != INV_KIND_RESERVE)
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("a %s has no buyer_id", LedgerKindName(row->kind)),
					 errdetail("Only reservations are made for a buyer.")));
		LedgerCheckBuyerId(VARDATA_ANY(row->buyer_id), VARSIZE_ANY_EXHDR(row->buyer_id));
	}
}

/*
 * A movement restored by COPY (restore.c) may be in any state and folded,
 * but only as the state machine and the worker leave a movement: a settled
 * reservation has settled_at, no earlier than created_at and, when it
 * expired, no earlier than expires_at, and settled_by one of its values or
 * none (a dump of 0.2 has no settled_by); a PENDING one has neither
 * settled_at, settled_by nor a fold.
 */
static void
CheckRestoredMovement(const LedgerRow *row)
{
	CheckMovement(row);
	if (row->kind != INV_KIND_RESERVE)
		return;
	if (!row->has_state || !row->has_expires_at)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("a restored reservation must have a state and expires_at")));
	if (row->state == INV_PENDING)
	{
		if (row->has_settled_at || row->settled_by != NULL || row->folded)
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("a restored PENDING reservation cannot have settled_at, settled_by or a fold")));
		return;
	}
	if (row->settled_by != NULL && !LedgerSettledByValid(row->settled_by))
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("settled_by of a restored reservation cannot be \"%s\"",
						text_to_cstring(row->settled_by)),
				 errdetail("A reservation is settled by a call, the expiry, a reconciler or a statement.")));
	if (!row->has_settled_at)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("a restored %s reservation must have settled_at",
						InvStateName(row->state))));
	if (row->settled_at < row->created_at)
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("a restored reservation cannot be settled before it was made"),
				 errdetail("It was made at %s and settled at %s.",
						   timestamptz_to_str(row->created_at),
						   pstrdup(timestamptz_to_str(row->settled_at)))));
	if (row->state == INV_EXPIRED && row->settled_at < row->expires_at)
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("a restored reservation cannot have expired before its expires_at"),
				 errdetail("It expires at %s and was expired at %s.",
						   timestamptz_to_str(row->expires_at),
						   pstrdup(timestamptz_to_str(row->settled_at)))));
}

/* What a new movement, inserted by a call or by hand, must be. */
static void
CheckNewMovement(const LedgerRow *row)
{
	CheckMovement(row);
	if (row->folded)
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("a new movement cannot be folded"),
				 errdetail("Only the worker folds settled movements into inventory.sku.")));
	if (row->kind == INV_KIND_RESERVE)
	{
		if (row->state != INV_PENDING)
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("a new reservation must be PENDING, not %s",
							InvStateName(row->state)),
					 errdetail("A reservation is settled by confirm, cancel or expiry after it is made.")));
		if (row->has_settled_at || row->settled_by != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("a new reservation cannot have settled_at or settled_by")));
	}
}

static void
CheckTransition(const LedgerRow *old, const LedgerRow *new, TimestampTz now)
{
	if (!InvStateCanTransition(old->state, new->state))
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("invalid state transition from %s to %s",
						InvStateName(old->state), InvStateName(new->state)),
				 errdetail("A reservation leaves PENDING once; CONFIRMED, CANCELLED and EXPIRED are final.")));
	/* past expires_at: only the answer of a reconciler (reconciler.c) */
	if (new->state == INV_CONFIRMED && new->expires_at <= now && !SandboxLateConfirmAllowed())
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("cannot confirm a reservation past its expires_at"),
				 errdetail("It expired at %s.", timestamptz_to_str(new->expires_at)),
				 errhint("Expire it instead; inventory.confirm() does so and returns status expired.")));
	if (new->state == INV_EXPIRED && new->expires_at > now)
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("cannot expire a reservation before its expires_at"),
				 errdetail("It expires at %s.", timestamptz_to_str(new->expires_at)),
				 errhint("Cancel it instead.")));
}

/*
 * A transaction becomes visible to others a moment before its commit
 * callback adds its changes to the SKUs' counters (pending.c).  One that
 * settles or extends a reservation therefore first waits for the
 * transaction that wrote the row to release its lock, which it does after
 * that callback: the counters never take a reservation out before they
 * have put it in, so reserved is never seen below zero.  An extend waits
 * too, so that whoever settles the row after it waits, through it, for
 * the maker.
 */
static void
WaitForWriter(HeapTuple tuple)
{
	TransactionId xmin = HeapTupleHeaderGetXmin(tuple->t_data);

	if (TransactionIdIsNormal(xmin) && !TransactionIdIsCurrentTransactionId(xmin))
		XactLockTableWait(xmin, NULL, NULL, XLTW_None);
}

static HeapTuple
LedgerBefore(TriggerData *td, const InvCatalog *cat)
{
	TupleDesc	desc = RelationGetDescr(td->tg_relation);
	TriggerEvent ev = td->tg_event;
	TimestampTz now = GetCurrentStatementStartTimestamp();
	LedgerRow new;
	LedgerRow old;
	InvKey		key;
	int			ncols = 0;
	int			cols[3];
	Datum		vals[3];
	bool		nulls[3] = {false, false, false};
	text	   *settler = NULL;

	if (TRIGGER_FIRED_BY_DELETE(ev))
	{
		LedgerDecode(td->tg_trigtuple, desc, &old);
		if (!old.folded)
			ereport(ERROR,
					(errcode(ERRCODE_RESTRICT_VIOLATION),
					 errmsg("cannot delete a ledger movement that is not folded"),
					 errdetail("Its effect is still part of the counters of sku \"%s\".",
							   text_to_cstring(old.sku)),
					 old.kind == INV_KIND_RESERVE && old.state == INV_PENDING ?
					 errhint("Cancel the reservation with inventory.cancel() instead.") :
					 errhint("Settled movements can be deleted once the worker has folded them into inventory.sku.")));
		if (old.buyer_id != NULL && old.state == INV_CONFIRMED)
		{
			InvView		view;

			SkuKey(old.sku, &key);
			if (CacheRead(&key, true, &view) && view.rules.max_per_buyer > 0)
				ereport(ERROR,
						(errcode(ERRCODE_RESTRICT_VIOLATION),
						 errmsg("cannot delete a confirmed reservation of buyer \"%s\"",
								text_to_cstring(old.buyer_id)),
						 errdetail_plural("It counts towards the buyer's limit of %lld unit of sku \"%s\".",
										  "It counts towards the buyer's limit of %lld units of sku \"%s\".",
										  view.rules.max_per_buyer,
										  (long long) view.rules.max_per_buyer, key.sku),
						 errhint("Delete it once the SKU has no limit (inventory.set_rules()).")));
		}
		return td->tg_trigtuple;
	}

	LedgerDecode(td->tg_trigtuple, desc, TRIGGER_FIRED_BY_INSERT(ev) ? &new : &old);

	if (TRIGGER_FIRED_BY_INSERT(ev) && RestoreInProgress(cat->ledger_rel))
	{
		/* history, as pg_dump wrote it: checked, and taken as it is */
		LedgerCheckSku(VARDATA_ANY(new.sku), VARSIZE_ANY_EXHDR(new.sku));
		CheckRestoredMovement(&new);
		KeyFilterAdd(VARDATA_ANY(new.order_id), VARSIZE_ANY_EXHDR(new.order_id),
					 new.batch_id);
		return td->tg_trigtuple;
	}

	if (TRIGGER_FIRED_BY_INSERT(ev))
	{
		SkuKey(new.sku, &key);
		if (new.kind == INV_KIND_RESERVE && !new.has_state)
		{
			new.has_state = true;
			new.state = INV_PENDING;
			cols[ncols] = cat->l_state;
			vals[ncols++] = InvStateGetDatum(INV_PENDING);
		}
		if (new.kind == INV_KIND_RESERVE && !new.has_expires_at)
		{
			new.has_expires_at = true;
			new.expires_at = LedgerDefaultExpiresAt(now);
			cols[ncols] = cat->l_expires_at;
			vals[ncols++] = TimestampTzGetDatum(new.expires_at);
		}
		CheckNewMovement(&new);
		/* the key's bits are set before its row can be seen (keyfilter.c) */
		KeyFilterAdd(VARDATA_ANY(new.order_id), VARSIZE_ANY_EXHDR(new.order_id),
					 new.batch_id);
	}
	else
	{
		LedgerDecode(td->tg_newtuple, desc, &new);
		SkuKey(old.sku, &key);
		if (old.kind == INV_KIND_RESERVE && old.state == INV_PENDING)
			WaitForWriter(td->tg_trigtuple);

		if (old.folded)
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("a folded ledger movement cannot change"),
					 errdetail("Its effect is part of the base counters in inventory.sku.")));
		Immutable(!TextEqual(old.order_id, new.order_id), "order_id");
		Immutable(old.batch_id != new.batch_id || !new.has_batch_id, "batch_id");
		Immutable(old.kind != new.kind, "kind");
		Immutable(!TextEqual(old.sku, new.sku), "sku");
		Immutable(old.qty != new.qty || !new.has_qty, "qty");
		Immutable(old.has_counted != new.has_counted || old.counted != new.counted, "counted");
		Immutable(old.has_created_at != new.has_created_at || old.created_at != new.created_at, "created_at");
		Immutable((old.buyer_id == NULL) != (new.buyer_id == NULL) ||
				  (old.buyer_id != NULL && !TextEqual(old.buyer_id, new.buyer_id)), "buyer_id");

		if (new.folded)
		{
			if (!SandboxFolding())
				ereport(ERROR,
						(errcode(ERRCODE_CHECK_VIOLATION),
						 errmsg("only the worker folds ledger movements"),
						 errdetail("Folding moves a movement's effect into inventory.sku.")));
			if (old.kind == INV_KIND_RESERVE && old.state == INV_PENDING)
				elog(ERROR, "inventory: cannot fold a PENDING reservation");
		}

		if (old.kind != INV_KIND_RESERVE)
		{
			Immutable(new.has_state || new.has_expires_at || new.has_settled_at ||
					  new.settled_by != NULL, "state");
		}
		else if (!new.has_state)
			ereport(ERROR,
					(errcode(ERRCODE_NOT_NULL_VIOLATION),
					 errmsg("the state of a reservation must not be null")));
		else if (new.state != old.state)
		{
			CheckTransition(&old, &new, now);

			/*
			 * The statement's start, unless it waited for the key while the
			 * reservation was being made: nothing settles before it exists.
			 */
			cols[ncols] = cat->l_settled_at;
			vals[ncols++] = TimestampTzGetDatum(Max(now, old.created_at));
			/* what settles it: a call, the expiry, a reconciler, a statement */
			if (cat->l_settled_by != InvalidAttrNumber)
			{
				settler = cstring_to_text(LedgerSettledByName(SandboxSettledBy()));
				cols[ncols] = cat->l_settled_by;
				vals[ncols++] = PointerGetDatum(settler);
			}
		}
		else
		{
			if (!new.has_expires_at)
				ereport(ERROR,
						(errcode(ERRCODE_NOT_NULL_VIOLATION),
						 errmsg("expires_at of a reservation must not be null")));
			if (new.expires_at != old.expires_at && old.state != INV_PENDING)
				ereport(ERROR,
						(errcode(ERRCODE_CHECK_VIOLATION),
						 errmsg("cannot change expires_at of a %s reservation",
								InvStateName(old.state)),
						 errdetail("Only a PENDING reservation can be extended.")));
			Immutable(new.has_settled_at != old.has_settled_at ||
					  new.settled_at != old.settled_at, "settled_at");
			Immutable((old.settled_by == NULL) != (new.settled_by == NULL) ||
					  (old.settled_by != NULL && !TextEqual(old.settled_by, new.settled_by)),
					  "settled_by");
		}
	}

	/* a fold changes no counter, so it pins nothing (see maintenance/fold.c) */
	if (!new.folded)
		PendingPin(&key);

	if (ncols == 0)
		return TRIGGER_FIRED_BY_INSERT(ev) ? td->tg_trigtuple : td->tg_newtuple;
	return heap_modify_tuple_by_cols(TRIGGER_FIRED_BY_INSERT(ev) ? td->tg_trigtuple : td->tg_newtuple,
									 desc, ncols, cols, vals, nulls);
}

/* Tells the workers when the row needs them, once it commits. */
static void
NoteDue(const LedgerRow *row, bool to_fold)
{
	if (row->kind == INV_KIND_RESERVE && row->state == INV_PENDING && row->has_expires_at)
		PoolNoteDue(row->expires_at);
	if (to_fold)
		PoolNoteFoldDue(GetCurrentStatementStartTimestamp());
}

static void
NoteRestoredDue(const LedgerRow *row)
{
	NoteDue(row, !row->folded && LedgerRowIsSettled(row));
}

static void
LedgerAfter(TriggerData *td, const InvCatalog *cat)
{
	TupleDesc	desc = RelationGetDescr(td->tg_relation);
	TriggerEvent ev = td->tg_event;
	LedgerRow old;
	LedgerRow new;
	InvEffect	eold = {0, 0, 0};
	InvEffect	enew = {0, 0, 0};
	InvRowChange rc;
	InvKey		key;

	if (TRIGGER_FIRED_BY_DELETE(ev))
		return;					/* only folded rows are deleted: no effect */

	memset(&rc, 0, sizeof(rc));
	if (TRIGGER_FIRED_BY_INSERT(ev))
	{
		LedgerDecode(td->tg_trigtuple, desc, &new);
		SkuKey(new.sku, &key);
		if (RestoreInProgress(cat->ledger_rel))
		{
			/* the cache learns of restored rows once the restore commits */
			NoteRestoredDue(&new);
			return;
		}
		if (!PendingSkuExists(&key))
			ereport(ERROR,
					(errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
					 errmsg("sku \"%s\" does not exist", key.sku),
					 errhint("Create it with inventory.restock() or by inserting it into inventory.sku.")));
		switch (new.kind)
		{
			case INV_KIND_RESERVE:
				rc.counts.moves[INV_MOVE_RESERVE] = 1;
				rc.counts.held_units = new.qty;
				break;
			case INV_KIND_RESTOCK:
				rc.counts.moves[INV_MOVE_RESTOCK] = 1;
				break;
			case INV_KIND_ADJUST:
				rc.counts.moves[INV_MOVE_STOCKTAKE] = 1;
				break;
			case INV_KIND_WITHDRAW:
				rc.counts.moves[INV_MOVE_WITHDRAW] = 1;
				break;
		}
		/* a restock, a stocktake or a withdrawal is settled when made */
		rc.unfolded = LedgerRowIsSettled(&new) ? 1 : 0;
		if (new.kind == INV_KIND_RESERVE && !LedgerInsertRulesChecked())
		{
			InvView		view;

			CacheView(PendingPin(&key), &view);
			RulesCheckNewReservation(new.sku, new.buyer_id, &view.rules,
									 GetCurrentStatementStartTimestamp());
		}
	}
	else
	{
		LedgerDecode(td->tg_trigtuple, desc, &old);
		LedgerDecode(td->tg_newtuple, desc, &new);
		SkuKey(new.sku, &key);
		if (new.folded)
		{
			/* the fold moves the effect into the base: nothing changes */
			CacheNoteFolded(&key);
			return;
		}
		LedgerRowEffect(&old, &eold);
		if (new.kind == INV_KIND_RESERVE && old.state != new.state)
		{
			if (new.state == INV_CONFIRMED)
			{
				rc.counts.moves[INV_MOVE_CONFIRM] = 1;
				rc.counts.sold_units = new.qty;
			}
			else if (new.state == INV_CANCELLED)
				rc.counts.moves[INV_MOVE_CANCEL] = 1;
			else if (new.state == INV_EXPIRED)
				rc.counts.moves[INV_MOVE_EXPIRE] = 1;
		}
		else if (new.kind == INV_KIND_RESERVE && new.state == INV_PENDING &&
				 (new.has_expires_at != old.has_expires_at ||
				  new.expires_at != old.expires_at))
			rc.counts.moves[INV_MOVE_EXTEND] = 1;
		rc.unfolded = LedgerRowIsSettled(&new) && !LedgerRowIsSettled(&old) ? 1 : 0;
	}
	LedgerRowEffect(&new, &enew);

	InvEffectDiff(&rc.delta, &enew, &eold);
	PendingRowChange(&key, &rc);
	NoteDue(&new, rc.unfolded > 0);
	/* a reservation made or settled: the change feed's (feed.c) */
	if (inv_change_feed && new.kind == INV_KIND_RESERVE &&
		(TRIGGER_FIRED_BY_INSERT(ev) || old.state != new.state))
		FeedAppend(&new);
}

/*
 * Does the SKU have any ledger rows?  Read with a fresh snapshot: a movement
 * committed after this statement began must count, at any isolation level.
 */
static InvStmt sku_movements = {
	"SELECT 1 FROM inventory.ledger WHERE sku OPERATOR(pg_catalog.=) $1 LIMIT 1",
	1, {TEXTOID}
};

static bool
SkuHasMovements(const char *sku)
{
	Datum		arg = CStringGetTextDatum(sku);
	int			spi = InvSpiConnect();
	bool		found;

	found = InvStmtRun(&sku_movements, &arg, NULL, true, 1) > 0;
	InvSpiFinish(spi);
	return found;
}

static void
GetSkuRow(const InvCatalog *cat, HeapTuple tup, TupleDesc desc,
		  text **sku, int64 *on_hand, int64 *version, InvRules *rules)
{
	bool		isnull;
	Datum		d;

	*sku = CatalogNotNullText(tup, desc, cat->s_sku, "sku");
	d = heap_getattr(tup, cat->s_on_hand, desc, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("on_hand must not be null")));
	*on_hand = DatumGetInt64(d);
	d = heap_getattr(tup, cat->s_version, desc, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("version must not be null")));
	*version = DatumGetInt64(d);
	SkuDecodeRules(tup, desc, rules);
}

static HeapTuple
SkuBefore(TriggerData *td, const InvCatalog *cat)
{
	TupleDesc	desc = RelationGetDescr(td->tg_relation);
	TriggerEvent ev = td->tg_event;
	text	   *sku;
	int64		on_hand;
	int64		version;
	InvRules	rules;
	InvKey		key;

	GetSkuRow(cat, td->tg_trigtuple, desc, &sku, &on_hand, &version, &rules);
	SkuKey(sku, &key);

	if (TRIGGER_FIRED_BY_INSERT(ev))
	{
		/*
		 * A restored base may be below zero: folds take settled movements in
		 * no particular order, so a sale can be folded before the restock
		 * that supplied it.  The ledger restored after it brings the SKU back
		 * within bounds, or that restore fails.
		 */
		bool		restoring = RestoreInProgress(cat->sku_rel);

		if (version < 0 || (on_hand < 0 && !restoring))
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("on_hand and version of a new sku must not be negative")));
		if (!restoring)
			PendingPin(&key);
		return td->tg_trigtuple;
	}

	if (TRIGGER_FIRED_BY_DELETE(ev))
	{
		/*
		 * Look for movements before and after marking the SKU as being
		 * deleted: before, to give the plain answer; after, because no new
		 * movement can start once the mark is there.
		 */
		for (int pass = 0; pass < 2; pass++)
		{
			if (SkuHasMovements(key.sku))
				ereport(ERROR,
						(errcode(ERRCODE_RESTRICT_VIOLATION),
						 errmsg("cannot delete sku \"%s\": it has movements in the ledger", key.sku),
						 errhint("Set its stock to zero with inventory.adjust() instead.")));
			if (pass == 0)
			{
				PendingPin(&key);
				PendingMarkDropping(&key);
			}
		}
		return td->tg_trigtuple;
	}

	/* UPDATE */
	{
		text	   *new_sku;
		int64		new_on_hand;
		int64		new_version;
		InvRules	new_rules;

		GetSkuRow(cat, td->tg_newtuple, desc, &new_sku, &new_on_hand, &new_version,
				  &new_rules);
		if (!TextEqual(sku, new_sku))
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("a sku cannot be renamed"),
					 errdetail("Its movements in the ledger refer to it by name.")));
		if ((new_on_hand != on_hand || new_version != version) && !SandboxFolding())
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("on_hand and version of inventory.sku change only through the ledger"),
					 errdetail("They are the base into which the worker folds settled movements."),
					 errhint("Use inventory.adjust() for a stocktake or inventory.restock() to add units.")));
		/* new rules reach the cache when the transaction commits */
		if (!InvRulesEqual(&rules, &new_rules))
			PendingPin(&key);
		return td->tg_newtuple;
	}
}


/*
 * A window whose edges are ahead: with inventory.stock_notifications on,
 * the database's notifications fall due at each, so that a worker tells
 * LISTEN inventory_stock when it opens and when it closes
 * (worker/notify.c).  Published at commit (pool.c).
 */
static void
NoteEdgesAhead(const InvRules *rules)
{
	TimestampTz now = GetCurrentTimestamp();

	if (!inv_stock_notifications)
		return;
	if (!TIMESTAMP_NOT_FINITE(rules->sale_starts) && rules->sale_starts > now)
		PoolNoteNotify(rules->sale_starts);
	if (!TIMESTAMP_NOT_FINITE(rules->sale_ends) && rules->sale_ends > now)
		PoolNoteNotify(rules->sale_ends);
}

static void
SkuAfter(TriggerData *td, const InvCatalog *cat)
{
	TupleDesc	desc = RelationGetDescr(td->tg_relation);
	TriggerEvent ev = td->tg_event;
	text	   *sku;
	int64		on_hand;
	int64		version;
	InvRules	rules;
	InvRowChange rc;
	InvKey		key;

	/* the cache learns of restored rows once the restore commits */
	if (TRIGGER_FIRED_BY_INSERT(ev) && RestoreInProgress(cat->sku_rel))
		return;

	GetSkuRow(cat, td->tg_trigtuple, desc, &sku, &on_hand, &version, &rules);
	SkuKey(sku, &key);

	memset(&rc, 0, sizeof(rc));
	if (TRIGGER_FIRED_BY_UPDATE(ev))
	{
		InvRules	new_rules;

		/* the fold changes the base, which changes no counter; rules change */
		GetSkuRow(cat, td->tg_newtuple, desc, &sku, &on_hand, &version, &new_rules);
		if (InvRulesEqual(&rules, &new_rules))
			return;
		rc.has_rules = true;
		rc.rules = new_rules;
	}
	else if (TRIGGER_FIRED_BY_INSERT(ev))
	{
		rc.delta.on_hand = on_hand;
		rc.delta.version = version;
		rc.exists = 1;
		rc.has_rules = true;
		rc.rules = rules;
	}
	else
	{
		rc.delta.on_hand = -on_hand;
		rc.delta.version = -version;
		rc.exists = -1;
	}
	PendingRowChange(&key, &rc);
	/* the ledger may hold movements restored before the SKU's row */
	if (rc.exists > 0)
		PendingCheckBounds(&key);
	if (rc.has_rules)
		NoteEdgesAhead(&rc.rules);
}

PG_FUNCTION_INFO_V1(inventory_enforce);
Datum
inventory_enforce(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	const InvCatalog *cat;
	Oid			relid;
	bool		ledger;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("inventory.enforce() must be called as a trigger")));

	cat = InvGetCatalog();
	relid = RelationGetRelid(td->tg_relation);
	if (relid != cat->ledger_rel && relid != cat->sku_rel)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("inventory.enforce() guards only inventory.sku and inventory.ledger")));
	ledger = (relid == cat->ledger_rel);
	SandboxRefuse();

	/*
	 * A subscription's workers copy and apply another server's rows: its
	 * history, its folds, its expiries.  Taken as new movements they would
	 * be refused half-way; taken as they are, they would change counters
	 * that this server's cache and worker act on.  Neither is supported.
	 */
	if (IsLogicalWorker())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("logical replication of %s is not supported",
						ledger ? "inventory.ledger" : "inventory.sku"),
				 errdetail("A subscription would write another server's movements and counters past this server's cache."),
				 errhint("Leave the inventory tables out of the publication (FOR TABLE, or FOR TABLES IN SCHEMA of the other schemas); a physical standby replicates them, and pg_dump or pg_upgrade moves them.")));

	if (TRIGGER_FIRED_BY_TRUNCATE(td->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_RESTRICT_VIOLATION),
				 errmsg("cannot truncate %s", ledger ? "inventory.ledger" : "inventory.sku"),
				 ledger ?
				 errdetail("It would lose reservations and the keys that make retried calls safe.") :
				 errdetail("It would lose the SKUs that the ledger's movements belong to."),
				 errhint("To remove all inventory data of this database, drop the extension.")));

	if (!TRIGGER_FIRED_FOR_ROW(td->tg_event))
		PG_RETURN_NULL();

	if (TRIGGER_FIRED_BEFORE(td->tg_event))
	{
		HeapTuple	result = ledger ? LedgerBefore(td, cat) : SkuBefore(td, cat);

		return PointerGetDatum(result);
	}

	if (ledger)
		LedgerAfter(td, cat);
	else
		SkuAfter(td, cat);
	return PointerGetDatum(NULL);
}
