/*
 * args.h
 *	  Arguments of the SQL API: checked once, with the same errors
 *	  everywhere.
 */
#ifndef INVENTORY_ARGS_H
#define INVENTORY_ARGS_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "fmgr.h"

extern void ArgCheckWritable(const char *call);
extern char *ArgDatabaseNameColumn(Oid dboid);
extern text *ArgText(FunctionCallInfo fcinfo, int n, const char *name);
extern text *ArgSku(FunctionCallInfo fcinfo, int n);
extern text *ArgOrderId(FunctionCallInfo fcinfo, int n);
extern text *ArgBuyerId(FunctionCallInfo fcinfo, int n);
extern int32 ArgBatchId(FunctionCallInfo fcinfo, int n);
extern int64 ArgQuantity(FunctionCallInfo fcinfo, int n, const char *name,
						 bool allow_zero);
extern TimestampTz ArgExpiresAt(FunctionCallInfo fcinfo, int n, TimestampTz now);
extern int64 ArgMaxRows(FunctionCallInfo fcinfo, int n);
extern int	ArgTextArray(FunctionCallInfo fcinfo, int n, const char *name,
						 void (*check) (const char *, int), bool allow_nulls,
						 text ***items);
extern int	ArgBatchIdArray(FunctionCallInfo fcinfo, int n, const char *name,
							int32 **items);
extern int	ArgQuantityArray(FunctionCallInfo fcinfo, int n, const char *name,
							 int64 **items);

#endif							/* INVENTORY_ARGS_H */
