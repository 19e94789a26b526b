/*
 * stmt.h
 *	  Running the extension's own SQL.
 */
#ifndef INVENTORY_STMT_H
#define INVENTORY_STMT_H

#include "postgres.h"

#include "executor/spi.h"

/* A statement of the extension, prepared once per backend and schema. */
typedef struct InvStmt
{
	const char *sql;
	int			nargs;
	Oid			argtypes[5];
	SPIPlanPtr	plan;			/* kept for the backend's life */
	uint64		epoch;			/* catalog epoch the plan was made in */
	int			options;		/* CURSOR_OPT_* for SPI_prepare_cursor */
} InvStmt;

extern int	InvSpiConnect(void);
extern void InvSpiFinish(int level);
extern uint64 InvStmtRun(InvStmt *stmt, Datum *values, const char *nulls,
						 bool latest, long count);
extern uint64 InvStmtWriteLatest(InvStmt *stmt, Datum *values, const char *nulls);
extern void InvStmtRunAsOwner(InvStmt *stmt, Datum *values);
extern void InvSqlRunAsOwner(const char *const *sql, int n);

#endif							/* INVENTORY_STMT_H */
