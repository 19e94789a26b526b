/*
 * fold.h
 *	  Folding settled movements into the SKUs' base counters, which the
 *	  workers do and inventory.fold() does on demand.  See fold.c.
 */
#ifndef INVENTORY_FOLD_H
#define INVENTORY_FOLD_H

#include "postgres.h"

extern int64 FoldSettled(char **skus, int nskus, int64 max_rows, bool wait);

#endif							/* INVENTORY_FOLD_H */
