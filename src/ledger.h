/*
 * ledger.h
 *	  The rules of the ledger's data: kinds of movement, what each movement
 *	  contributes to its SKU's counters, valid keys, and lookups by key.
 */
#ifndef INVENTORY_LEDGER_H
#define INVENTORY_LEDGER_H

#include "postgres.h"

#include "datatype/timestamp.h"

#include "inventory.h"
#include "state.h"

typedef enum InvKind
{
	INV_KIND_RESERVE = 1,		/* a reservation, with a state */
	INV_KIND_RESTOCK,			/* units added */
	INV_KIND_ADJUST				/* a stocktake: qty is the change of on_hand */
} InvKind;

/* What a row, or a change of a row, adds to its SKU's counters. */
typedef struct InvEffect
{
	int64		on_hand;
	int64		reserved;
	int64		version;
} InvEffect;

static inline void
InvEffectAdd(InvEffect *dst, const InvEffect *src)
{
	dst->on_hand += src->on_hand;
	dst->reserved += src->reserved;
	dst->version += src->version;
}

/* A movement found by its (order_id, batch_id) key. */
typedef struct LedgerMovement
{
	InvKind		kind;
	char		sku[INV_SKU_MAXLEN + 1];
	int64		qty;
	bool		has_counted;
	int64		counted;
	bool		has_state;
	InvState	state;
	bool		has_expires_at;
	TimestampTz expires_at;
} LedgerMovement;

extern InvKind LedgerParseKind(const char *str, int len);
extern const char *LedgerKindName(InvKind kind);
extern void LedgerEffect(InvKind kind, bool has_state, InvState state,
						 int64 qty, InvEffect *effect);

extern void LedgerCheckSku(const char *sku, int len);
extern void LedgerCheckOrderId(const char *order_id, int len);

/* A movement to write. */
typedef struct LedgerNew
{
	text	   *order_id;
	int32		batch_id;
	InvKind		kind;
	text	   *sku;
	int64		qty;
	bool		has_counted;
	int64		counted;
	bool		has_expires_at;
	TimestampTz expires_at;
} LedgerNew;

extern void LedgerLockKey(const char *order_id, int len, int32 batch_id);
extern bool LedgerFindMovement(const char *order_id, int len, int32 batch_id,
							   LedgerMovement *movement);
extern void LedgerInsert(const LedgerNew *movement);
extern bool LedgerReadTruth(const char *sku, InvEffect *truth, int64 *unfolded);

#endif							/* INVENTORY_LEDGER_H */
