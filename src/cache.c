/*
 * cache.c
 *	  The shared-memory hot-counter cache.
 *
 * One entry per SKU holds the SKU's committed counters (on_hand, reserved,
 * version), the escrow of changes still in flight (holds: units that
 * uncommitted transactions will take out of available; incoming: units they
 * will add to on_hand), the number of transactions pinning it, and its
 * statistics.  Entries are loaded lazily from the tables through
 * inventory.stock and can be rebuilt from them at any time: the tables are
 * the truth, this is a cache.
 *
 * Admission -- is there enough? -- is decided here, under the entry's
 * spinlock, without reading or writing any table: a reservation takes a hold
 * when on_hand - reserved - holds >= qty.  The entry keeps the SKU's
 * committed rules too (rules.c), so a SKU outside its sale window, or one
 * that needs a buyer, is refused here in the same way.  At commit the transaction turns
 * its holds into committed changes; at abort it returns them (pending.c).
 *
 * Locking contract
 * ----------------
 * inv->lock, an LWLock, protects the hash table's structure:
 *	 - hold it in shared mode to look an entry up, and to use an entry that
 *	   the caller has not pinned;
 *	 - hold it in exclusive mode to insert or remove an entry.
 * entry->mutex, a spinlock, protects every field of an entry but its key.
 *	 Hold it for a few instructions only: never across anything that can
 *	 fail, allocate or sleep.  Take it after inv->lock, never the reverse,
 *	 and never two at once.
 * A pinned entry (pins > 0) and a loading entry are never removed.  A
 *	 backend that pinned an entry may therefore use it, under its spinlock,
 *	 without inv->lock until it unpins it at the end of its transaction.
 * A loading entry is a placeholder inserted by the backend that reads the
 *	 SKU's counters from the tables; nobody else reads or changes it until
 *	 its loader clears 'loading' and broadcasts inv->loaded.  Because every
 *	 change to a SKU pins its entry first, no change can be in flight while
 *	 the entry is absent or loading, and the loader's fresh snapshot -- taken
 *	 after the placeholder is in place -- sees every committed change.
 *
 * Recovery
 * --------
 * WAL replay changes the tables without passing the trigger, so an entry
 * loaded during recovery would fall behind at once.  Nothing is loaded while
 * RecoveryInProgress(): on a hot standby CacheRead() answers from the tables
 * and every path that would pin or admit is refused before it gets here.
 * The cache is therefore empty when a standby is promoted, and after
 * promotion every SKU is loaded afresh from the tables, as after a restart.
 *
 * Restores
 * --------
 * A restore (restore.c) writes the tables without telling the cache.  It
 * starts only when no entry of its database is pinned; it then removes the
 * database's entries and lists the database in inv->restoring, under
 * inv->lock held exclusively.  While it is listed -- until the restoring
 * transaction ends -- nothing of that database is loaded, pinned or
 * admitted (CacheRead answers from the tables), so once the restore commits
 * every SKU is loaded afresh from what it restored.
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "common/int.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

#include "cache.h"
#include "catalog.h"
#include "ledger.h"
#include "pool.h"

struct InvEntry
{
	InvKey		key;
	slock_t		mutex;
	bool		loading;		/* placeholder being filled by its loader */
	bool		exists;			/* the SKU has a committed row */
	bool		dropping;		/* a transaction is deleting the SKU's row */
	int32		pins;
	int64		on_hand;
	int64		reserved;
	int64		version;
	int64		holds;
	int64		incoming;
	int64		unfolded;		/* settled movements not folded yet (a hint) */
	InvRules	rules;			/* committed */
	uint64		gen;
	TimestampTz last_used;
	TimestampTz loaded_at;
	InvCounters stats;
};

/* Databases being restored at once, at most. */
#define MAX_RESTORES	16

typedef struct InvShared
{
	LWLock	   *lock;
	ConditionVariable loaded;	/* a load finished, or failed */
	pg_atomic_uint64 loads;
	pg_atomic_uint64 evictions;
	pg_atomic_uint32 nrestoring; /* entries of restoring[] in use */
	Oid			restoring[MAX_RESTORES];	/* under lock; InvalidOid: free */
} InvShared;

static InvShared *inv = NULL;
static HTAB *inv_hash = NULL;

/* this backend's transaction is restoring its database */
static bool restoring_here = false;

/* Share of the idle entries evicted at once when the cache is full. */
#define EVICT_FRACTION	0.05

Size
CacheShmemSize(void)
{
	return add_size(MAXALIGN(sizeof(InvShared)),
					hash_estimate_size(inv_max_skus, sizeof(InvEntry)));
}

/* Called from the shmem startup hook, with AddinShmemInitLock held. */
void
CacheShmemInit(void)
{
	HASHCTL		info;
	bool		found;

	inv = ShmemInitStruct("inventory", sizeof(InvShared), &found);
	if (!found)
	{
		inv->lock = &(GetNamedLWLockTranche("inventory"))[INV_LOCK_CACHE].lock;
		ConditionVariableInit(&inv->loaded);
		pg_atomic_init_u64(&inv->loads, 0);
		pg_atomic_init_u64(&inv->evictions, 0);
		pg_atomic_init_u32(&inv->nrestoring, 0);
		memset(inv->restoring, 0, sizeof(inv->restoring));
	}
	info.keysize = sizeof(InvKey);
	info.entrysize = sizeof(InvEntry);
	inv_hash = ShmemInitHash("inventory skus", inv_max_skus, inv_max_skus,
							 &info, HASH_ELEM | HASH_BLOBS);
}

void
CacheMakeKey(InvKey *key, const char *sku, int len)
{
	Assert(len > 0 && len <= INV_SKU_MAXLEN);
	memset(key, 0, sizeof(InvKey));
	key->dbid = MyDatabaseId;
	key->relid = InvGetCatalog()->ledger_rel;
	memcpy(key->sku, sku, len);
}

const InvKey *
CacheEntryKey(InvEntry *entry)
{
	return &entry->key;
}

/* Copies the counters; the caller holds entry->mutex. */
static inline void
FillView(InvEntry *entry, InvView *view)
{
	view->exists = entry->exists;
	view->on_hand = entry->on_hand;
	view->reserved = entry->reserved;
	view->version = entry->version;
	view->holds = entry->holds;
	view->incoming = entry->incoming;
	view->unfolded = entry->unfolded;
	view->pins = entry->pins;
	view->gen = entry->gen;
	view->rules = entry->rules;
}

static int
CompareLastUsed(const void *a, const void *b)
{
	TimestampTz ta = (*(InvEntry *const *) a)->last_used;
	TimestampTz tb = (*(InvEntry *const *) b)->last_used;

	return (ta > tb) - (ta < tb);
}

/*
 * Makes room by removing the least recently used idle entries.  The caller
 * holds inv->lock exclusively.  An entry with changes in flight is pinned
 * and stays.
 */
static void
EntryEvict(void)
{
	HASH_SEQ_STATUS status;
	InvEntry   *entry;
	InvEntry  **idle;
	int			nidle = 0;
	int			nevict;

	idle = palloc(hash_get_num_entries(inv_hash) * sizeof(InvEntry *));
	hash_seq_init(&status, inv_hash);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (entry->pins == 0 && !entry->loading)
			idle[nidle++] = entry;
	}

	if (nidle == 0)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("inventory cache is full"),
				 errdetail("All %ld cached SKUs have changes in flight.",
						   hash_get_num_entries(inv_hash)),
				 errhint("Raise inventory.max_skus and restart the server.")));

	qsort(idle, nidle, sizeof(InvEntry *), CompareLastUsed);
	nevict = Max(1, (int) (nidle * EVICT_FRACTION));
	for (int i = 0; i < nevict; i++)
		hash_search(inv_hash, &idle[i]->key, HASH_REMOVE, NULL);
	pg_atomic_fetch_add_u64(&inv->evictions, nevict);
	pfree(idle);
}

/* Reads the SKU's counters from the tables into a new entry. */
static void
EntryLoad(const InvKey *key)
{
	const InvCatalog *cat = InvGetCatalog();
	InvEntry   *entry;
	InvEffect	truth;
	InvRules	rules;
	int64		unfolded;
	bool		found;
	bool		exists;

	/* see "Recovery" above; callers refuse before this on a standby */
	if (RecoveryInProgress())
		elog(ERROR, "inventory: sku \"%s\" cannot be cached during recovery",
			 key->sku);

	/*
	 * Take the table locks the load needs before the placeholder exists, so
	 * that a backend waiting for the load never waits behind a lock request
	 * (DROP EXTENSION, say) that waits for that backend.
	 */
	LockRelationOid(cat->sku_rel, AccessShareLock);
	LockRelationOid(cat->ledger_rel, AccessShareLock);

	LWLockAcquire(inv->lock, LW_EXCLUSIVE);
	entry = hash_search(inv_hash, key, HASH_FIND, NULL);
	if (entry != NULL)
	{
		/* another backend got there first */
		LWLockRelease(inv->lock);
		return;
	}
	if (hash_get_num_entries(inv_hash) >= inv_max_skus)
		EntryEvict();
	entry = hash_search(inv_hash, key, HASH_ENTER_NULL, &found);
	if (entry == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of shared memory for the inventory cache"),
				 errhint("Lower inventory.max_skus or free shared memory used by other extensions.")));
	Assert(!found);
	SpinLockInit(&entry->mutex);
	entry->loading = true;
	entry->exists = false;
	entry->dropping = false;
	entry->pins = 0;
	entry->on_hand = entry->reserved = entry->version = 0;
	entry->holds = entry->incoming = 0;
	entry->unfolded = 0;
	InvRulesNone(&entry->rules);
	entry->gen = 0;
	entry->last_used = entry->loaded_at = GetCurrentTimestamp();
	memset(&entry->stats, 0, sizeof(InvCounters));
	LWLockRelease(inv->lock);

	PG_TRY();
	{
		exists = LedgerReadTruth(key->sku, &truth, &unfolded, &rules);
	}
	PG_CATCH();
	{
		LWLockAcquire(inv->lock, LW_EXCLUSIVE);
		hash_search(inv_hash, key, HASH_REMOVE, NULL);
		LWLockRelease(inv->lock);
		ConditionVariableBroadcast(&inv->loaded);
		PG_RE_THROW();
	}
	PG_END_TRY();

	SpinLockAcquire(&entry->mutex);
	entry->exists = exists;
	entry->on_hand = truth.on_hand;
	entry->reserved = truth.reserved;
	entry->version = truth.version;
	entry->unfolded = unfolded;
	entry->rules = rules;
	entry->loading = false;
	SpinLockRelease(&entry->mutex);

	pg_atomic_fetch_add_u64(&inv->loads, 1);
	ConditionVariableBroadcast(&inv->loaded);

	/*
	 * Settled movements that nobody's commit announced to the workers since
	 * the server started, or since a restore, are due for folding now that
	 * the worker can find the SKU in the cache.
	 */
	if (unfolded > 0)
		PoolNoteDue(TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
												inv_expire_interval));
}

/* Sleeps until the entry for key is no longer loading (or gone). */
static void
EntryWaitLoaded(const InvKey *key)
{
	ConditionVariablePrepareToSleep(&inv->loaded);
	for (;;)
	{
		InvEntry   *entry;
		bool		loading = false;

		LWLockAcquire(inv->lock, LW_SHARED);
		entry = hash_search(inv_hash, key, HASH_FIND, NULL);
		if (entry != NULL)
		{
			SpinLockAcquire(&entry->mutex);
			loading = entry->loading;
			SpinLockRelease(&entry->mutex);
		}
		LWLockRelease(inv->lock);
		if (!loading)
			break;
		ConditionVariableSleep(&inv->loaded, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
}

/* Is dbid being restored?  The caller holds inv->lock. */
static bool
RestoringLocked(Oid dbid)
{
	for (int i = 0; i < MAX_RESTORES; i++)
	{
		if (inv->restoring[i] == dbid)
			return true;
	}
	return false;
}

bool
CacheRestoring(Oid dbid)
{
	bool		result;

	if (inv == NULL || pg_atomic_read_u32(&inv->nrestoring) == 0)
		return false;
	LWLockAcquire(inv->lock, LW_SHARED);
	result = RestoringLocked(dbid);
	LWLockRelease(inv->lock);
	return result;
}

/* Removes every entry of this database; the caller holds inv->lock exclusively. */
static void
RemoveDatabaseEntries(void)
{
	HASH_SEQ_STATUS status;
	InvEntry   *entry;

	hash_seq_init(&status, inv_hash);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (entry->key.dbid == MyDatabaseId)
			hash_search(inv_hash, &entry->key, HASH_REMOVE, NULL);
	}
}

/*
 * A restore starts in this database: see "Restores" above.  Fails when a
 * transaction has a change in flight here, or too many databases are being
 * restored at once.
 */
void
CacheBeginRestore(void)
{
	HASH_SEQ_STATUS status;
	InvEntry   *entry;
	int			busy = 0;
	int			slot = -1;

	if (restoring_here)
		return;
	LWLockAcquire(inv->lock, LW_EXCLUSIVE);
	hash_seq_init(&status, inv_hash);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (entry->key.dbid == MyDatabaseId && (entry->pins > 0 || entry->loading))
			busy++;
	}
	for (int i = 0; i < MAX_RESTORES && slot < 0; i++)
	{
		if (!OidIsValid(inv->restoring[i]))
			slot = i;
	}
	if (busy == 0 && slot >= 0)
	{
		RemoveDatabaseEntries();
		inv->restoring[slot] = MyDatabaseId;
		pg_atomic_fetch_add_u32(&inv->nrestoring, 1);
		restoring_here = true;
	}
	LWLockRelease(inv->lock);

	if (busy > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("cannot restore while other transactions change inventory in this database"),
				 errdetail("%d SKUs have changes in flight.", busy),
				 errhint("Restore into a database where nothing is being sold, or retry.")));
	if (slot < 0)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many databases are being restored at once"),
				 errdetail("At most %d restores run at the same time.", MAX_RESTORES),
				 errhint("Retry when one of them has finished.")));
}

/* Is this backend's transaction restoring its database? */
bool
CacheRestoringHere(void)
{
	return restoring_here;
}

/* The restoring transaction ends (commit or abort); must not fail. */
void
CacheEndRestore(void)
{
	if (!restoring_here)
		return;
	LWLockAcquire(inv->lock, LW_EXCLUSIVE);
	for (int i = 0; i < MAX_RESTORES; i++)
	{
		if (inv->restoring[i] == MyDatabaseId)
		{
			inv->restoring[i] = InvalidOid;
			pg_atomic_fetch_sub_u32(&inv->nrestoring, 1);
			break;
		}
	}
	LWLockRelease(inv->lock);
	restoring_here = false;
}

/*
 * Returns the loaded entry for key, loading it first if needed.  Returns
 * with inv->lock held in shared mode; the caller releases it.
 */
static InvEntry *
EntryGet(const InvKey *key)
{
	if (inv == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("inventory shared memory is not initialized"),
				 errhint("Add inventory to shared_preload_libraries in postgresql.conf and restart the server.")));

	for (;;)
	{
		InvEntry   *entry;
		bool		loading;

		LWLockAcquire(inv->lock, LW_SHARED);
		if (pg_atomic_read_u32(&inv->nrestoring) > 0 && RestoringLocked(key->dbid))
		{
			LWLockRelease(inv->lock);
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("the inventory of this database is being restored"),
					 errdetail("A restore (COPY into inventory.sku or inventory.ledger) is in flight%s.",
							   restoring_here ? " in this transaction" : ""),
					 errhint(restoring_here ?
							 "Make the other changes after the restore has committed." :
							 "Retry when the restore has committed.")));
		}
		entry = hash_search(inv_hash, key, HASH_FIND, NULL);
		if (entry != NULL)
		{
			SpinLockAcquire(&entry->mutex);
			loading = entry->loading;
			SpinLockRelease(&entry->mutex);
			if (!loading)
				return entry;
			LWLockRelease(inv->lock);
			EntryWaitLoaded(key);
			continue;
		}
		LWLockRelease(inv->lock);
		EntryLoad(key);
	}
}

/*
 * Pins the entry for a change that is about to be written.  The caller
 * (pending.c) records the pin and unpins at the end of the transaction.
 */
InvEntry *
CachePin(const InvKey *key)
{
	InvEntry   *entry = EntryGet(key);
	bool		dropping;

	SpinLockAcquire(&entry->mutex);
	dropping = entry->dropping;
	if (!dropping)
	{
		entry->pins++;
		entry->gen++;
	}
	entry->last_used = GetCurrentStatementStartTimestamp();
	SpinLockRelease(&entry->mutex);
	LWLockRelease(inv->lock);

	if (dropping)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("sku \"%s\" is being deleted by another transaction",
						key->sku)));
	return entry;
}

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
CacheAdmit(const InvKey *key, InvEntry **entryp, int64 qty,
		   const int64 *expected_version, const InvSale *sale, bool hold,
		   InvView *view)
{
	InvEntry   *entry = *entryp;
	bool		mine = (entry != NULL);
	InvAdmit	result;

	if (!mine)
		entry = EntryGet(key);

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
		LWLockRelease(inv->lock);
	if (result == INV_ADMIT_OK && hold)
		*entryp = entry;
	return result;
}

/*
 * Stocktake admission on an entry the caller pins: turns an absolute count
 * into a change of on_hand against the committed value (plus the caller's
 * own uncommitted changes, own_on_hand), and holds the units
 * a decrease takes out of available.  An increase is registered as incoming
 * by the trigger, like a restock.
 */
InvAdmit
CacheStocktake(InvEntry *entry, int64 counted, int64 own_on_hand,
			   const int64 *expected_version, int64 *delta, InvView *view)
{
	InvAdmit	result;

	SpinLockAcquire(&entry->mutex);
	*delta = counted - (entry->on_hand + own_on_hand);
	if (!entry->exists)
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
	return result;
}

/* Registers units a pinned transaction will add to on_hand. */
void
CacheAddIncoming(InvEntry *entry, int64 qty)
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
CacheSetDropping(InvEntry *entry, bool dropping)
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
CacheCheckBounds(InvEntry *entry, const InvEffect *own, int64 own_holds,
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
CacheRelease(InvEntry *entry, int64 hold, int64 incoming)
{
	SpinLockAcquire(&entry->mutex);
	entry->holds -= hold;
	entry->incoming -= incoming;
	SpinLockRelease(&entry->mutex);
}

/*
 * The end of a pinning transaction: applies its committed changes (zero
 * after an abort), returns its holds and unpins.  Runs in the commit and
 * abort callbacks, so it must not fail.
 */
void
CacheEndTxn(InvEntry *entry, const InvTxnEnd *s)
{
	SpinLockAcquire(&entry->mutex);
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
	InvCountersAdd(&entry->stats, &s->counts);
	entry->unfolded += s->unfolded;
	entry->pins--;
	entry->gen++;
	SpinLockRelease(&entry->mutex);
}

/* Reads a pinned entry. */
void
CacheView(InvEntry *entry, InvView *view)
{
	SpinLockAcquire(&entry->mutex);
	FillView(entry, view);
	SpinLockRelease(&entry->mutex);
}

/*
 * The answer of a standby, or of a database being restored: the SKU's
 * counters read from the tables with a fresh snapshot.  Nothing is in
 * flight there.
 */
static bool
ReadFromTables(const InvKey *key, InvView *view)
{
	InvEffect	truth;
	bool		exists;

	exists = LedgerReadTruth(key->sku, &truth, &view->unfolded, &view->rules);
	view->exists = exists;
	view->on_hand = truth.on_hand;
	view->reserved = truth.reserved;
	view->version = truth.version;
	view->holds = view->incoming = 0;
	view->pins = 0;
	view->gen = 0;
	return exists;
}

/*
 * Reads the entry for key, loading it first when load is true.  Returns
 * false when the entry is absent (and not loaded), still loading, or the
 * SKU does not exist.  During recovery or a restore of the database
 * nothing is cached: with load, the counters come from the tables; without,
 * there is no entry.
 */
bool
CacheRead(const InvKey *key, bool load, InvView *view)
{
	InvEntry   *entry;
	bool		usable = false;

	if (load && (RecoveryInProgress() || CacheRestoring(key->dbid)))
		return ReadFromTables(key, view);
	if (load)
		entry = EntryGet(key);
	else
	{
		if (inv == NULL)
			return false;
		LWLockAcquire(inv->lock, LW_SHARED);
		entry = hash_search(inv_hash, key, HASH_FIND, NULL);
	}

	if (entry != NULL)
	{
		SpinLockAcquire(&entry->mutex);
		usable = !entry->loading && entry->exists;
		FillView(entry, view);
		if (load)
			entry->last_used = GetCurrentStatementStartTimestamp();
		SpinLockRelease(&entry->mutex);
	}
	LWLockRelease(inv->lock);
	return usable;
}

static bool
InThisDatabase(const InvKey *key, Oid relid)
{
	return key->dbid == MyDatabaseId && key->relid == relid;
}

InvEntryCopy *
CacheCopyEntries(int *count)
{
	Oid			relid = InvGetCatalog()->ledger_rel;
	HASH_SEQ_STATUS status;
	InvEntry   *entry;
	InvEntryCopy *copies;
	int			n = 0;

	if (inv == NULL)
	{
		*count = 0;
		return NULL;
	}

	LWLockAcquire(inv->lock, LW_SHARED);
	copies = palloc(Max(1, hash_get_num_entries(inv_hash)) * sizeof(InvEntryCopy));
	hash_seq_init(&status, inv_hash);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		InvEntryCopy *c = &copies[n];
		bool		keep;

		if (!InThisDatabase(&entry->key, relid))
			continue;
		SpinLockAcquire(&entry->mutex);
		keep = !entry->loading && entry->exists;
		FillView(entry, &c->view);
		c->stats = entry->stats;
		c->loaded_at = entry->loaded_at;
		c->last_used = entry->last_used;
		SpinLockRelease(&entry->mutex);
		if (keep)
		{
			memcpy(c->sku, entry->key.sku, sizeof(c->sku));
			n++;
		}
	}
	LWLockRelease(inv->lock);
	*count = n;
	return copies;
}

/*
 * Up to max SKUs of this database with settled movements not folded yet,
 * for the worker's fold.  Returns how many were written to
 * skus, each a palloc'd string.
 */
int
CacheSkusToFold(char **skus, int max)
{
	Oid			relid = InvGetCatalog()->ledger_rel;
	HASH_SEQ_STATUS status;
	InvEntry   *entry;
	int			n = 0;

	if (inv == NULL || max <= 0)
		return 0;
	LWLockAcquire(inv->lock, LW_SHARED);
	hash_seq_init(&status, inv_hash);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		int64		unfolded;

		if (!InThisDatabase(&entry->key, relid))
			continue;
		SpinLockAcquire(&entry->mutex);
		unfolded = entry->loading ? 0 : entry->unfolded;
		SpinLockRelease(&entry->mutex);
		if (unfolded > 0)
		{
			skus[n++] = pstrdup(entry->key.sku);
			if (n == max)
			{
				hash_seq_term(&status);
				break;
			}
		}
	}
	LWLockRelease(inv->lock);
	return n;
}

/*
 * A movement of the SKU has been folded.  Folding changes no counter, so it
 * neither pins the entry nor waits for commit: the count of movements to
 * fold is only a hint for the worker, and an aborted fold that lowered it
 * leaves rows for a later settle or load to count again.
 */
void
CacheNoteFolded(const InvKey *key)
{
	InvEntry   *entry;

	if (inv == NULL)
		return;
	LWLockAcquire(inv->lock, LW_SHARED);
	entry = hash_search(inv_hash, key, HASH_FIND, NULL);
	if (entry != NULL)
	{
		SpinLockAcquire(&entry->mutex);
		if (entry->unfolded > 0)
			entry->unfolded--;
		SpinLockRelease(&entry->mutex);
	}
	LWLockRelease(inv->lock);
}

void
CacheResetStats(void)
{
	Oid			relid = InvGetCatalog()->ledger_rel;
	HASH_SEQ_STATUS status;
	InvEntry   *entry;

	if (inv == NULL)
		return;
	LWLockAcquire(inv->lock, LW_SHARED);
	hash_seq_init(&status, inv_hash);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (!InThisDatabase(&entry->key, relid))
			continue;
		SpinLockAcquire(&entry->mutex);
		memset(&entry->stats, 0, sizeof(InvCounters));
		SpinLockRelease(&entry->mutex);
	}
	LWLockRelease(inv->lock);
}

void
CacheGetInfo(InvCacheInfo *info)
{
	info->capacity = inv_max_skus;
	info->bytes_per_entry = hash_estimate_size(inv_max_skus, sizeof(InvEntry)) / inv_max_skus;
	info->entries = 0;
	info->loads = 0;
	info->evictions = 0;
	if (inv == NULL)
		return;
	LWLockAcquire(inv->lock, LW_SHARED);
	info->entries = hash_get_num_entries(inv_hash);
	LWLockRelease(inv->lock);
	info->loads = pg_atomic_read_u64(&inv->loads);
	info->evictions = pg_atomic_read_u64(&inv->evictions);
}
