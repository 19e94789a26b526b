/*
 * markers.h
 *	  Markers in the logical decoding stream.  See markers.c.
 */
#ifndef INVENTORY_MARKERS_H
#define INVENTORY_MARKERS_H

#include "postgres.h"

extern void MarkFoldBegin(void);
extern void MarkFoldEnd(int64 rows, int64 skus);
extern void MarkRestoreBegin(Oid relid);
extern void MarkRestoreEnd(Oid relid, int64 rows);

#endif							/* INVENTORY_MARKERS_H */
