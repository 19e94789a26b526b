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

/* settings (inventory.*) */
extern int	inv_max_skus;
extern int	inv_default_ttl;	/* seconds */

#endif							/* INVENTORY_H */
