/*
 * args.c
 *	  Arguments of the SQL API.  Misuse -- a NULL where a value is needed,
 *	  a quantity that is not positive, a key too long -- is an ERROR with
 *	  its SQLSTATE, the same for every call.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "tcop/utility.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "api/args.h"
#include "inventory.h"
#include "tables/ledger_row.h"
#include "tables/sandbox.h"

void
ArgCheckWritable(const char *call)
{
	SandboxRefuse();
	PreventCommandIfReadOnly(call);
	PreventCommandDuringRecovery(call);
}

/*
 * A database's name for a column of type name, in a buffer of the type's
 * whole width (a tuplestore copies that many bytes); NULL when the
 * database is gone.
 */
char *
ArgDatabaseNameColumn(Oid dboid)
{
	char	   *name = get_database_name(dboid);
	char	   *buf;

	if (name == NULL)
		return NULL;
	buf = palloc0(NAMEDATALEN);
	strlcpy(buf, name, NAMEDATALEN);
	pfree(name);
	return buf;
}

text *
ArgText(FunctionCallInfo fcinfo, int n, const char *name)
{
	if (PG_ARGISNULL(n))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", name)));
	return PG_GETARG_TEXT_PP(n);
}

text *
ArgSku(FunctionCallInfo fcinfo, int n)
{
	text	   *t = ArgText(fcinfo, n, "sku");

	LedgerCheckSku(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
	return t;
}

text *
ArgOrderId(FunctionCallInfo fcinfo, int n)
{
	text	   *t = ArgText(fcinfo, n, "order_id");

	LedgerCheckOrderId(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
	return t;
}

int32
ArgBatchId(FunctionCallInfo fcinfo, int n)
{
	if (PG_ARGISNULL(n))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("batch_id must not be null")));
	return PG_GETARG_INT32(n);
}

int64
ArgQuantity(FunctionCallInfo fcinfo, int n, const char *name, bool allow_zero)
{
	int64		v;

	if (PG_ARGISNULL(n))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", name)));
	v = PG_GETARG_INT64(n);
	if (v < 0 && allow_zero)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be negative", name),
				 errdetail("%s is %lld.", name, (long long) v)));
	if (v <= 0 && !allow_zero)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be positive", name),
				 errdetail("%s is %lld.", name, (long long) v)));
	return v;
}

/* now + ttl, where ttl must be positive; NULL means inventory.default_ttl */
TimestampTz
ArgExpiresAt(FunctionCallInfo fcinfo, int n, TimestampTz now)
{
	TimestampTz expires;

	if (PG_ARGISNULL(n))
		return LedgerDefaultExpiresAt(now);

	expires = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
													  TimestampTzGetDatum(now),
													  PG_GETARG_DATUM(n)));
	if (expires <= now)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ttl must be positive"),
				 errdetail("ttl is %s.",
						   DatumGetCString(DirectFunctionCall1(interval_out,
															   PG_GETARG_DATUM(n))))));
	return expires;
}

/* A buyer_id, or NULL when the argument is NULL (or the call has none). */
text *
ArgBuyerId(FunctionCallInfo fcinfo, int n)
{
	text	   *t;

	if (PG_NARGS() <= n || PG_ARGISNULL(n))
		return NULL;
	t = PG_GETARG_TEXT_PP(n);
	LedgerCheckBuyerId(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
	return t;
}

/* max_rows of expire() and fold(): NULL, all, is -1 */
int64
ArgMaxRows(FunctionCallInfo fcinfo, int n)
{
	int32		v;

	if (PG_ARGISNULL(n))
		return -1;
	v = PG_GETARG_INT32(n);
	if (v < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_rows must not be negative"),
				 errdetail("max_rows is %d.", v),
				 errhint("Pass NULL for no limit.")));
	return v;
}

/* The elements of a one-dimensional array argument without NULLs. */
static void
ArgArray(FunctionCallInfo fcinfo, int n, const char *name, Oid elemtype,
		 Datum **elems, bool **nullsp, int *nelems)
{
	ArrayType  *arr;
	bool	   *nulls;
	int16		typlen;
	bool		typbyval;
	char		typalign;

	if (PG_ARGISNULL(n))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", name)));
	arr = PG_GETARG_ARRAYTYPE_P(n);
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s must be a one-dimensional array", name)));
	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(arr, elemtype, typlen, typbyval, typalign,
					  elems, &nulls, nelems);
	if (nullsp != NULL)
	{
		*nullsp = nulls;
		return;
	}
	for (int i = 0; i < *nelems; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s must not contain nulls", name),
					 errdetail("Element %d is null.", i + 1)));
	}
}

/*
 * A text[] of keys (skus, order_ids, buyer_ids), each checked by check.
 * With allow_nulls, a NULL array or element is a NULL item (and a NULL
 * array has no elements: returns -1); else an error.  Returns the number
 * of elements.
 */
int
ArgTextArray(FunctionCallInfo fcinfo, int n, const char *name,
			 void (*check) (const char *, int), bool allow_nulls,
			 text ***items)
{
	Datum	   *elems;
	bool	   *nulls = NULL;
	int			nelems;

	if (allow_nulls && (PG_NARGS() <= n || PG_ARGISNULL(n)))
	{
		*items = NULL;
		return -1;
	}
	ArgArray(fcinfo, n, name, TEXTOID, &elems, allow_nulls ? &nulls : NULL, &nelems);
	*items = palloc(Max(1, nelems) * sizeof(text *));
	for (int i = 0; i < nelems; i++)
	{
		text	   *t = NULL;

		if (nulls == NULL || !nulls[i])
		{
			t = DatumGetTextPP(elems[i]);
			check(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
		}
		(*items)[i] = t;
	}
	return nelems;
}

static int
CompareInt32(const void *a, const void *b)
{
	int32		x = *(const int32 *) a;
	int32		y = *(const int32 *) b;

	return (x > y) - (x < y);
}

/*
 * batch_ids[]: the batch ids of a cart's lines, without NULLs and each once.
 * A NULL or absent argument is no array: returns -1.  Else returns the
 * number of elements.
 */
int
ArgBatchIdArray(FunctionCallInfo fcinfo, int n, const char *name, int32 **items)
{
	Datum	   *elems;
	int			nelems;
	int32	   *sorted;

	if (PG_NARGS() <= n || PG_ARGISNULL(n))
	{
		*items = NULL;
		return -1;
	}
	ArgArray(fcinfo, n, name, INT4OID, &elems, NULL, &nelems);
	*items = palloc(Max(1, nelems) * sizeof(int32));
	sorted = palloc(Max(1, nelems) * sizeof(int32));
	for (int i = 0; i < nelems; i++)
		(*items)[i] = sorted[i] = DatumGetInt32(elems[i]);
	qsort(sorted, nelems, sizeof(int32), CompareInt32);
	for (int i = 1; i < nelems; i++)
	{
		if (sorted[i] == sorted[i - 1])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("every element of %s must be distinct", name),
					 errdetail("%d appears more than once.", sorted[i])));
	}
	pfree(sorted);
	return nelems;
}

/* qtys[]: each positive.  Returns the number of elements. */
int
ArgQuantityArray(FunctionCallInfo fcinfo, int n, const char *name,
				 int64 **items)
{
	Datum	   *elems;
	int			nelems;

	ArgArray(fcinfo, n, name, INT8OID, &elems, NULL, &nelems);
	*items = palloc(Max(1, nelems) * sizeof(int64));
	for (int i = 0; i < nelems; i++)
	{
		int64		v = DatumGetInt64(elems[i]);

		if (v <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("every element of %s must be positive", name),
					 errdetail("Element %d is %lld.", i + 1, (long long) v)));
		(*items)[i] = v;
	}
	return nelems;
}
