/*
 * cache.h
 *	  The shared-memory hot-counter cache: one entry per SKU, with escrow
 *	  holds.  See the locking contract at the top of cache.c.
 */
#ifndef INVENTORY_CACHE_H
#define INVENTORY_CACHE_H

#include "postgres.h"

#include "datatype/timestamp.h"

#include "inventory.h"
#include "tables/sku_row.h"

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

extern void CacheInit(void);
extern Size CacheShmemSize(void);
extern void CacheShmemInit(void);
extern void CacheMakeKey(InvKey *key, const char *sku, int len);

extern InvEntry *CachePin(const InvKey *key);
extern void CacheView(InvEntry *entry, InvView *view);
extern const InvKey *CacheEntryKey(InvEntry *entry);
extern bool CacheRead(const InvKey *key, bool load, InvView *view);
extern bool CacheRestoring(Oid dbid);
extern bool CacheRestoringHere(void);
extern bool CacheRestoreIncomplete(TimestampTz *since);
extern void CacheRestoreMarkerChanged(void);
extern void CacheMarkerEndXact(void);

#endif							/* INVENTORY_CACHE_H */
