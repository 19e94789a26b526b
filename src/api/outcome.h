/*
 * outcome.h
 *	  What a call of the SQL API answers: one inventory.result row.
 */
#ifndef INVENTORY_OUTCOME_H
#define INVENTORY_OUTCOME_H

#include "postgres.h"

#include "access/htup.h"
#include "fmgr.h"

#include "shmem/cache.h"
#include "shmem/escrow.h"
#include "tables/ledger_row.h"
#include "types/state.h"

typedef struct Outcome
{
	bool		ok;
	const char *status;
	text	   *sku;			/* NULL: none */
	bool		has_qty;
	int64		qty;
	bool		has_state;
	InvState	state;
	bool		has_counters;
	int64		available;
	int64		version;
	bool		has_expires_at;
	TimestampTz expires_at;
} Outcome;

/* What a call on a reservation does to it. */
typedef enum ReservationOp
{
	OP_CONFIRM,
	OP_CANCEL,
	OP_EXTEND
} ReservationOp;

extern void OutcomeInit(Outcome *o, text *sku, int64 qty);
extern HeapTuple OutcomeTuple(const Outcome *o);
extern Datum OutcomeDatum(const Outcome *o);
extern void OutcomeSetCounters(Outcome *o, const InvView *view);
extern void OutcomeReadCounters(Outcome *o);
extern void OutcomeSetMovement(Outcome *o, const LedgerRow *m);
extern void OutcomeReplay(text *order_id, int32 batch_id, const LedgerRow *m,
						  InvKind kind, text *sku, int64 qty, text *buyer_id,
						  Outcome *o);
extern void OutcomeSettled(ReservationOp op, InvState state, Outcome *o);
extern const char *RefusalStatus(InvAdmit admit);
extern void KeyReuseError(text *order_id, int32 batch_id, const LedgerRow *m);

#endif							/* INVENTORY_OUTCOME_H */
