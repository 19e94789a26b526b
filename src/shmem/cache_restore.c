/*
 * cache_restore.c
 *	  A database's restore mode: while a restore (enforce/restore.c) writes
 *	  the tables of a database, nothing of that database is cached.
 *
 * See "Restores" at the top of cache.c: a restore starts only when no entry
 * of its database is pinned; it then removes the database's entries and
 * lists the database in inv_cache->restoring, under inv_cache->lock held
 * exclusively.  While it is listed nothing of the database is loaded, pinned
 * or admitted.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/timestamp.h"

#include "shmem/cache_internal.h"
#include "shmem/cache_restore.h"

/*
 * Removes every entry of this database; the caller holds inv_cache->lock
 * exclusively.
 */
static void
RemoveDatabaseEntries(void)
{
	HASH_SEQ_STATUS status;
	InvEntry   *entry;

	hash_seq_init(&status, inv_cache_hash);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (entry->key.dbid == MyDatabaseId)
			hash_search(inv_cache_hash, &entry->key, HASH_REMOVE, NULL);
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

	if (inv_cache_restoring_here)
		return;
	LWLockAcquire(inv_cache->lock, LW_EXCLUSIVE);
	hash_seq_init(&status, inv_cache_hash);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (entry->key.dbid == MyDatabaseId && (entry->pins > 0 || entry->loading))
			busy++;
	}
	for (int i = 0; i < MAX_RESTORES && slot < 0; i++)
	{
		if (!OidIsValid(inv_cache->restoring[i]))
			slot = i;
	}
	if (busy == 0 && slot >= 0)
	{
		RemoveDatabaseEntries();
		inv_cache->restoring[slot] = MyDatabaseId;
		inv_cache->restoring_since[slot] = GetCurrentTimestamp();
		pg_atomic_fetch_add_u32(&inv_cache->nrestoring, 1);
		inv_cache_restoring_here = true;
	}
	LWLockRelease(inv_cache->lock);

	if (busy > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("cannot restore while other transactions change inventory in this database"),
				 errdetail_plural("%d SKU has changes in flight.",
								  "%d SKUs have changes in flight.",
								  busy, busy),
				 errhint("Restore into a database where nothing is being sold, or retry.")));
	if (slot < 0)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many databases are being restored at once"),
				 errdetail("At most %d restores run at the same time.", MAX_RESTORES),
				 errhint("Retry when one of them has finished.")));
}

/*
 * A transaction ends (commit or abort); must not fail.  Ends its restore
 * mode, and tells every backend to read the restore markers again if it
 * may have changed one (cache.c, "Restores").
 */
void
CacheEndRestore(void)
{
	CacheMarkerEndXact();
	if (!inv_cache_restoring_here)
		return;
	LWLockAcquire(inv_cache->lock, LW_EXCLUSIVE);
	for (int i = 0; i < MAX_RESTORES; i++)
	{
		if (inv_cache->restoring[i] == MyDatabaseId)
		{
			inv_cache->restoring[i] = InvalidOid;
			pg_atomic_fetch_sub_u32(&inv_cache->nrestoring, 1);
			break;
		}
	}
	LWLockRelease(inv_cache->lock);
	inv_cache_restoring_here = false;
}

