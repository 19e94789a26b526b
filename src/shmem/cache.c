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
 * This file keeps the table: looking an entry up, loading it, evicting idle
 * ones, pinning.  Admission -- is there enough? -- is decided on an entry
 * under its spinlock, without reading or writing any table (escrow.c); a
 * database being restored is kept out of the cache (cache_restore.c); the
 * statistics views and the fold read copies of the entries (cache_stats.c).
 * All of them follow the contract below; cache_internal.h is the entry's
 * layout, which only these four files see.
 *
 * Locking contract
 * ----------------
 * inv_cache->lock, an LWLock, protects the hash table's structure:
 *	 - hold it in shared mode to look an entry up, and to use an entry that
 *	   the caller has not pinned;
 *	 - hold it in exclusive mode to insert or remove an entry.
 * entry->mutex, a spinlock, protects every field of an entry but its key.
 *	 Hold it for a few instructions only: never across anything that can
 *	 fail, allocate or sleep.  Take it after inv_cache->lock, never the
 *	 reverse, and never two at once.
 * A pinned entry (pins > 0) and a loading entry are never removed.  A
 *	 backend that pinned an entry may therefore use it, under its spinlock,
 *	 without inv_cache->lock until it unpins it at the end of its transaction.
 * A loading entry is a placeholder inserted by the backend that reads the
 *	 SKU's counters from the tables; nobody else reads or changes it until
 *	 its loader clears 'loading' and broadcasts inv_cache->loaded.  Because
 *	 every change to a SKU pins its entry first, no change can be in flight
 *	 while the entry is absent or loading, and the loader's fresh snapshot --
 *	 taken after the placeholder is in place -- sees every committed change.
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
 * A restore (enforce/restore.c) writes the tables without telling the
 * cache.  It starts only when no entry of its database is pinned; it then
 * removes the database's entries and lists the database in
 * inv_cache->restoring, under inv_cache->lock held exclusively.  While it is
 * listed -- until the restoring transaction ends -- nothing of that database
 * is loaded, pinned or admitted (CacheRead answers from the tables), so once
 * the restore commits every SKU is loaded afresh from what it restored
 * (cache_restore.c).
 *
 * A restore may also stop half-way, one table restored and committed, the
 * other not; its marker (tables/restore_state.c) then stands, and no SKU
 * of the database is loaded until an administrator ends it.  The marker is
 * a row of the database's own table, which a load would otherwise read
 * every time: each backend keeps what it read, with the generation of
 * inv_cache->marker_gen it read it at, and a transaction that may have
 * changed a marker bumps the generation when it ends -- after its commit is
 * visible -- so that every backend reads the table again at its next load.
 * The generation is read before the table (with a fresh snapshot): a change
 * committed in between makes the answer stale at once.
 */
#include "postgres.h"

#include <limits.h>

#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "inventory.h"
#include "shmem/cache.h"
#include "shmem/cache_internal.h"
#include "shmem/pool.h"
#include "tables/catalog.h"
#include "tables/ledger_table.h"
#include "tables/restore_state.h"
#include "tables/sandbox.h"

InvShared  *inv_cache = NULL;
HTAB	   *inv_cache_hash = NULL;

/* this backend's transaction is restoring its database (cache_restore.c) */
bool		inv_cache_restoring_here = false;

int			inv_max_skus = 10000;

/* this backend's reading of its database's restore marker (see "Restores") */
static uint64 marker_read_at = PG_UINT64_MAX;
static bool marker_incomplete = false;
static TimestampTz marker_since = 0;
/* this transaction may have changed the marker */
static bool marker_changed = false;

/* Share of the idle entries evicted at once when the cache is full. */
#define EVICT_FRACTION	0.05

void
CacheInit(void)
{
	DefineCustomIntVariable("inventory.max_skus",
							"Number of SKUs the shared-memory cache can hold.",
							"When the cache is full, the least recently used idle SKUs are evicted.",
							&inv_max_skus,
							10000, 16, INT_MAX / 2,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
}

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

	inv_cache = ShmemInitStruct("inventory", sizeof(InvShared), &found);
	if (!found)
	{
		inv_cache->lock = &(GetNamedLWLockTranche("inventory"))[INV_LOCK_CACHE].lock;
		ConditionVariableInit(&inv_cache->loaded);
		pg_atomic_init_u64(&inv_cache->loads, 0);
		pg_atomic_init_u64(&inv_cache->evictions, 0);
		pg_atomic_init_u32(&inv_cache->nrestoring, 0);
		pg_atomic_init_u64(&inv_cache->marker_gen, 0);
		memset(inv_cache->restoring, 0, sizeof(inv_cache->restoring));
	}
	info.keysize = sizeof(InvKey);
	info.entrysize = sizeof(InvEntry);
	inv_cache_hash = ShmemInitHash("inventory skus", inv_max_skus, inv_max_skus,
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

static int
CompareLastUsed(const void *a, const void *b)
{
	TimestampTz ta = (*(InvEntry *const *) a)->last_used;
	TimestampTz tb = (*(InvEntry *const *) b)->last_used;

	return (ta > tb) - (ta < tb);
}

/*
 * Makes room by removing the least recently used idle entries.  The caller
 * holds inv_cache->lock exclusively.  An entry with changes in flight is pinned
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

	idle = palloc(hash_get_num_entries(inv_cache_hash) * sizeof(InvEntry *));
	hash_seq_init(&status, inv_cache_hash);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		/* a notification to send keeps its entry, as a pin does */
		if (entry->pins == 0 && !entry->loading && !EntryNotifyDue(entry))
			idle[nidle++] = entry;
	}

	if (nidle == 0)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("inventory cache is full"),
				 errdetail("All %ld cached SKUs have changes in flight.",
						   hash_get_num_entries(inv_cache_hash)),
				 errhint("Raise inventory.max_skus and restart the server.")));

	qsort(idle, nidle, sizeof(InvEntry *), CompareLastUsed);
	nevict = Max(1, (int) (nidle * EVICT_FRACTION));
	for (int i = 0; i < nevict; i++)
		hash_search(inv_cache_hash, &idle[i]->key, HASH_REMOVE, NULL);
	pg_atomic_fetch_add_u64(&inv_cache->evictions, nevict);
	pfree(idle);
}

/* This transaction may change the database's restore marker. */
void
CacheRestoreMarkerChanged(void)
{
	marker_changed = true;
}

/*
 * Does a restore of this database stand incomplete?  *since, if given, is
 * when it began.  Reads the marker only when it may have changed since
 * this backend last did.
 */
bool
CacheRestoreIncomplete(TimestampTz *since)
{
	uint64		gen;

	if (inv_cache == NULL)
		return false;
	gen = pg_atomic_read_u64(&inv_cache->marker_gen);
	if (gen != marker_read_at)
	{
		marker_since = 0;
		marker_incomplete = RestoreStateRead(&marker_since);
		marker_read_at = gen;
	}
	if (since != NULL)
		*since = marker_since;
	return marker_incomplete;
}

/* Before a SKU of this database is loaded: refuses while a restore stands incomplete. */
static void
CheckRestoreComplete(void)
{
	TimestampTz since;

	if (CacheRestoreIncomplete(&since))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the restore of this database's inventory is incomplete"),
				 errdetail("A restore of inventory.sku or inventory.ledger began at %s, and the other table has not been restored since; until it is, nothing is sold here.",
						   timestamptz_to_str(since)),
				 errhint("Restore the missing table from the same dump, and the restore ends by itself; or end it with SELECT inventory.restore_abandon() to sell from what is there.")));
}

/* A transaction ends: if it may have changed a marker, every backend reads them again. */
void
CacheMarkerEndXact(void)
{
	if (marker_changed && inv_cache != NULL)
		pg_atomic_fetch_add_u64(&inv_cache->marker_gen, 1);
	marker_changed = false;
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
	CheckRestoreComplete();

	/*
	 * Take the table locks the load needs before the placeholder exists, so
	 * that a backend waiting for the load never waits behind a lock request
	 * (DROP EXTENSION, say) that waits for that backend.
	 */
	LockRelationOid(cat->sku_rel, AccessShareLock);
	LockRelationOid(cat->ledger_rel, AccessShareLock);

	LWLockAcquire(inv_cache->lock, LW_EXCLUSIVE);
	entry = hash_search(inv_cache_hash, key, HASH_FIND, NULL);
	if (entry != NULL)
	{
		/* another backend got there first */
		LWLockRelease(inv_cache->lock);
		return;
	}
	if (hash_get_num_entries(inv_cache_hash) >= inv_max_skus)
		EntryEvict();
	entry = hash_search(inv_cache_hash, key, HASH_ENTER_NULL, &found);
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
	memset(&entry->stats, 0, sizeof(entry->stats));
	entry->notify_seq = entry->notified_seq = 0;
	entry->notified_at = 0;
	LWLockRelease(inv_cache->lock);

	PG_TRY();
	{
		exists = LedgerReadTruth(key->sku, &truth, &unfolded, &rules);
	}
	PG_CATCH();
	{
		LWLockAcquire(inv_cache->lock, LW_EXCLUSIVE);
		hash_search(inv_cache_hash, key, HASH_REMOVE, NULL);
		LWLockRelease(inv_cache->lock);
		ConditionVariableBroadcast(&inv_cache->loaded);
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

	pg_atomic_fetch_add_u64(&inv_cache->loads, 1);
	ConditionVariableBroadcast(&inv_cache->loaded);

	/*
	 * Settled movements that nobody's commit announced to the workers since
	 * the server started, or since a restore, are due for folding now that
	 * the worker can find the SKU in the cache.
	 */
	if (unfolded > 0)
		PoolNoteFoldDue(GetCurrentTimestamp());
}

/* Sleeps until the entry for key is no longer loading (or gone). */
static void
EntryWaitLoaded(const InvKey *key)
{
	ConditionVariablePrepareToSleep(&inv_cache->loaded);
	for (;;)
	{
		InvEntry   *entry;
		bool		loading = false;

		LWLockAcquire(inv_cache->lock, LW_SHARED);
		entry = hash_search(inv_cache_hash, key, HASH_FIND, NULL);
		if (entry != NULL)
		{
			SpinLockAcquire(&entry->mutex);
			loading = entry->loading;
			SpinLockRelease(&entry->mutex);
		}
		LWLockRelease(inv_cache->lock);
		if (!loading)
			break;
		ConditionVariableSleep(&inv_cache->loaded, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
}

/* Is dbid being restored?  The caller holds inv_cache->lock. */
static bool
RestoringLocked(Oid dbid)
{
	for (int i = 0; i < MAX_RESTORES; i++)
	{
		if (inv_cache->restoring[i] == dbid)
			return true;
	}
	return false;
}

bool
CacheRestoring(Oid dbid)
{
	bool		result;

	if (inv_cache == NULL || pg_atomic_read_u32(&inv_cache->nrestoring) == 0)
		return false;
	LWLockAcquire(inv_cache->lock, LW_SHARED);
	result = RestoringLocked(dbid);
	LWLockRelease(inv_cache->lock);
	return result;
}

/* Is this backend's transaction restoring its database? */
bool
CacheRestoringHere(void)
{
	return inv_cache_restoring_here;
}

/*
 * Returns the loaded entry for key, loading it first if needed.  Returns
 * with inv_cache->lock held in shared mode; the caller releases it.
 */
InvEntry *
CacheEntryGet(const InvKey *key)
{
	SandboxRefuse();
	if (inv_cache == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("inventory shared memory is not initialized"),
				 errhint("Add inventory to shared_preload_libraries in postgresql.conf and restart the server.")));

	for (;;)
	{
		InvEntry   *entry;
		bool		loading;

		LWLockAcquire(inv_cache->lock, LW_SHARED);
		if (pg_atomic_read_u32(&inv_cache->nrestoring) > 0 && RestoringLocked(key->dbid))
		{
			LWLockRelease(inv_cache->lock);
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("the inventory of this database is being restored"),
					 errdetail("A restore (COPY into inventory.sku or inventory.ledger) is in flight%s.",
							   CacheRestoringHere() ? " in this transaction" : ""),
					 errhint(CacheRestoringHere() ?
							 "Make the other changes after the restore has committed." :
							 "Retry when the restore has committed.")));
		}
		entry = hash_search(inv_cache_hash, key, HASH_FIND, NULL);
		if (entry != NULL)
		{
			SpinLockAcquire(&entry->mutex);
			loading = entry->loading;
			SpinLockRelease(&entry->mutex);
			if (!loading)
				return entry;
			LWLockRelease(inv_cache->lock);
			EntryWaitLoaded(key);
			continue;
		}
		LWLockRelease(inv_cache->lock);
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
	InvEntry   *entry = CacheEntryGet(key);
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
	LWLockRelease(inv_cache->lock);

	if (dropping)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("sku \"%s\" is being deleted by another transaction",
						key->sku)));
	return entry;
}

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
		entry = CacheEntryGet(key);
	else
	{
		if (inv_cache == NULL)
			return false;
		LWLockAcquire(inv_cache->lock, LW_SHARED);
		entry = hash_search(inv_cache_hash, key, HASH_FIND, NULL);
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
	LWLockRelease(inv_cache->lock);
	return usable;
}
