/*
 * cache_notify.h
 *	  "Sold out" and "back on sale" for LISTEN inventory_stock: the
 *	  crossings of zero that commits note in the cache, for a worker to
 *	  send.  See cache_notify.c.
 */
#ifndef INVENTORY_CACHE_NOTIFY_H
#define INVENTORY_CACHE_NOTIFY_H

#include "postgres.h"

#include "datatype/timestamp.h"

#include "shmem/cache.h"

/* settings */
extern bool inv_stock_notifications;
extern int	inv_stock_notify_interval;	/* milliseconds */

/* A SKU's state to send: its committed available, version and rules. */
typedef struct InvStockNote
{
	InvKey		key;
	int64		available;
	int64		version;
	InvRules	rules;
	uint32		seq;			/* of the crossing it answers */
} InvStockNote;

extern void CacheNotifyInit(void);
extern int	CacheTakeNotes(InvStockNote **notes, TimestampTz now,
						   TimestampTz *next);
extern void CacheNotesSent(const InvStockNote *notes, int n, TimestampTz now);

#endif							/* INVENTORY_CACHE_NOTIFY_H */
