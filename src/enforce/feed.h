/*
 * feed.h
 *	  The change feed: what the engine decided about reservations, in
 *	  inventory.change, for inventory.changes().  See feed.c.
 */
#ifndef INVENTORY_FEED_H
#define INVENTORY_FEED_H

#include "postgres.h"

#include "tables/ledger_row.h"

/* the database's setting */
extern bool inv_change_feed;

extern void FeedInit(void);
extern void FeedAppend(const LedgerRow *row);
extern void FeedRestored(void);

#endif							/* INVENTORY_FEED_H */
