/*
 * escrow.h
 *	  Escrow admission on the cache's entries.  See escrow.c.
 */
#ifndef INVENTORY_ESCROW_H
#define INVENTORY_ESCROW_H

#include "postgres.h"

#include "datatype/timestamp.h"

#include "shmem/cache.h"
#include "tables/counters.h"
#include "tables/sku_row.h"

typedef enum InvAdmit
{
	INV_ADMIT_OK,
	INV_ADMIT_INSUFFICIENT,
	INV_ADMIT_CONFLICT,
	INV_ADMIT_UNKNOWN,
	INV_ADMIT_NOT_ON_SALE,
	INV_ADMIT_BUYER_REQUIRED
} InvAdmit;

/*
 * A sale asks the SKU's rules too: is it on sale at now, and does it need
 * a buyer?  The per-buyer limit itself is counted in the tables (rules.c).
 */
typedef struct InvSale
{
	TimestampTz now;
	bool		has_buyer;
} InvSale;

/* What a transaction hands back to an entry when it ends. */
typedef struct InvTxnEnd
{
	InvEffect	delta;			/* committed change of the counters */
	int64		hold;			/* holds to return */
	int64		incoming;		/* incoming to return */
	int			exists;			/* +1 created, -1 deleted, 0 unchanged */
	int64		unfolded;		/* settled movements added, not folded */
	bool		was_dropping;	/* this transaction set the dropping flag */
	bool		has_rules;		/* it set the rules: */
	InvRules	rules;
	InvCounters counts;
	bool		notify;			/* note a crossing of zero for LISTEN */
} InvTxnEnd;

extern InvAdmit EscrowAdmit(const InvKey *key, InvEntry **entryp, int64 qty,
							const int64 *expected_version, const InvSale *sale,
							bool hold, InvView *view);
extern InvAdmit EscrowStocktake(InvEntry *entry, bool exists, int64 counted,
								int64 own_on_hand,
								const int64 *expected_version, int64 *delta,
								InvView *view);
extern void EscrowAddIncoming(InvEntry *entry, int64 qty);
extern bool EscrowSetDropping(InvEntry *entry, bool dropping);
extern bool EscrowCheckBounds(InvEntry *entry, const InvEffect *own,
							  int64 own_holds, InvView *view);
extern void EscrowRelease(InvEntry *entry, int64 hold, int64 incoming);
extern bool EscrowEndTxn(InvEntry *entry, const InvTxnEnd *settle);

#endif							/* INVENTORY_ESCROW_H */
