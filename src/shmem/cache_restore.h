/*
 * cache_restore.h
 *	  A database's restore mode in the cache.  See cache_restore.c.
 */
#ifndef INVENTORY_CACHE_RESTORE_H
#define INVENTORY_CACHE_RESTORE_H

#include "postgres.h"

extern void CacheBeginRestore(void);
extern void CacheEndRestore(void);

#endif							/* INVENTORY_CACHE_RESTORE_H */
