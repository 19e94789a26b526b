/*
 * outcome.h
 *	  What a call of the SQL API answers: one inventory.result row.
 */
#ifndef INVENTORY_OUTCOME_H
#define INVENTORY_OUTCOME_H

#include "postgres.h"

#include "access/htup.h"
#include "fmgr.h"
#include "nodes/execnodes.h"

#include "shmem/cache.h"
#include "shmem/escrow.h"
#include "shmem/metrics.h"
#include "tables/ledger_row.h"
#include "types/state.h"

typedef struct Outcome
{
	bool		ok;
	InvStatus	status;
	text	   *sku;			/* NULL: none */
	bool		has_qty;
	int64		qty;
	bool		has_state;
	InvState	state;
	bool		has_counters;
	int64		available;
	bool		takeable_only;	/* available: what a reserve can take now */
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
/*
 * The rows of a call that answers a set of them; the statuses are counted
 * as told (shmem/metrics.c) once the call has put them all.
 */
typedef struct OutcomeSet
{
	InvCall		call;
	ReturnSetInfo *rsinfo;
	int64		told[INV_NUM_STATUSES];
} OutcomeSet;

extern Datum OutcomeAnswer(InvCall call, const Outcome *o);
extern void OutcomeSetInit(OutcomeSet *set, InvCall call, FunctionCallInfo fcinfo);
extern void OutcomePut(OutcomeSet *set, const Outcome *o);
extern void OutcomeSetDone(OutcomeSet *set);
extern void OutcomeSetCounters(Outcome *o, const InvView *view);
extern void OutcomeReadCounters(Outcome *o);
extern void OutcomeSetMovement(Outcome *o, const LedgerRow *m);
extern void OutcomeReplay(text *order_id, int32 batch_id, const LedgerRow *m,
						  InvKind kind, text *sku, int64 qty, text *buyer_id,
						  Outcome *o);
extern void OutcomeSettled(ReservationOp op, InvState state, Outcome *o);
extern InvStatus OutcomeRefusalStatus(InvAdmit admit);
extern void OutcomeKeyReuseError(text *order_id, int32 batch_id, const LedgerRow *m);

#endif							/* INVENTORY_OUTCOME_H */
