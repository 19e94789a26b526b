/*
 * cache_internal.h
 *	  The layout of the shared-memory cache, for the files that implement
 *	  it: cache.c, escrow.c, cache_restore.c and cache_stats.c.  Everyone
 *	  else sees an InvEntry only as a pointer.  The locking contract is at
 *	  the top of cache.c.
 */
#ifndef INVENTORY_CACHE_INTERNAL_H
#define INVENTORY_CACHE_INTERNAL_H

#include "postgres.h"

#include "port/atomics.h"
#include "storage/condition_variable.h"
#include "storage/lwlock.h"
#include "storage/spin.h"
#include "utils/hsearch.h"

#include "shmem/cache.h"
#include "tables/counters.h"
#include "tables/sku_row.h"

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
	InvSkuStats stats;
	/* LISTEN inventory_stock (cache_notify.c) */
	uint32		notify_seq;		/* bumped at every crossing of zero */
	uint32		notified_seq;	/* the crossing last sent: a note is due when they differ */
	TimestampTz notified_at;	/* when the last notification was sent */
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
	pg_atomic_uint64 marker_gen; /* bumped when a restore marker may change */
	Oid			restoring[MAX_RESTORES];	/* under lock; InvalidOid: free */
	TimestampTz restoring_since[MAX_RESTORES];	/* under lock */
} InvShared;

extern InvShared *inv_cache;
extern HTAB *inv_cache_hash;
extern bool inv_cache_restoring_here;
extern int	inv_max_skus;

extern InvEntry *CacheEntryGet(const InvKey *key);

/* Has a crossing of zero not been sent yet?  The caller holds entry->mutex. */
#define EntryNotifyDue(entry) ((entry)->notify_seq != (entry)->notified_seq)

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

#endif							/* INVENTORY_CACHE_INTERNAL_H */
