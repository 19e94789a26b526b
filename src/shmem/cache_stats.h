/*
 * cache_stats.h
 *	  Copies of the cache's entries, for the views, verify() and the fold.
 *	  See cache_stats.c.
 */
#ifndef INVENTORY_CACHE_STATS_H
#define INVENTORY_CACHE_STATS_H

#include "postgres.h"

#include "datatype/timestamp.h"

#include "inventory.h"
#include "shmem/cache.h"
#include "tables/counters.h"

/* this database's entries, for the statistics view and verify() */
typedef struct InvEntryCopy
{
	char		sku[INV_SKU_MAXLEN + 1];
	InvView		view;
	InvSkuStats stats;
	TimestampTz loaded_at;
	TimestampTz last_used;
} InvEntryCopy;

extern InvEntryCopy *CacheCopyEntries(int *count);
extern void CacheResetStats(void);
extern int	CacheSkusToFold(char **skus, int max);
extern void CacheNoteFolded(const InvKey *key);

typedef struct InvCacheInfo
{
	int64		capacity;
	int64		entries;
	int64		bytes_per_entry;
	int64		loads;
	int64		evictions;
} InvCacheInfo;

extern void CacheGetInfo(InvCacheInfo *info);

/* every database's entries, summed, with its hottest SKUs */
typedef struct InvHotSku
{
	char		sku[INV_SKU_MAXLEN + 1];
	InvView		view;
	InvSkuStats stats;
	int64		demand;			/* reserves committed and refused since loaded */
} InvHotSku;

typedef struct InvDbCache
{
	Oid			dboid;
	int64		entries;
	int64		holds;			/* units held by transactions in flight */
	int64		pins;			/* transactions with changes in flight */
	int64		unfolded;
	TimestampTz restoring_since;	/* 0: not restoring */
	int			nhot;
	InvHotSku  *hot;			/* up to the top asked for, hottest first */
} InvDbCache;

extern InvDbCache *CacheByDatabase(int top, int *count);

#endif							/* INVENTORY_CACHE_STATS_H */
