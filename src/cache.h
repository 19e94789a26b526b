/*
 * cache.h
 *	  The shared-memory hot-counter cache: one entry per SKU, with escrow
 *	  holds.  See the locking contract at the top of cache.c.
 */
#ifndef INVENTORY_CACHE_H
#define INVENTORY_CACHE_H

#include "postgres.h"

#include "datatype/timestamp.h"

#include "counters.h"
#include "inventory.h"
#include "rules.h"

/* Entries of every database share one table. */
typedef struct InvKey
{
	Oid			dbid;
	Oid			relid;			/* inventory.ledger: a re-created extension
								 * starts with fresh entries */
	char		sku[INV_SKU_MAXLEN + 1];	/* zero-padded */
} InvKey;

typedef struct InvEntry InvEntry;

/* A consistent copy of an entry's counters. */
typedef struct InvView
{
	bool		exists;
	int64		on_hand;		/* committed */
	int64		reserved;		/* committed */
	int64		version;		/* committed */
	int64		holds;			/* in flight: decreases of available */
	int64		incoming;		/* in flight: increases of on_hand */
	int64		unfolded;		/* settled movements not folded yet */
	int32		pins;			/* transactions with changes in flight */
	uint64		gen;			/* bumped at every pin and unpin */
	InvRules	rules;			/* committed */
} InvView;

#define InvViewAvailable(v) ((v)->on_hand - (v)->reserved - (v)->holds)

typedef enum InvAdmit
{
	INV_ADMIT_OK,
	INV_ADMIT_INSUFFICIENT,
	INV_ADMIT_CONFLICT,
	INV_ADMIT_UNKNOWN,
	INV_ADMIT_NOT_ON_SALE,
	INV_ADMIT_BUYER_REQUIRED
} InvAdmit;

/*
 * A sale asks the SKU's rules too: is it on sale at now, and does it need
 * a buyer?  The per-buyer limit itself is counted in the tables (rules.c).
 */
typedef struct InvSale
{
	TimestampTz now;
	bool		has_buyer;
} InvSale;

/* What a transaction hands back to an entry when it ends. */
typedef struct InvTxnEnd
{
	InvEffect	delta;			/* committed change of the counters */
	int64		hold;			/* holds to return */
	int64		incoming;		/* incoming to return */
	int			exists;			/* +1 created, -1 deleted, 0 unchanged */
	int64		unfolded;		/* settled movements added, not folded */
	bool		was_dropping;	/* this transaction set the dropping flag */
	bool		has_rules;		/* it set the rules: */
	InvRules	rules;
	InvCounters counts;
} InvTxnEnd;

extern Size CacheShmemSize(void);
extern void CacheShmemInit(void);
extern void CacheMakeKey(InvKey *key, const char *sku, int len);

extern InvEntry *CachePin(const InvKey *key);
extern InvAdmit CacheAdmit(const InvKey *key, InvEntry **entryp, int64 qty,
						   const int64 *expected_version, const InvSale *sale,
						   bool hold, InvView *view);
extern InvAdmit CacheStocktake(InvEntry *entry, int64 counted,
							   int64 own_on_hand,
							   const int64 *expected_version, int64 *delta,
							   InvView *view);
extern void CacheAddIncoming(InvEntry *entry, int64 qty);
extern bool CacheSetDropping(InvEntry *entry, bool dropping);
extern bool CacheCheckBounds(InvEntry *entry, const InvEffect *own,
							 int64 own_holds, InvView *view);
extern void CacheBeginRestore(void);
extern void CacheEndRestore(void);
extern bool CacheRestoring(Oid dbid);
extern bool CacheRestoringHere(void);
extern void CacheRelease(InvEntry *entry, int64 hold, int64 incoming);
extern void CacheEndTxn(InvEntry *entry, const InvTxnEnd *settle);
extern void CacheView(InvEntry *entry, InvView *view);
extern const InvKey *CacheEntryKey(InvEntry *entry);
extern bool CacheRead(const InvKey *key, bool load, InvView *view);

/* this database's entries, for the statistics view and verify() */
typedef struct InvEntryCopy
{
	char		sku[INV_SKU_MAXLEN + 1];
	InvView		view;
	InvCounters stats;
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

#endif							/* INVENTORY_CACHE_H */
