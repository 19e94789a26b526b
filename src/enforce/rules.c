/*
 * rules.c
 *	  Commerce rules of a SKU: at most max_per_buyer units per buyer, and a
 *	  sale window [sale_starts, sale_ends).
 *
 * The rules are columns of inventory.sku.  The cache keeps the committed
 * rules in each SKU's entry (the trigger registers a change of them like
 * any other change, applied at commit), so the sale window and whether a
 * buyer is needed are decided in shared memory, with the stock, before
 * anything is read or written.
 *
 * A buyer's units of a SKU are the truth in the ledger: the qty of the
 * buyer's PENDING and CONFIRMED reservations of that SKU, folded or not
 * (ledger_buyer_idx finds them).  A reservation for a buyer first takes a
 * lock on (sku, buyer_id), held to the end of its transaction, and counts
 * those units with a fresh snapshot: whoever held the lock before has
 * committed or rolled back by then, so the count sees every unit that can
 * still commit, and a buyer racing with themself takes turns while
 * different buyers never wait for each other.  Units given back (cancel,
 * expiry) take no lock: until they commit, they still count.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "common/hashfn.h"
#include "common/int.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "enforce/rules.h"
#include "tables/catalog.h"
#include "tables/ledger_table.h"

/*
 * The lock of a buyer on a SKU: an object lock whose classid is
 * inventory.ledger, objid a hash of (sku, buyer_id) and objsubid 1 (a key's
 * lock has objsubid 0), so that pg_locks tells them apart.
 */
static void
BuyerLockTag(LOCKTAG *tag, text *sku, text *buyer_id)
{
	uint32		hash = hash_combine(hash_bytes((const unsigned char *) VARDATA_ANY(sku),
											   VARSIZE_ANY_EXHDR(sku)),
									hash_bytes((const unsigned char *) VARDATA_ANY(buyer_id),
											   VARSIZE_ANY_EXHDR(buyer_id)));

	SET_LOCKTAG_OBJECT(*tag, MyDatabaseId, InvGetCatalog()->ledger_rel, hash, 1);
}

/*
 * May buyer_id take qty more units of sku under a limit of limit units?
 * Locks (sku, buyer_id) and counts what the buyer holds (*holding).  When
 * the answer is yes the lock stays to the end of the transaction, so that
 * the buyer's next call counts the units this one is about to write
 * (*took_lock says whether this call took it, for RulesReleaseBuyer());
 * when it is no and the lock was taken for this question, it is given
 * back.
 */
static bool
AdmitBuyer(text *sku, text *buyer_id, int64 qty, int64 limit, bool wait,
		   int64 *holding, bool *took_lock, bool *busy)
{
	LOCKTAG		tag;
	LockAcquireResult res;
	int64		total;

	BuyerLockTag(&tag, sku, buyer_id);
	res = LockAcquire(&tag, ExclusiveLock, false, !wait);
	*busy = (res == LOCKACQUIRE_NOT_AVAIL);
	*took_lock = (res == LOCKACQUIRE_OK);
	if (*busy)
		return false;
	*holding = LedgerBuyerHolding(sku, buyer_id);
	if (!pg_add_s64_overflow(*holding, qty, &total) && total <= limit)
		return true;
	if (*took_lock)
		LockRelease(&tag, ExclusiveLock, false);
	*took_lock = false;
	return false;
}

bool
RulesAdmitBuyer(text *sku, text *buyer_id, int64 qty, int64 limit,
				int64 *holding, bool *took_lock)
{
	bool		busy;

	return AdmitBuyer(sku, buyer_id, qty, limit, true, holding, took_lock, &busy);
}

/*
 * RulesAdmitBuyer() for the express lane's writer, which never waits:
 * *busy when another transaction holds the buyer's lock now.
 */
bool
RulesTryAdmitBuyer(text *sku, text *buyer_id, int64 qty, int64 limit,
				   bool *busy)
{
	int64		holding;
	bool		took_lock;

	return AdmitBuyer(sku, buyer_id, qty, limit, false, &holding, &took_lock, busy);
}

/*
 * Takes a buyer's lock ahead of the calls that need it, so that a batch
 * takes its locks in one fixed order (batch.c).
 */
void
RulesLockBuyer(text *sku, text *buyer_id)
{
	LOCKTAG		tag;

	BuyerLockTag(&tag, sku, buyer_id);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/*
 * Gives back a buyer's lock that RulesAdmitBuyer() took for units that
 * will not be written after all (a cart refused for another SKU).
 */
void
RulesReleaseBuyer(text *sku, text *buyer_id)
{
	LOCKTAG		tag;

	BuyerLockTag(&tag, sku, buyer_id);
	LockRelease(&tag, ExclusiveLock, false);
}

/* Does this transaction hold the buyer's lock? */
bool
RulesBuyerLockHeld(text *sku, text *buyer_id)
{
	LOCKTAG		tag;

	if (buyer_id == NULL)
		return false;
	BuyerLockTag(&tag, sku, buyer_id);
	return LockHeldByMe(&tag, ExclusiveLock);
}

/* Waits until the buyer's lock is free, then lets it go. */
void
RulesWaitForBuyer(text *sku, text *buyer_id)
{
	RulesLockBuyer(sku, buyer_id);
	RulesReleaseBuyer(sku, buyer_id);
}

/*
 * The rules, for a reservation written by hand (an INSERT into
 * inventory.ledger) rather than by reserve(), which answers with a status
 * instead.  Called after the row has landed, so that the rows of the same
 * statement count too.
 */
void
RulesCheckNewReservation(text *sku, text *buyer_id, const InvRules *rules,
						 TimestampTz now)
{
	char	   *name = text_to_cstring(sku);
	LOCKTAG		tag;
	int64		holding;

	if (!InvRulesOnSale(rules, now))
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("sku \"%s\" is not on sale", name),
				 errdetail("Its sale window is [%s, %s).",
						   TIMESTAMP_NOT_FINITE(rules->sale_starts) ? "-infinity" :
						   timestamptz_to_str(rules->sale_starts),
						   TIMESTAMP_NOT_FINITE(rules->sale_ends) ? "infinity" :
						   pstrdup(timestamptz_to_str(rules->sale_ends)))));
	if (rules->max_per_buyer == 0)
		return;
	if (buyer_id == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("a reservation of sku \"%s\" needs a buyer_id", name),
				 errdetail_plural("The SKU has a limit of %lld unit per buyer.",
								  "The SKU has a limit of %lld units per buyer.",
								  rules->max_per_buyer,
								  (long long) rules->max_per_buyer)));

	/* the rows of this statement, this one included, count */
	CommandCounterIncrement();
	BuyerLockTag(&tag, sku, buyer_id);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	holding = LedgerBuyerHolding(sku, buyer_id);
	if (holding > rules->max_per_buyer)
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("buyer \"%s\" would hold more units of sku \"%s\" than its limit",
						text_to_cstring(buyer_id), name),
				 errdetail_plural("The buyer would hold %lld unit; the limit is %lld per buyer.",
								  "The buyer would hold %lld units; the limit is %lld per buyer.",
								  holding,
								  (long long) holding, (long long) rules->max_per_buyer),
				 errhint("Pending and confirmed reservations count; cancelled and expired ones do not.")));
}
