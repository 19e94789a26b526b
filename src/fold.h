/*
 * fold.h
 *	  Folding settled movements into the SKUs' base counters.
 */
#ifndef INVENTORY_FOLD_H
#define INVENTORY_FOLD_H

#include "postgres.h"

/* Set while a fold moves effects from ledger rows into sku rows. */
extern bool inv_folding;

extern int64 FoldSettled(char **skus, int nskus, int64 max_rows, bool wait);

#endif							/* INVENTORY_FOLD_H */
