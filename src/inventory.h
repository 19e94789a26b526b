/*
 * inventory.h
 *	  Limits shared by every layer of the extension.  Settings are not here:
 *	  each module defines and registers its own (see init.c).
 */
#ifndef INVENTORY_H
#define INVENTORY_H

/* A SKU is the key of the shared-memory cache, so its length is bounded. */
#define INV_SKU_MAXLEN			63
#define INV_ORDER_ID_MAXLEN		255

/* LWLocks of the "inventory" tranche */
#define INV_LOCK_CACHE			0
#define INV_LOCK_POOL			1
#define INV_LOCK_METRICS		2
#define INV_NUM_LOCKS			3

#endif							/* INVENTORY_H */
