/*
 * inventory.h
 *	  Limits and settings shared by every part of the extension.
 */
#ifndef INVENTORY_H
#define INVENTORY_H

#include "postgres.h"

/* A SKU is the key of the shared-memory cache, so its length is bounded. */
#define INV_SKU_MAXLEN			63
#define INV_ORDER_ID_MAXLEN		255

/* LWLocks of the "inventory" tranche */
#define INV_LOCK_CACHE			0
#define INV_LOCK_POOL			1
#define INV_NUM_LOCKS			2

/* settings (inventory.*) */
extern int	inv_max_skus;
extern int	inv_default_ttl;	/* seconds */
extern bool inv_worker_enabled;
extern int	inv_expire_interval;	/* milliseconds */
extern int	inv_expire_batch;
extern int	inv_fold_batch;
extern int	inv_max_workers;
extern int	inv_max_databases;
extern int	inv_key_filter_size;	/* kB */

#endif							/* INVENTORY_H */
