/*
 * keyfilter.h
 *	  Which keys are certainly absent from the ledger, in shared memory.
 *	  See keyfilter.c.
 */
#ifndef INVENTORY_KEYFILTER_H
#define INVENTORY_KEYFILTER_H

#include "postgres.h"

extern int	inv_key_filter_size;	/* kB */

extern void KeyFilterInit(void);
extern Size KeyFilterShmemSize(void);
extern void KeyFilterShmemInit(void);

extern void KeyFilterAdd(const char *order_id, int len, int32 batch_id);
extern bool KeyFilterMaybe(const char *order_id, int len, int32 batch_id);
extern void KeyFilterFalsePositive(void);
extern bool KeyFilterReady(void);
extern int64 KeyFilterRebuild(void);

typedef struct KeyFilterInfo
{
	int64		bytes;
	int			hashes;
	double		fill;			/* share of bits set */
	double		false_positive_rate;	/* expected: fill ^ hashes */
	int64		keys_added;
	int64		said_absent;
	int64		said_maybe;
	int64		false_positives;
	bool		ready;			/* in this database */
} KeyFilterInfo;

extern void KeyFilterGetInfo(KeyFilterInfo *info);

#endif							/* INVENTORY_KEYFILTER_H */
