/*
 * pending.h
 *	  A transaction's pending changes to SKUs, applied at commit and
 *	  dropped at abort.
 */
#ifndef INVENTORY_PENDING_H
#define INVENTORY_PENDING_H

#include "postgres.h"

#include "shmem/cache.h"
#include "shmem/escrow.h"
#include "tables/counters.h"

extern void PendingInit(void);

extern InvEntry *PendingPin(const InvKey *key);
extern InvAdmit PendingReserve(const InvKey *key, int64 qty,
							   const int64 *expected_version,
							   const InvSale *sale, InvView *view);
extern void PendingAdopt(const InvKey *key, int64 qty);
extern InvAdmit PendingAsk(const InvKey *key, int64 qty, const InvSale *sale,
						   InvView *view);
extern InvAdmit PendingStocktake(const InvKey *key, int64 counted,
								 const int64 *expected_version, int64 *delta,
								 InvView *view);
extern void PendingDropUnbound(const InvKey *key);
extern int	PendingMark(void);
extern void PendingUnpinSince(const InvKey *key, int mark);
extern int	PendingChangesMark(void);
extern void PendingGiveBack(const InvKey *keys, int nkeys, int mark,
							int changes_mark);
/* What one row change does to its SKU, as the trigger registers it. */
typedef struct InvRowChange
{
	InvEffect	delta;			/* change of the counters */
	int			exists;			/* +1 the SKU's row created, -1 deleted */
	int64		unfolded;		/* settled movements added, not folded */
	bool		has_rules;		/* the SKU's rules are set to: */
	InvRules	rules;
	InvCounters counts;			/* for the statistics */
} InvRowChange;

extern void PendingRowChange(const InvKey *key, const InvRowChange *change);
extern bool PendingSkuExists(const InvKey *key);
extern void PendingMarkDropping(const InvKey *key);
extern void PendingCheckBounds(const InvKey *key);
extern bool PendingOwnDelta(const InvKey *key, InvEffect *delta);
extern int64 PendingOwnAvailable(text *sku);

#endif							/* INVENTORY_PENDING_H */
