/*
 * escrow.c
 *	  Escrow admission on the cache's entries: is there enough?
 *
 * A change that takes units out of available holds them at once, in the
 * entry, under its spinlock, without reading or writing any table: a
 * reservation takes a hold when on_hand - reserved - holds >= qty.  The
 * entry keeps the SKU's committed rules too (enforce/rules.c), so a SKU
 * outside its sale window, or one that needs a buyer, is refused here in
 * the same way.  Units a transaction adds are registered as incoming and
 * count only once it commits.  At the end of the transaction
 * (xact/pending.c) its holds turn into committed changes, or are returned.
 *
 * Everything here follows the locking contract at the top of cache.c: an
 * entry the caller pins is used under its spinlock alone.
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/int.h"
#include "utils/timestamp.h"

#include "shmem/cache_internal.h"
#include "shmem/escrow.h"

/*
 * The answer to a reservation of qty units, from a copy of the entry and
 * whether the SKU exists for the caller.  With sale, the SKU's rules are
 * asked first; with expected_version, the committed version must equal it
 * and no other transaction may have a change in flight (own_pins: the
 * caller's own pin).
 */
static InvAdmit
AdmitDecide(const InvView *v, bool exists, int64 qty,
			const int64 *expected_version, int32 own_pins, const InvSale *sale)
{
	if (!exists)
		return INV_ADMIT_UNKNOWN;
	if (sale != NULL)
	{
		if (!InvRulesOnSale(&v->rules, sale->now))
			return INV_ADMIT_NOT_ON_SALE;
		if (v->rules.max_per_buyer > 0 && !sale->has_buyer)
			return INV_ADMIT_BUYER_REQUIRED;
	}
	if (expected_version != NULL &&
		(v->version != *expected_version || v->pins > own_pins))
		return INV_ADMIT_CONFLICT;
	if (InvViewAvailable(v) < qty)
		return INV_ADMIT_INSUFFICIENT;
	return INV_ADMIT_OK;
}

/*
 * Escrow admission: takes a hold of qty units when available allows it and
 * the SKU's rules do (see AdmitDecide).  *entryp is the entry if the
 * caller's transaction already pins it, else NULL; on success it is set to
 * the entry, which the caller's transaction now pins.  A refusal changes
 * nothing but the statistics.  With hold false nothing is taken: the
 * answer is what admission would be now.
 */
InvAdmit
EscrowAdmit(const InvKey *key, InvEntry **entryp, int64 qty,
		   const int64 *expected_version, const InvSale *sale, bool hold,
		   InvView *view)
{
	InvEntry   *entry = *entryp;
	bool		mine = (entry != NULL);
	InvAdmit	result;

	if (!mine)
		entry = CacheEntryGet(key);

	SpinLockAcquire(&entry->mutex);
	FillView(entry, view);
	/* a SKU being deleted by another transaction is gone for this one */
	result = AdmitDecide(view, entry->exists && (mine || !entry->dropping),
						 qty, expected_version, mine ? 1 : 0, sale);
	if (result == INV_ADMIT_CONFLICT)
		entry->stats.conflicts++;
	else if (result == INV_ADMIT_INSUFFICIENT)
		entry->stats.rejects++;
	else if (result == INV_ADMIT_OK && hold)
	{
		entry->holds += qty;
		view->holds += qty;
		if (!mine)
		{
			entry->pins++;
			entry->gen++;
			view->pins++;
		}
	}
	entry->last_used = GetCurrentStatementStartTimestamp();
	SpinLockRelease(&entry->mutex);

	if (!mine)
		LWLockRelease(inv_cache->lock);
	if (result == INV_ADMIT_OK && hold)
		*entryp = entry;
	return result;
}

/*
 * Stocktake admission on an entry the caller pins: turns an absolute count
 * into a change of on_hand against the committed value (plus the caller's
 * own uncommitted changes, own_on_hand), and holds the units a decrease
 * takes out of available.  An increase is registered as incoming by the
 * trigger, like a restock.  exists: whether the SKU exists for the caller's
 * transaction, which may have created it.
 */
InvAdmit
EscrowStocktake(InvEntry *entry, bool exists, int64 counted,
				int64 own_on_hand, const int64 *expected_version,
				int64 *delta, InvView *view)
{
	InvAdmit	result;

	SpinLockAcquire(&entry->mutex);
	*delta = counted - (entry->on_hand + own_on_hand);
	if (!exists)
		result = INV_ADMIT_UNKNOWN;
	else if (expected_version != NULL &&
			 (entry->version != *expected_version || entry->pins > 1))
	{
		result = INV_ADMIT_CONFLICT;
		entry->stats.conflicts++;
	}
	else if (*delta < 0 &&
			 entry->on_hand - entry->reserved - entry->holds < -*delta)
		result = INV_ADMIT_INSUFFICIENT;
	else
	{
		result = INV_ADMIT_OK;
		if (*delta < 0)
			entry->holds += -*delta;
	}
	FillView(entry, view);
	SpinLockRelease(&entry->mutex);
	view->exists = exists;
	return result;
}

/* Registers units a pinned transaction will add to on_hand. */
void
EscrowAddIncoming(InvEntry *entry, int64 qty)
{
	int64		sum;
	bool		overflow;

	SpinLockAcquire(&entry->mutex);
	overflow = pg_add_s64_overflow(entry->on_hand, entry->incoming, &sum) ||
		pg_add_s64_overflow(sum, qty, &sum);
	if (!overflow)
		entry->incoming += qty;
	SpinLockRelease(&entry->mutex);

	if (overflow)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("on_hand of sku \"%s\" would be out of range",
						entry->key.sku),
				 errdetail("On hand and the units being added exceed %lld.",
						   (long long) PG_INT64_MAX)));
}

/*
 * Marks the entry as being deleted by the caller's transaction, which pins
 * it, or takes the mark back.  Marking fails when any other transaction has
 * a change to the SKU in flight.
 */
bool
EscrowSetDropping(InvEntry *entry, bool dropping)
{
	bool		ok;

	SpinLockAcquire(&entry->mutex);
	ok = !dropping || entry->pins == 1;
	if (ok)
		entry->dropping = dropping;
	SpinLockRelease(&entry->mutex);
	return ok;
}

/*
 * Would the SKU's counters be within bounds -- reserved never negative,
 * never more than on_hand -- once the caller's transaction, which pins the
 * entry, commits?  own is all of its uncommitted change to the SKU,
 * own_holds the holds it took for them.  Fills view with the counters as
 * they would be.
 */
bool
EscrowCheckBounds(InvEntry *entry, const InvEffect *own, int64 own_holds,
				 InvView *view)
{
	SpinLockAcquire(&entry->mutex);
	FillView(entry, view);
	SpinLockRelease(&entry->mutex);

	if (pg_add_s64_overflow(view->on_hand, own->on_hand, &view->on_hand) ||
		pg_add_s64_overflow(view->reserved, own->reserved, &view->reserved) ||
		pg_add_s64_overflow(view->version, own->version, &view->version))
		return false;
	view->holds -= own_holds;
	return view->reserved >= 0 && InvViewAvailable(view) >= 0;
}

/* Returns holds and incoming of work undone (a rolled-back savepoint). */
void
EscrowRelease(InvEntry *entry, int64 hold, int64 incoming)
{
	SpinLockAcquire(&entry->mutex);
	entry->holds -= hold;
	entry->incoming -= incoming;
	SpinLockRelease(&entry->mutex);
}

/*
 * The end of a pinning transaction: applies its committed changes (zero
 * after an abort), returns its holds and unpins.  With s->notify, notes
 * when the committed available (on_hand - reserved: holds in flight do not
 * count, so buyers in flight do not make it flicker) reaches zero or comes
 * back above it, or new rules put the SKU on sale or take it off now, and
 * returns whether it did (cache_notify.c).  Runs in the commit and abort
 * callbacks, so it must not fail.
 */
bool
EscrowEndTxn(InvEntry *entry, const InvTxnEnd *s)
{
	bool		crossed;
	TimestampTz now = 0;

	/* the clock read outside the spinlock */
	if (s->notify && s->has_rules)
		now = GetCurrentTimestamp();
	SpinLockAcquire(&entry->mutex);
	crossed = s->notify &&
		((entry->on_hand - entry->reserved > 0) !=
		 (entry->on_hand + s->delta.on_hand - entry->reserved - s->delta.reserved > 0) ||
		 (s->has_rules &&
		  InvRulesOnSale(&entry->rules, now) != InvRulesOnSale(&s->rules, now)));
	if (crossed)
		entry->notify_seq++;
	entry->on_hand += s->delta.on_hand;
	entry->reserved += s->delta.reserved;
	entry->version += s->delta.version;
	entry->holds -= s->hold;
	entry->incoming -= s->incoming;
	if (s->exists > 0)
		entry->exists = true;
	else if (s->exists < 0)
		entry->exists = false;
	if (s->was_dropping)
		entry->dropping = false;
	if (s->has_rules)
		entry->rules = s->rules;
	InvSkuStatsAdd(&entry->stats, &s->counts);
	entry->unfolded += s->unfolded;
	entry->pins--;
	entry->gen++;
	SpinLockRelease(&entry->mutex);
	return crossed;
}

