/*
 * rules.h
 *	  Commerce rules of a SKU: a per-buyer limit and a sale window.
 *	  See rules.c.
 */
#ifndef INVENTORY_RULES_H
#define INVENTORY_RULES_H

#include "postgres.h"

#include "datatype/timestamp.h"

#include "tables/sku_row.h"

extern bool RulesAdmitBuyer(text *sku, text *buyer_id, int64 qty,
							int64 limit, int64 *holding, bool *took_lock);
extern bool RulesTryAdmitBuyer(text *sku, text *buyer_id, int64 qty,
							   int64 limit, bool *busy);
extern bool RulesBuyerLockHeld(text *sku, text *buyer_id);
extern void RulesWaitForBuyer(text *sku, text *buyer_id);
extern void RulesLockBuyer(text *sku, text *buyer_id);
extern void RulesReleaseBuyer(text *sku, text *buyer_id);
extern void RulesCheckNewReservation(text *sku, text *buyer_id,
									 const InvRules *rules, TimestampTz now);

#endif							/* INVENTORY_RULES_H */
