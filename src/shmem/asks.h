/*
 * asks.h
 *	  Asks of a reconciler that were ended by force, kept for the next
 *	  round of their database.  See asks.c.
 */
#ifndef INVENTORY_ASKS_H
#define INVENTORY_ASKS_H

#include "postgres.h"

#include "datatype/timestamp.h"

#include "inventory.h"

typedef struct AskEnded
{
	Oid			dboid;
	int32		batch_id;
	TimestampTz started_at;
	bool		overran;		/* ended for running past its timeout */
	char		order_id[INV_ORDER_ID_MAXLEN + 1];
} AskEnded;

/* ended asks kept at once; past that the oldest is forgotten */
#define ASKS_ENDED_MAX	32

extern Size AsksShmemSize(void);
extern void AsksShmemInit(void);
extern void AsksNoteEnded(const AskEnded *ask);
extern int	AsksTakeEnded(Oid dboid, AskEnded *asks, int max);

#endif							/* INVENTORY_ASKS_H */
