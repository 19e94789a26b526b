/*
 * state.c
 *	  inventory.state: a one-byte base type for the reservation lifecycle.
 *
 *	  (none) -> PENDING -> CONFIRMED | CANCELLED | EXPIRED
 *
 * Terminal states absorb: nothing leaves CONFIRMED, CANCELLED or EXPIRED.
 * Input is case-insensitive and ignores surrounding white space; output is
 * the upper-case name.  The binary form is the name, as for enums, so that
 * it does not depend on the internal codes.
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "libpq/pqformat.h"
#include "utils/builtins.h"

#include "types/state.h"
#include "types/state_parse.h"

StaticAssertDecl(INV_PENDING == INV_STATE_FIRST && INV_EXPIRED == INV_STATE_LAST,
				 "state codes must match state_parse.c");

static InvState
CheckedState(Datum d)
{
	InvState	s = DatumGetInvState(d);

	if (s < INV_STATE_FIRST || s > INV_STATE_LAST)
		elog(ERROR, "invalid inventory.state code %d", (int) s);
	return s;
}

const char *
InvStateName(InvState state)
{
	if (state < INV_STATE_FIRST || state > INV_STATE_LAST)
		elog(ERROR, "invalid inventory.state code %d", (int) state);
	return inv_state_names[state];
}

bool
InvStateIsFinal(InvState state)
{
	return state != INV_PENDING;
}

/* PENDING may end in any final state; a final state never changes. */
bool
InvStateCanTransition(InvState from, InvState to)
{
	return from == INV_PENDING && InvStateIsFinal(to);
}

static InvState
ParseState(const char *str, int len)
{
	int			s = inv_state_parse(str, len);

	if (s == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid input value for type inventory.state: \"%.*s\"",
						len, str),
				 errdetail("Valid values are PENDING, CONFIRMED, CANCELLED and EXPIRED, in any case.")));
	return (InvState) s;
}

PG_FUNCTION_INFO_V1(state_in);
Datum
state_in(PG_FUNCTION_ARGS)
{
	char	   *str = PG_GETARG_CSTRING(0);

	PG_RETURN_DATUM(InvStateGetDatum(ParseState(str, strlen(str))));
}

PG_FUNCTION_INFO_V1(state_out);
Datum
state_out(PG_FUNCTION_ARGS)
{
	PG_RETURN_CSTRING(pstrdup(inv_state_names[CheckedState(PG_GETARG_DATUM(0))]));
}

PG_FUNCTION_INFO_V1(state_recv);
Datum
state_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);
	int			nbytes;
	char	   *str;
	InvState	s;

	str = pq_getmsgtext(buf, buf->len - buf->cursor, &nbytes);
	s = ParseState(str, nbytes);
	pfree(str);
	PG_RETURN_DATUM(InvStateGetDatum(s));
}

PG_FUNCTION_INFO_V1(state_send);
Datum
state_send(PG_FUNCTION_ARGS)
{
	const char *name = inv_state_names[CheckedState(PG_GETARG_DATUM(0))];
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendtext(&buf, name, strlen(name));
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

#define STATE_ARGS \
	InvState	a = CheckedState(PG_GETARG_DATUM(0)); \
	InvState	b = CheckedState(PG_GETARG_DATUM(1))

PG_FUNCTION_INFO_V1(state_eq);
Datum
state_eq(PG_FUNCTION_ARGS)
{
	STATE_ARGS;

	PG_RETURN_BOOL(a == b);
}

PG_FUNCTION_INFO_V1(state_ne);
Datum
state_ne(PG_FUNCTION_ARGS)
{
	STATE_ARGS;

	PG_RETURN_BOOL(a != b);
}

PG_FUNCTION_INFO_V1(state_lt);
Datum
state_lt(PG_FUNCTION_ARGS)
{
	STATE_ARGS;

	PG_RETURN_BOOL(a < b);
}

PG_FUNCTION_INFO_V1(state_le);
Datum
state_le(PG_FUNCTION_ARGS)
{
	STATE_ARGS;

	PG_RETURN_BOOL(a <= b);
}

PG_FUNCTION_INFO_V1(state_gt);
Datum
state_gt(PG_FUNCTION_ARGS)
{
	STATE_ARGS;

	PG_RETURN_BOOL(a > b);
}

PG_FUNCTION_INFO_V1(state_ge);
Datum
state_ge(PG_FUNCTION_ARGS)
{
	STATE_ARGS;

	PG_RETURN_BOOL(a >= b);
}

PG_FUNCTION_INFO_V1(state_cmp);
Datum
state_cmp(PG_FUNCTION_ARGS)
{
	STATE_ARGS;

	PG_RETURN_INT32((a > b) - (a < b));
}

PG_FUNCTION_INFO_V1(state_hash);
Datum
state_hash(PG_FUNCTION_ARGS)
{
	PG_RETURN_DATUM(hash_uint32((uint32) CheckedState(PG_GETARG_DATUM(0))));
}

PG_FUNCTION_INFO_V1(state_hash_extended);
Datum
state_hash_extended(PG_FUNCTION_ARGS)
{
	PG_RETURN_DATUM(hash_uint32_extended((uint32) CheckedState(PG_GETARG_DATUM(0)),
										 PG_GETARG_INT64(1)));
}

PG_FUNCTION_INFO_V1(state_can_transition);
Datum
state_can_transition(PG_FUNCTION_ARGS)
{
	STATE_ARGS;

	PG_RETURN_BOOL(InvStateCanTransition(a, b));
}

PG_FUNCTION_INFO_V1(state_is_final);
Datum
state_is_final(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(InvStateIsFinal(CheckedState(PG_GETARG_DATUM(0))));
}

/* inventory.is_final() of version 0.1, until ALTER EXTENSION ... UPDATE */
PG_FUNCTION_INFO_V1(state_is_terminal);
Datum
state_is_terminal(PG_FUNCTION_ARGS)
{
	return state_is_final(fcinfo);
}
