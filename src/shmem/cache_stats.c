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
		memset(&entry->stats, 0, sizeof(entry->stats));
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

/* The database's figures in dbs[0..*n), added at the end if missing. */
static InvDbCache *
DbFigures(InvDbCache **dbs, int *n, int *size, Oid dboid, int top)
{
	for (int i = 0; i < *n; i++)
		if ((*dbs)[i].dboid == dboid)
			return &(*dbs)[i];
	if (*n == *size)
	{
		*size *= 2;
		*dbs = repalloc(*dbs, *size * sizeof(InvDbCache));
	}
	memset(&(*dbs)[*n], 0, sizeof(InvDbCache));
	(*dbs)[*n].dboid = dboid;
	(*dbs)[*n].hot = palloc(Max(top, 1) * sizeof(InvHotSku));
	return &(*dbs)[(*n)++];
}

/* Keeps the entry among the database's top hottest, unordered. */
static void
ConsiderHot(InvDbCache *db, int top, const InvHotSku *candidate)
{
	int			coldest = 0;

	if (candidate->demand <= 0 || top <= 0)
		return;
	if (db->nhot < top)
	{
		db->hot[db->nhot++] = *candidate;
		return;
	}
	for (int i = 1; i < db->nhot; i++)
		if (db->hot[i].demand < db->hot[coldest].demand)
			coldest = i;
	if (candidate->demand > db->hot[coldest].demand)
		db->hot[coldest] = *candidate;
}

static int
HotterFirst(const void *a, const void *b)
{
	const InvHotSku *x = a;
	const InvHotSku *y = b;

	if (x->demand != y->demand)
		return x->demand > y->demand ? -1 : 1;
	return strcmp(x->sku, y->sku);
}

/*
 * Every database's entries summed, and its top hottest SKUs: those asked
 * for the most units since they were loaded.  One pass over the cache, so
 * that a monitoring tool reads a catalogue of any size at the cost of its
 * entries, and gets a bounded number of rows.
 */
InvDbCache *
CacheByDatabase(int top, int *count)
{
	HASH_SEQ_STATUS status;
	InvEntry   *entry;
	int			size = 4;
	int			n = 0;
	InvDbCache *dbs;

	*count = 0;
	if (inv_cache == NULL)
		return NULL;
	dbs = palloc(size * sizeof(InvDbCache));
	LWLockAcquire(inv_cache->lock, LW_SHARED);
	hash_seq_init(&status, inv_cache_hash);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		InvDbCache *db = DbFigures(&dbs, &n, &size, entry->key.dbid, top);
		InvHotSku	h;
		bool		keep;

		SpinLockAcquire(&entry->mutex);
		keep = !entry->loading && entry->exists;
		FillView(entry, &h.view);
		h.stats = entry->stats;
		SpinLockRelease(&entry->mutex);
		if (!keep)
			continue;
		db->entries++;
		db->holds += h.view.holds;
		db->pins += h.view.pins;
		db->unfolded += h.view.unfolded;
		memcpy(h.sku, entry->key.sku, sizeof(h.sku));
		h.demand = h.stats.reserves + h.stats.rejects;
		ConsiderHot(db, top, &h);
	}
	for (int i = 0; i < MAX_RESTORES; i++)
		if (OidIsValid(inv_cache->restoring[i]))
			DbFigures(&dbs, &n, &size, inv_cache->restoring[i], top)->restoring_since =
				inv_cache->restoring_since[i];
	LWLockRelease(inv_cache->lock);

	for (int i = 0; i < n; i++)
		qsort(dbs[i].hot, dbs[i].nhot, sizeof(InvHotSku), HotterFirst);
	*count = n;
	return dbs;
}
