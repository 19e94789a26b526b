/*
 * publication.h
 *	  Publications that would stop the extension's writes.  See
 *	  publication.c.
 */
#ifndef INVENTORY_PUBLICATION_H
#define INVENTORY_PUBLICATION_H

#include "postgres.h"

#include "nodes/pg_list.h"

extern bool PublicationsBreakTables(void);
extern void PublicationsCheck(bool were_broken);
extern void PublicationsCheckDropIndex(List *objects);

#endif							/* INVENTORY_PUBLICATION_H */
