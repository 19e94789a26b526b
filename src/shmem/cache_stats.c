/*
 * cache_stats.c
 *	  Copies of the cache's entries for those who read them all: the
 *	  statistics views (api/stats.c), verify(), and the worker looking for
 *	  SKUs to fold.  Under the locking contract at the top of cache.c.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/hsearch.h"

#include "shmem/cache_internal.h"
#include "shmem/cache_stats.h"
#include "tables/catalog.h"

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

	if (inv_cache == NULL)
	{
		*count = 0;
		return NULL;
	}

	LWLockAcquire(inv_cache->lock, LW_SHARED);
	copies = palloc(Max(1, hash_get_num_entries(inv_cache_hash)) * sizeof(InvEntryCopy));
	hash_seq_init(&status, inv_cache_hash);
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
	LWLockRelease(inv_cache->lock);
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

	if (inv_cache == NULL || max <= 0)
		return 0;
	LWLockAcquire(inv_cache->lock, LW_SHARED);
	hash_seq_init(&status, inv_cache_hash);
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
	LWLockRelease(inv_cache->lock);
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

	if (inv_cache == NULL)
		return;
	LWLockAcquire(inv_cache->lock, LW_SHARED);
	entry = hash_search(inv_cache_hash, key, HASH_FIND, NULL);
	if (entry != NULL)
	{
		SpinLockAcquire(&entry->mutex);
		if (entry->unfolded > 0)
			entry->unfolded--;
		SpinLockRelease(&entry->mutex);
	}
	LWLockRelease(inv_cache->lock);
}

void
CacheResetStats(void)
{
	Oid			relid = InvGetCatalog()->ledger_rel;
	HASH_SEQ_STATUS status;
	InvEntry   *entry;

	if (inv_cache == NULL)
		return;
	LWLockAcquire(inv_cache->lock, LW_SHARED);
	hash_seq_init(&status, inv_cache_hash);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (!InThisDatabase(&entry->key, relid))
			continue;
		SpinLockAcquire(&entry->mutex);
		memset(&entry->stats, 0, sizeof(InvCounters));
		SpinLockRelease(&entry->mutex);
	}
	LWLockRelease(inv_cache->lock);
}

void
CacheGetInfo(InvCacheInfo *info)
{
	info->capacity = inv_max_skus;
	info->bytes_per_entry = hash_estimate_size(inv_max_skus, sizeof(InvEntry)) / inv_max_skus;
	info->entries = 0;
	info->loads = 0;
	info->evictions = 0;
	if (inv_cache == NULL)
		return;
	LWLockAcquire(inv_cache->lock, LW_SHARED);
	info->entries = hash_get_num_entries(inv_cache_hash);
	LWLockRelease(inv_cache->lock);
	info->loads = pg_atomic_read_u64(&inv_cache->loads);
	info->evictions = pg_atomic_read_u64(&inv_cache->evictions);
}
