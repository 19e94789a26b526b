/*
 * pending.c
 *	  A transaction's pending changes to SKUs, and the transaction callbacks
 *	  that apply them at commit and drop them at abort.
 *
 * Every change to a SKU -- whoever makes it, through whichever path -- first
 * pins the SKU's cache entry (PendingPin), then lands its row, and then the
 * trigger registers the row's effect (PendingRowChange).  A change that takes
 * units out of available needs an escrow hold, taken at once in shared
 * memory; reserve() and adjust() take it before they write their row (a
 * "prepaid" hold) so that a refusal writes nothing, and the trigger then
 * binds it to the row.  At commit the effects are applied to the cache and
 * the holds returned; at abort only the holds are returned.
 *
 * Changes are recorded per SKU and per subtransaction, in creation order, so
 * the records of the innermost subtransaction are always at the tail of the
 * array: rolling back a savepoint pops them, releasing their holds; releasing
 * one folds them into the parent's records.
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/int.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "fault.h"
#include "shmem/cache.h"
#include "shmem/cache_notify.h"
#include "shmem/cache_restore.h"
#include "shmem/escrow.h"
#include "shmem/metrics.h"
#include "shmem/pool.h"
#include "xact/pending.h"

/* A SKU this transaction pins. */
typedef struct Touched
{
	InvKey		key;			/* hash key: must be first */
	InvEntry   *entry;
	int			last;			/* its latest change record, or -1 */
	bool		dropping;		/* this transaction deletes its sku row */
	SubTransactionId pin_subid; /* subtransaction that pinned it */
	SubTransactionId drop_subid;	/* subtransaction that set dropping */
	InvTxnEnd	end;			/* filled at the end of the transaction */
} Touched;

/* A SKU's changes within one subtransaction. */
typedef struct Change
{
	Touched    *sku;
	SubTransactionId subid;
	int			prev;			/* the SKU's previous record, or -1 */
	InvEffect	delta;			/* applied at commit */
	int64		hold;			/* taken in shared memory */
	int64		prepaid;		/* part of hold not yet bound to a row */
	int64		adopted;		/* part of hold that an express slot took */
	int64		incoming;		/* registered in shared memory */
	int			exists;
	int64		unfolded;
	bool		has_rules;		/* applied at commit, the latest winning */
	InvRules	rules;
	InvCounters counts;
} Change;

static HTAB *touched_hash = NULL;
static Touched **touched = NULL;
static int	ntouched = 0;
static int	touched_cap = 0;

static Change *changes = NULL;
static int	nchanges = 0;
static int	changes_cap = 0;

static void
EnsureState(void)
{
	HASHCTL		ctl;

	if (touched_hash != NULL)
		return;
	ctl.keysize = sizeof(InvKey);
	ctl.entrysize = sizeof(Touched);
	ctl.hcxt = TopMemoryContext;
	touched_hash = hash_create("inventory pending SKUs", 16, &ctl,
							   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	touched_cap = 16;
	touched = MemoryContextAlloc(TopMemoryContext, touched_cap * sizeof(Touched *));
	changes_cap = 16;
	changes = MemoryContextAlloc(TopMemoryContext, changes_cap * sizeof(Change));
}

static Touched *
TouchedFind(const InvKey *key)
{
	Touched    *t;

	if (ntouched == 0)
		return NULL;
	t = hash_search(touched_hash, key, HASH_FIND, NULL);
	/* a SKU prepared by a call that then failed is not pinned */
	return (t != NULL && t->entry != NULL) ? t : NULL;
}

/*
 * Makes room for a SKU about to be pinned, so that nothing can fail between
 * the pin in shared memory and TouchedAdd(): a pin that is not recorded
 * would never be released.  If the pin fails instead, the prepared SKU stays
 * in the hash with no entry until the end of the transaction.
 */
static Touched *
TouchedPrepare(const InvKey *key)
{
	Touched    *t;

	if (ntouched == touched_cap)
	{
		touched_cap *= 2;
		touched = repalloc(touched, touched_cap * sizeof(Touched *));
	}
	t = hash_search(touched_hash, key, HASH_ENTER, NULL);
	t->entry = NULL;
	return t;
}

/* Records that the transaction now pins the prepared SKU's entry. */
static void
TouchedAdd(Touched *t, InvEntry *entry)
{
	t->entry = entry;
	t->last = -1;
	t->dropping = false;
	t->pin_subid = GetCurrentSubTransactionId();
	t->drop_subid = InvalidSubTransactionId;
	memset(&t->end, 0, sizeof(InvTxnEnd));
	touched[ntouched++] = t;
}

/*
 * Unpins the most recently pinned SKU, whose records have all been undone
 * or were never made: the transaction has nothing in flight for it, so
 * other transactions' version checks must not count it.
 */
static void
TouchedUnpinLast(void)
{
	Touched    *t = touched[--ntouched];
	InvTxnEnd	end;

	Assert(t->last < 0);
	memset(&end, 0, sizeof(end));
	end.was_dropping = t->dropping;
	EscrowEndTxn(t->entry, &end);
	hash_search(touched_hash, &t->key, HASH_REMOVE, NULL);
}

/* Rules set by a later change replace those set by an earlier one. */
static inline void
TakeLaterRules(bool *has_rules, InvRules *rules, bool later_has, const InvRules *later)
{
	if (later_has)
	{
		*has_rules = true;
		*rules = *later;
	}
}

static bool
ChangeIsEmpty(const Change *c)
{
	return c->delta.on_hand == 0 && c->delta.reserved == 0 &&
		c->delta.version == 0 && c->hold == 0 && c->incoming == 0 &&
		c->exists == 0 && c->unfolded == 0 && !c->has_rules;
}

/*
 * Records a pin (with a hold of qty) that EscrowAdmit() has just taken, or,
 * if recording fails, gives both back before the error goes on.
 */
static Touched *
TouchedAddOrGiveBack(const InvKey *key, InvEntry *entry, int64 qty)
{
	Touched    *volatile t = NULL;

	PG_TRY();
	{
		t = TouchedPrepare(key);
	}
	PG_CATCH();
	{
		InvTxnEnd	undo;

		memset(&undo, 0, sizeof(undo));
		undo.hold = qty;
		EscrowEndTxn(entry, &undo);
		PG_RE_THROW();
	}
	PG_END_TRY();
	TouchedAdd(t, entry);
	return t;
}

/* The SKU's record for the current subtransaction, created on demand. */
static Change *
CurrentChange(Touched *t)
{
	SubTransactionId subid = GetCurrentSubTransactionId();
	Change	   *c;

	if (t->last >= 0 && changes[t->last].subid == subid)
		return &changes[t->last];

	if (nchanges == changes_cap)
	{
		changes_cap *= 2;
		changes = repalloc(changes, changes_cap * sizeof(Change));
	}
	c = &changes[nchanges];
	memset(c, 0, sizeof(Change));
	c->sku = t;
	c->subid = subid;
	c->prev = t->last;
	t->last = nchanges++;
	return c;
}

/*
 * Pins the SKU's entry for a change about to be written, loading it if
 * needed.  The first pin of a SKU must come before the transaction's first
 * row for it lands, so that a load never sees the transaction's own rows.
 */
InvEntry *
PendingPin(const InvKey *key)
{
	Touched    *t;
	InvEntry   *entry;

	EnsureState();
	t = TouchedFind(key);
	if (t != NULL)
		return t->entry;

	t = TouchedPrepare(key);
	entry = CachePin(key);
	TouchedAdd(t, entry);
	return entry;
}

/*
 * EscrowAdmit() for a SKU this transaction may pin (t): a SKU it created has
 * no units until it commits, so it is short of stock rather than unknown.
 */
static InvAdmit
Admit(const InvKey *key, Touched *t, InvEntry **entry, int64 qty,
	  const int64 *expected_version, const InvSale *sale, bool hold,
	  InvView *view)
{
	InvAdmit	result;

	*entry = t ? t->entry : NULL;
	result = EscrowAdmit(key, entry, qty, expected_version, sale, hold, view);
	if (t != NULL && result == INV_ADMIT_UNKNOWN && PendingSkuExists(key))
	{
		/* created by this transaction: it exists, with nothing on sale yet */
		result = INV_ADMIT_INSUFFICIENT;
		view->exists = true;
	}
	return result;
}

/*
 * reserve()'s admission: takes a hold of qty ahead of the reservation's row.
 * A refusal pins nothing and records nothing.
 */
InvAdmit
PendingReserve(const InvKey *key, int64 qty, const int64 *expected_version,
			   const InvSale *sale, InvView *view)
{
	Touched    *t;
	InvEntry   *entry;
	InvAdmit	result;
	Change	   *c;

	EnsureState();
	if (nchanges == changes_cap)
	{
		changes_cap *= 2;
		changes = repalloc(changes, changes_cap * sizeof(Change));
	}
	t = TouchedFind(key);
	result = Admit(key, t, &entry, qty, expected_version, sale, true, view);
	if (result != INV_ADMIT_OK)
		return result;

	if (t == NULL)
		t = TouchedAddOrGiveBack(key, entry, qty);
	c = CurrentChange(t);
	c->hold += qty;
	c->prepaid += qty;
	return result;
}

/*
 * The express lane's writer adopts a hold of qty that a reserve_now()
 * caller took on the SKU's entry, ahead of the row that will bind it, as
 * reserve() takes its own: at commit the row keeps the units and the hold
 * returns.  At abort the hold is not returned: it goes back to the caller's
 * slot, whose item is written again or fails (shmem/express.c).
 */
void
PendingAdopt(const InvKey *key, int64 qty)
{
	Change	   *c;

	(void) PendingPin(key);
	c = CurrentChange(TouchedFind(key));
	c->hold += qty;
	c->prepaid += qty;
	c->adopted += qty;
}

/* What PendingReserve() would answer now, without taking anything. */
InvAdmit
PendingAsk(const InvKey *key, int64 qty, const InvSale *sale, InvView *view)
{
	InvEntry   *entry;

	EnsureState();
	return Admit(key, TouchedFind(key), &entry, qty, NULL, sale, false, view);
}

/* adjust()'s admission: see EscrowStocktake(). */
InvAdmit
PendingStocktake(const InvKey *key, int64 counted,
				 const int64 *expected_version, int64 *delta, InvView *view)
{
	InvEntry   *entry = PendingPin(key);
	Touched    *t = TouchedFind(key);
	Change	   *c = CurrentChange(t);
	InvEffect	own;
	InvAdmit	result;

	PendingOwnDelta(key, &own);
	result = EscrowStocktake(entry, PendingSkuExists(key), counted, own.on_hand,
							 expected_version, delta, view);
	if (result == INV_ADMIT_OK && *delta < 0)
	{
		c->hold += -*delta;
		c->prepaid += -*delta;
	}
	return result;
}

/* Returns a prepaid hold whose row did not land (its key was taken). */
void
PendingDropUnbound(const InvKey *key)
{
	Touched    *t = TouchedFind(key);
	Change	   *c;

	if (t == NULL || t->last < 0)
		return;
	c = &changes[t->last];
	if (c->subid != GetCurrentSubTransactionId() || c->prepaid == 0)
		return;
	EscrowRelease(t->entry, c->prepaid, 0);
	c->hold -= c->prepaid;
	c->prepaid = 0;
}

/* Where a call starts; see PendingUnpinSince(). */
int
PendingMark(void)
{
	return ntouched;
}

/*
 * A call that pinned the SKU (after mark) and in the end changed nothing --
 * a refusal, or a replay whose key turned out to be taken -- unpins it again.
 */
void
PendingUnpinSince(const InvKey *key, int mark)
{
	Touched    *t = TouchedFind(key);

	if (t == NULL || ntouched <= mark || touched[ntouched - 1] != t)
		return;
	for (int i = t->last; i >= 0; i = changes[i].prev)
	{
		if (!ChangeIsEmpty(&changes[i]))
			return;
	}
	/* the call touched only this SKU, so its empty records are the tail */
	while (t->last >= 0)
	{
		if (t->last != nchanges - 1)
			return;
		t->last = changes[t->last].prev;
		nchanges--;
	}
	TouchedUnpinLast();
}

/* Where a call starts in the change records; see PendingGiveBack(). */
int
PendingChangesMark(void)
{
	return nchanges;
}

/*
 * A call that took prepaid holds on several SKUs (a cart) and then wrote
 * nothing gives them all back: the holds, the records it made and the pins
 * it took, so that the transaction is left as the call found it.
 */
void
PendingGiveBack(const InvKey *keys, int nkeys, int mark, int changes_mark)
{
	for (int i = 0; i < nkeys; i++)
		PendingDropUnbound(&keys[i]);
	while (nchanges > changes_mark && ChangeIsEmpty(&changes[nchanges - 1]))
	{
		Change	   *c = &changes[nchanges - 1];

		c->sku->last = c->prev;
		nchanges--;
	}
	while (ntouched > mark && touched[ntouched - 1]->last < 0)
		TouchedUnpinLast();
}

static void
RaiseInsufficient(const InvKey *key, int64 need, const InvView *view)
{
	if (!view->exists)
		ereport(ERROR,
				(errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
				 errmsg("sku \"%s\" does not exist", key->sku),
				 errhint("Create it with inventory.restock() or by inserting it into inventory.sku.")));
	ereport(ERROR,
			(errcode(ERRCODE_CHECK_VIOLATION),
			 errmsg("not enough stock of sku \"%s\"", key->sku),
			 errdetail_plural("The change takes %lld unit out of available, which has %lld.",
							  "The change takes %lld units out of available, which has %lld.",
							  need, (long long) need,
							  (long long) InvViewAvailable(view))));
}

/*
 * Registers the effect of one row change; called by the trigger after the
 * row has landed.  A change that lowers available binds a prepaid hold or
 * takes a new one, and fails if there is not enough; a change that raises
 * on_hand registers it as incoming, and fails if on_hand would overflow.
 */
void
PendingRowChange(const InvKey *key, const InvRowChange *rc)
{
	Touched    *t = TouchedFind(key);
	Change	   *c;
	int64		need;

	if (t == NULL)
		elog(ERROR, "inventory: change to sku \"%s\" was not pinned", key->sku);
	c = CurrentChange(t);

	need = -(rc->delta.on_hand - rc->delta.reserved);
	if (need > 0)
	{
		if (c->prepaid >= need)
			c->prepaid -= need;
		else
		{
			InvEntry   *entry = t->entry;
			InvView		view;

			if (EscrowAdmit(key, &entry, need, NULL, NULL, true, &view) != INV_ADMIT_OK)
				RaiseInsufficient(key, need, &view);
			c->hold += need;
		}
	}
	if (rc->delta.on_hand > 0)
	{
		EscrowAddIncoming(t->entry, rc->delta.on_hand);
		c->incoming += rc->delta.on_hand;
	}

	InvEffectAdd(&c->delta, &rc->delta);
	c->exists += rc->exists;
	c->unfolded += rc->unfolded;
	TakeLaterRules(&c->has_rules, &c->rules, rc->has_rules, &rc->rules);
	InvCountersAdd(&c->counts, &rc->counts);
}

/* This transaction's own, uncommitted changes to the SKU. */
bool
PendingOwnDelta(const InvKey *key, InvEffect *delta)
{
	Touched    *t = TouchedFind(key);

	memset(delta, 0, sizeof(InvEffect));
	if (t == NULL)
		return false;
	for (int i = t->last; i >= 0; i = changes[i].prev)
		InvEffectAdd(delta, &changes[i].delta);
	return true;
}

/*
 * What this transaction's own changes to sku will add to its available
 * units when it commits, beyond what the live count already shows: the
 * units it adds (a restock, a cancel, a stocktake up), which count only
 * once it commits, and nothing for the units it takes, which its holds
 * already keep out of the live count.  Zero when it has not touched sku.
 */
int64
PendingOwnAvailable(text *sku)
{
	InvKey		key;
	Touched    *t;
	int64		sum = 0;

	if (ntouched == 0)
		return 0;
	CacheMakeKey(&key, VARDATA_ANY(sku), VARSIZE_ANY_EXHDR(sku));
	t = TouchedFind(&key);
	if (t == NULL)
		return 0;
	for (int i = t->last; i >= 0; i = changes[i].prev)
	{
		const Change *c = &changes[i];

		/*
		 * At commit on_hand and reserved move by delta and the holds bound
		 * to rows return.  A prepaid hold is for a row still to land: it
		 * stays out of available, as that row will keep it.
		 */
		if (pg_add_s64_overflow(sum, c->delta.on_hand, &sum) ||
			pg_sub_s64_overflow(sum, c->delta.reserved, &sum) ||
			pg_add_s64_overflow(sum, c->hold - c->prepaid, &sum))
			return 0;
	}
	return sum;
}

/* Does the SKU exist as this transaction sees it (committed or its own)? */
bool
PendingSkuExists(const InvKey *key)
{
	Touched    *t = TouchedFind(key);
	InvView		view;
	int			exists = 0;

	if (t == NULL)
		elog(ERROR, "inventory: sku \"%s\" was not pinned", key->sku);
	CacheView(t->entry, &view);
	for (int i = t->last; i >= 0; i = changes[i].prev)
		exists += changes[i].exists;
	return view.exists ? exists >= 0 : exists > 0;
}

/* The transaction is deleting the SKU's row; see EscrowSetDropping(). */
void
PendingMarkDropping(const InvKey *key)
{
	Touched    *t = TouchedFind(key);

	if (t == NULL)
		elog(ERROR, "inventory: sku \"%s\" was not pinned", key->sku);
	if (t->dropping)
		return;
	if (!EscrowSetDropping(t->entry, true))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("sku \"%s\" is in use by another transaction", key->sku),
				 errhint("Retry when its reservations, restocks and stocktakes in flight have ended.")));
	t->dropping = true;
	t->drop_subid = GetCurrentSubTransactionId();
}

/*
 * A SKU's row has just been inserted: with the movements the ledger may
 * already hold for it -- a restore can load the ledger before the SKUs --
 * is it within bounds?  Fails when those movements take more than it has.
 */
void
PendingCheckBounds(const InvKey *key)
{
	Touched    *t = TouchedFind(key);
	InvEffect	own;
	int64		own_holds = 0;
	InvView		after;

	if (t == NULL)
		elog(ERROR, "inventory: sku \"%s\" was not pinned", key->sku);
	PendingOwnDelta(key, &own);
	for (int i = t->last; i >= 0; i = changes[i].prev)
		own_holds += changes[i].hold;
	if (!EscrowCheckBounds(t->entry, &own, own_holds, &after))
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("movements of sku \"%s\" do not add up with its row", key->sku),
				 errdetail("With them the SKU would have on_hand %lld and reserved %lld, which leaves %lld available.",
						   (long long) after.on_hand, (long long) after.reserved,
						   (long long) InvViewAvailable(&after)),
				 errhint("The ledger holds movements of this SKU that were restored without its row in inventory.sku; restore that row from the same dump.")));
}

/* Undoes the records of an aborted subtransaction. */
static void
UndoSubtransaction(SubTransactionId subid)
{
	while (nchanges > 0 && changes[nchanges - 1].subid >= subid)
	{
		Change	   *c = &changes[nchanges - 1];

		/* an adopted hold goes back to its slot, which still has it */
		if (c->hold - c->adopted != 0 || c->incoming != 0)
			EscrowRelease(c->sku->entry, c->hold - c->adopted, c->incoming);
		c->sku->last = c->prev;
		nchanges--;
	}

	/* pins are nested like records: those of the subtransaction are last */
	while (ntouched > 0 && touched[ntouched - 1]->pin_subid >= subid)
		TouchedUnpinLast();

	for (int i = 0; i < ntouched; i++)
	{
		Touched    *t = touched[i];

		if (t->dropping && t->drop_subid >= subid)
		{
			EscrowSetDropping(t->entry, false);
			t->dropping = false;
		}
	}
}

/* Hands the records of a released subtransaction to its parent. */
static void
MergeSubtransaction(SubTransactionId subid, SubTransactionId parent)
{
	int			first = nchanges;
	int			kept;

	for (int i = ntouched - 1; i >= 0 && touched[i]->pin_subid >= subid; i--)
		touched[i]->pin_subid = parent;
	for (int i = 0; i < ntouched; i++)
	{
		if (touched[i]->dropping && touched[i]->drop_subid >= subid)
			touched[i]->drop_subid = parent;
	}

	while (first > 0 && changes[first - 1].subid >= subid)
		first--;

	kept = first;
	for (int i = first; i < nchanges; i++)
	{
		Change	   *c = &changes[i];

		if (c->prev >= 0 && changes[c->prev].subid == parent)
		{
			Change	   *p = &changes[c->prev];

			InvEffectAdd(&p->delta, &c->delta);
			p->hold += c->hold;
			p->prepaid += c->prepaid;
			p->adopted += c->adopted;
			p->incoming += c->incoming;
			p->exists += c->exists;
			p->unfolded += c->unfolded;
			TakeLaterRules(&p->has_rules, &p->rules, c->has_rules, &c->rules);
			InvCountersAdd(&p->counts, &c->counts);
			c->sku->last = c->prev;
		}
		else
		{
			if (kept != i)
				changes[kept] = *c;
			changes[kept].subid = parent;
			changes[kept].sku->last = kept;
			kept++;
		}
	}
	nchanges = kept;
}

/*
 * Applies (commit) or drops (abort) every pending change and unpins every
 * SKU.  Runs in the transaction callbacks: it must not fail, so it does not
 * allocate.
 */
static void
EndTransaction(bool commit)
{
	InvCounters committed;
	bool		notify = false;

	memset(&committed, 0, sizeof(committed));
	for (int i = 0; i < nchanges; i++)
	{
		Change	   *c = &changes[i];
		InvTxnEnd  *s = &c->sku->end;

		/* after an abort, an adopted hold is its slot's again */
		s->hold += commit ? c->hold : c->hold - c->adopted;
		s->incoming += c->incoming;
		if (commit)
		{
			InvEffectAdd(&s->delta, &c->delta);
			s->exists += c->exists;
			s->unfolded += c->unfolded;
			/* records are in the order they were made */
			TakeLaterRules(&s->has_rules, &s->rules, c->has_rules, &c->rules);
			InvCountersAdd(&s->counts, &c->counts);
			InvCountersAdd(&committed, &c->counts);
		}
	}
	if (commit && nchanges > 0)
		MetricsCommitted(&committed);

	/* the commit window: visible to others, not in the counters yet */
	if (commit && ntouched > 0)
		INV_FAULT_PARK("commit-window");

	for (int i = 0; i < ntouched; i++)
	{
		Touched    *t = touched[i];

		t->end.was_dropping = t->dropping;
		t->end.notify = commit && inv_stock_notifications;
		if (EscrowEndTxn(t->entry, &t->end))
			notify = true;
		hash_search(touched_hash, &t->key, HASH_REMOVE, NULL);
	}
	ntouched = 0;
	nchanges = 0;
	/* a SKU sold out or back on sale: a worker sends it at once */
	if (notify)
		PoolNoteNotify(GetCurrentTimestamp());

	/* SKUs prepared by calls that failed before pinning */
	if (touched_hash != NULL && hash_get_num_entries(touched_hash) > 0)
	{
		HASH_SEQ_STATUS status;
		Touched    *t;

		hash_seq_init(&status, touched_hash);
		while ((t = hash_seq_search(&status)) != NULL)
			hash_search(touched_hash, &t->key, HASH_REMOVE, NULL);
	}
}

static void
PendingXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			if (ntouched > 0 || CacheRestoringHere())
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot prepare a transaction that has changed inventory"),
						 errdetail("Escrow holds live in the memory of the session that took them and cannot outlive it."),
						 errhint("Commit or roll back the inventory changes in an ordinary transaction.")));
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			EndTransaction(true);
			CacheEndRestore();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			EndTransaction(false);
			CacheEndRestore();
			break;
		default:
			break;
	}
}

static void
PendingSubXactCallback(SubXactEvent event, SubTransactionId mySubid,
					   SubTransactionId parentSubid, void *arg)
{
	switch (event)
	{
		case SUBXACT_EVENT_ABORT_SUB:
			UndoSubtransaction(mySubid);
			break;
		case SUBXACT_EVENT_COMMIT_SUB:
			if (ntouched > 0)
				MergeSubtransaction(mySubid, parentSubid);
			break;
		default:
			break;
	}
}

void
PendingInit(void)
{
	RegisterXactCallback(PendingXactCallback, NULL);
	RegisterSubXactCallback(PendingSubXactCallback, NULL);
}
