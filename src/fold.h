/*
 * fold.h
 *	  Folding settled movements into the SKUs' base counters.
 */
#ifndef INVENTORY_FOLD_H
#define INVENTORY_FOLD_H

#include "postgres.h"

extern int64 FoldSettled(int64 max_rows);

#endif							/* INVENTORY_FOLD_H */
